"""The layering of the package (docs/architecture.md): the runtime never imports the tools.

The runtime stack reads api -> dispatch -> heuristics -> plan -> stages -> jit, on top of the
base modules (problem, precision, errors, device, arrays); the torch glue (torch_ops, nn, torch)
sits on the API. The tools sit above it all: tune/ (measures, writes tables), bench/ (times,
reports), analysis/ (models, SASS, ncu), the command line and check.py (the float64 correctness
harness of the tests, the benchmarks and the tuner). Checked twice, on CPU:

- statically: every import statement of every runtime module (function-level ones included),
  resolved, names only modules of its own layer or below, and never a tool;
- dynamically: a fresh interpreter that imports the runtime and runs ``stage="auto"``'s choices
  and a compile (with GEMMLAB_DUMP_SASS) has loaded no tool module.
"""
from __future__ import annotations

import ast
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "gemmlab"

# Runtime layers, top first: a module may import its own layer and the ones below it.
LAYERS = (
    ("frontend", ("gemmlab", "gemmlab.api", "gemmlab.torch_ops", "gemmlab.nn", "gemmlab.torch")),
    ("dispatch", ("gemmlab.dispatch",)),
    ("heuristics", ("gemmlab.heuristics",)),
    ("plan", ("gemmlab.plan",)),
    ("stages", ("gemmlab.stages",)),
    ("jit", ("gemmlab.jit",)),
    ("base", ("gemmlab.problem", "gemmlab.precision", "gemmlab.errors", "gemmlab.device", "gemmlab.arrays",
              "gemmlab.env")),
)
TOOLS = ("gemmlab.tune", "gemmlab.bench", "gemmlab.analysis", "gemmlab.cli", "gemmlab.cli_core",
         "gemmlab.__main__", "gemmlab.check")


def _under(name: str, prefix: str) -> bool:
    return name == prefix or name.startswith(prefix + ".")


def _layer(name: str) -> int | None:
    """The index in LAYERS of module ``name`` (the longest prefix wins), None for a tool."""
    best, best_len = None, -1
    for i, (_, prefixes) in enumerate(LAYERS):
        for p in prefixes:
            if _under(name, p) and len(p) > best_len and (p != "gemmlab" or name == "gemmlab"):
                best, best_len = i, len(p)
    return best


def _module_name(path: Path) -> str:
    rel = path.relative_to(ROOT).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _modules() -> dict[str, Path]:
    return {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}


def _imports(name: str, path: Path) -> list[tuple[int, str]]:
    """(line, absolute module) of every import in the file; ``from X import y`` counts as X.y
    when X.y is a module of the package, else as X."""
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    mods = _modules()
    out = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - (node.level - 1)]
                mod = ".".join(base + ([node.module] if node.module else []))
            else:
                mod = node.module
            for a in node.names:
                sub = f"{mod}.{a.name}"
                out.append((node.lineno, sub if sub in mods else mod))
    return [(line, m) for line, m in out if _under(m, "gemmlab")]


def test_every_module_is_placed():
    """A new module belongs to a runtime layer or to the tools (this test says where it sits)."""
    loose = [n for n in _modules() if _layer(n) is None and not any(_under(n, t) for t in TOOLS)]
    assert loose == [], f"modules in no layer: {loose}; add them to LAYERS or TOOLS in {__file__}"


def test_runtime_never_imports_a_tool_and_only_imports_down():
    bad = []
    for name, path in _modules().items():
        mine = _layer(name)
        if mine is None:
            continue
        for line, mod in _imports(name, path):
            where = f"{path.relative_to(ROOT)}:{line} imports {mod}"
            if any(_under(mod, t) for t in TOOLS):
                bad.append(f"{where} (a tool)")
            elif mod == "gemmlab" and mine != 0:
                # only ``from .. import __version__`` reaches the package itself from below
                src = path.read_text().splitlines()[line - 1]
                if "__version__" not in src:
                    bad.append(f"{where} (the package from below)")
            else:
                theirs = _layer(mod)
                if theirs is not None and theirs < mine:
                    bad.append(f"{where} ({LAYERS[theirs][0]} is above {LAYERS[mine][0]})")
    assert bad == [], "\n".join(bad)


def test_benchmarks_never_import_the_tuner():
    """tune/ times with bench/ (one direction): bench/ never imports tune/."""
    bad = [f"{path.relative_to(ROOT)}:{line} imports {mod}"
           for name, path in _modules().items() if _under(name, "gemmlab.bench")
           for line, mod in _imports(name, path) if _under(mod, "gemmlab.tune")]
    assert bad == [], "\n".join(bad)


def test_heuristics_never_import_their_callers():
    """heuristics/ is read by dispatch and by the tuner, never importing either (or the API)."""
    bad = [f"{path.relative_to(ROOT)}:{line} imports {mod}"
           for name, path in _modules().items() if _under(name, "gemmlab.heuristics")
           for line, mod in _imports(name, path)
           if any(_under(mod, m) for m in ("gemmlab.dispatch", "gemmlab.api", "gemmlab.tune"))]
    assert bad == [], "\n".join(bad)


