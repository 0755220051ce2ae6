#!/usr/bin/env bash
# Set up what is missing, then run gemmlab.  Usage:
#   bash run.sh ladder [ARGS...]   # the main job on a GPU: every stage vs cuBLAS (gemmlab ladder)
#   bash run.sh test   [ARGS...]   # the tests (GPU tests run only where there is a GPU)
#   bash run.sh gemmlab ARGS...    # any other gemmlab command
# Uses the current python3 as it is when it already has what gemmlab needs (e.g. the H200 machine,
# which has no network); otherwise creates .venv and installs gemmlab with its dependencies.
set -euo pipefail
cd "$(dirname "$0")"
export PYTHONUNBUFFERED=1 PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"

PY=${PYTHON:-python3}
have_deps() {
    "$1" - <<'PY' 2>/dev/null
import importlib.metadata as md, shutil, sys
import numpy, pytest, hypothesis
from cuda.core import Program  # noqa: F401
from cuda.bindings import nvrtc
major = int(md.version("cuda-core").split(".")[0])
assert 1 <= major < 2 and nvrtc.nvrtcVersion()[0] == 0
from gemmlab.analysis.sass import tool
tool("cuobjdump")
PY
}
if ! have_deps "$PY"; then
    if [ ! -x .venv/bin/python ] || ! have_deps .venv/bin/python; then
        echo "run.sh: installing gemmlab and its dependencies into .venv" >&2
        "$PY" -m venv .venv
        .venv/bin/python -m pip install -q --upgrade pip
        .venv/bin/python -m pip install -q -e ".[dev]"
    fi
    PY=.venv/bin/python
fi

cmd=${1:-test}
shift || true
case "$cmd" in
    test)   # in parallel (pytest-xdist, one worker a CPU) where it is installed and no -n was given
            workers=()
            if "$PY" -c "import xdist" 2>/dev/null && [[ " $* " != *" -n "* ]]; then workers=(-n auto); fi
            exec "$PY" -m pytest -q ${workers[@]+"${workers[@]}"} "$@" ;;
    ladder) exec "$PY" -m gemmlab ladder "$@" ;;
    gemmlab) exec "$PY" -m gemmlab "$@" ;;
    *) echo "usage: bash run.sh ladder|test|gemmlab [ARGS...]" >&2; exit 2 ;;
esac
