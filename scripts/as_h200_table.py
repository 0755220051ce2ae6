"""The shipped H200 tuning table under this GPU's identity, for a probe on another Hopper card (an
H100 standing in for the H200 when none is lent): the table's lookups then give the plans the
H200 would run, timed on this card. Writes the file GEMMLAB_TUNING_DB then points at.

    python3 scripts/as_h200_table.py /tmp/as-h200.json && export GEMMLAB_TUNING_DB=/tmp/as-h200.json
"""
import json
import sys

import torch

from gemmlab.heuristics import table
from gemmlab.jit.compiler import compiler_version


def main():
    entries, base, n = [], None, 0
    for p in sorted(table.TABLES.glob("*.json")):
        doc = json.loads(p.read_text())
        if doc.get("gpu") == "NVIDIA H200":
            entries += doc["entries"]
            base, n = doc, n + 1
    if base is None:
        sys.exit("no shipped H200 table")
    doc = dict(base, gpu=torch.cuda.get_device_name(0), arch="sm_90", compiler=compiler_version(), entries=entries)
    with open(sys.argv[1], "w") as f:
        json.dump(doc, f)
    print(f"{len(entries)} entries of {n} H200 table(s) as {doc['gpu']}, {doc['compiler']}")


if __name__ == "__main__":
    main()