def test_the_static_check_sees_lazy_imports():
    """The walk finds imports inside functions, resolved, e.g. dispatch's device import."""
    found = {m for _, m in _imports("gemmlab.dispatch", PKG / "dispatch.py")}
    assert {"gemmlab.device", "gemmlab.jit.compiler", "gemmlab.heuristics"} <= found
    found = {m for _, m in _imports("gemmlab.api", PKG / "api.py")}
    assert "gemmlab.dispatch" in found and "gemmlab.jit.launch" in found


def test_architecture_md_lists_the_layers_as_they_are():
    """docs/architecture.md's layer table names exactly these layers, in this order, with these
    modules (a path ending in / is a package), and every path in it exists."""
    text = (ROOT / "docs" / "architecture.md").read_text()
    section = text.split("## Layers", 1)[1].split("\n## ", 1)[0]
    rows = [line.split("|")[1:3] for line in section.splitlines() if line.startswith("| ") and "`gemmlab/" in line]
    documented = []
    for layer, cell in rows:
        paths = [m for m in cell.replace(";", ",").split("`") if m.startswith("gemmlab/")]
        assert all((ROOT / m).exists() for m in paths), paths
        names = []
        for m in paths:
            m = m.rstrip("/").removesuffix(".py").removesuffix("/__init__")
            names.append(m.replace("/", "."))
        documented.append((layer.strip(), tuple(sorted(names))))
    assert documented == [(name, tuple(sorted(mods))) for name, mods in LAYERS]


def test_the_static_check_catches_a_lazy_tool_import(tmp_path):
    """What jit/compiler.py once did for GEMMLAB_DUMP_SASS: a function-level import of analysis."""
    fake = tmp_path / "fake.py"
    fake.write_text("def dump(ck):\n    from ..analysis.sass import disassemble\n    return disassemble(ck)\n")
    assert (2, "gemmlab.analysis.sass") in _imports("gemmlab.jit.fake", fake)


RUNTIME_RUN = textwrap.dedent('''
    import os, sys
    import gemmlab
    import gemmlab.api, gemmlab.dispatch, gemmlab.heuristics, gemmlab.plan, gemmlab.problem, gemmlab.precision
    from gemmlab import dispatch
    from gemmlab.stages import all_stages, extra_stages
    from gemmlab.heuristics import model, table
    from gemmlab.problem import Problem
    for s in all_stages() + extra_stages():
        s.describe()
    ident = table.identity("Layering Test GPU", "sm_90", "nvrtc-0.0")
    dispatch._gpu = lambda dev=0: (model.Gpu(), ident)
    for shape, layout in (((1, 4096, 4096), "nn"), ((4096, 4096, 4096), "nt"), ((1000, 3000, 517), "tt"),
                          ((64, 64, 65536), "tn")):
        p = Problem.dense(*shape, layout, a_ptr=1 << 20, b_ptr=1 << 24, d_ptr=1 << 28)
        for precision in ("ieee", "tf32", "tf32x3"):
            dispatch.choose(p, precision=precision)
            dispatch.choose(p, allow_workspace=False, precision=precision)
    os.environ["GEMMLAB_DUMP_SASS"] = "1"
    from gemmlab.jit import compile_cubin
    compile_cubin('#include "common.cuh"\\n', "gemmlab_copy", "sm_90")
    try:
        import torch  # noqa: F401
    except ImportError:
        pass
    else:
        import gemmlab.torch_ops, gemmlab.nn, gemmlab.torch  # noqa: F401
    print("\\n".join(sorted(m for m in sys.modules if m.startswith("gemmlab"))))
''')


def test_running_the_runtime_loads_no_tool(tmp_path):
    env = dict(os.environ, PYTHONPATH=str(ROOT), CUDA_VISIBLE_DEVICES="", GEMMLAB_TUNING_DB=str(tmp_path / "none.json"))
    env.setdefault("GEMMLAB_CACHE_DIR", str(tmp_path / "cache"))
    r = subprocess.run([sys.executable, "-c", RUNTIME_RUN], cwd=tmp_path, env=env, capture_output=True, text=True,
                       timeout=600)
    if r.returncode != 0 and "cuobjdump not found" in r.stderr:
        pytest.skip("cuobjdump is not installed (GEMMLAB_DUMP_SASS needs it)")
    assert r.returncode == 0, r.stderr
    loaded = r.stdout.split()
    assert "gemmlab.heuristics.choice" in loaded and "gemmlab.jit.disasm" in loaded
    assert "SASS of gemmlab_copy" in r.stderr
    tools = [m for m in loaded if any(_under(m, t) for t in TOOLS)]
    assert tools == [], f"the runtime loaded tool modules: {tools}"
