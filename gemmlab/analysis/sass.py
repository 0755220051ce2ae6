"""SASS inspection from a cubin with cuobjdump (the nvidia-cuda-cuobjdump wheel, or PATH).

``inspect(cubin)`` returns registers, shared and local memory, the instruction mix, the main loop
(found by its back edge) and its FFMA share, the share of FFMA operands carrying ``.reuse`` and the
FFMA register-bank conflicts (000 §11, 002).
"""
from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import tempfile
from collections import Counter
from pathlib import Path


class ToolMissing(RuntimeError):
    pass


@functools.lru_cache(maxsize=None)
def tool(name: str) -> str:
    """Path of cuobjdump or nvdisasm: $GEMMLAB_<NAME>, the pip wheel, then PATH."""
    env = os.environ.get(f"GEMMLAB_{name.upper()}")
    if env:
        return env
    try:
        import nvidia

        for base in nvidia.__path__:
            for sub in ("cu13/bin", "cuda_cuobjdump/bin", "cuda_nvdisasm/bin", "cu12/bin"):
                p = Path(base) / sub / name
                if p.is_file() and os.access(p, os.X_OK):
                    return str(p)
    except ImportError:
        pass
    found = shutil.which(name)
    if found:
        return found
    for p in (f"/usr/local/cuda/bin/{name}",):
        if os.access(p, os.X_OK):
            return p
    raise ToolMissing(f"{name} not found: pip install nvidia-cuda-{name} (or put the CUDA toolkit on PATH)")


def _run_on_cubin(args: list[str], cubin: bytes) -> str:
    with tempfile.NamedTemporaryFile(suffix=".cubin") as f:
        f.write(cubin)
        f.flush()
        r = subprocess.run([tool("cuobjdump"), *args, f.name], capture_output=True, text=True)
    if r.returncode != 0:
        raise RuntimeError(f"cuobjdump {' '.join(args)} failed: {r.stderr.strip()}")
    return r.stdout


def disassemble(cubin: bytes) -> str:
    return _run_on_cubin(["--dump-sass"], cubin)


_RES = re.compile(r"REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


def resources(cubin: bytes) -> dict:
    text = _run_on_cubin(["--dump-resource-usage"], cubin)
    m = _RES.search(text)
    if not m:
        raise RuntimeError(f"cuobjdump printed no resource usage:\n{text}")
    reg, stack, shared, local = (int(x) for x in m.groups())
    return {"registers": reg, "stack_bytes": stack, "shared_bytes": shared, "local_bytes": local}


_INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P\w+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")


@functools.lru_cache(maxsize=None)
def _parse_cached(text: str):
    out = []
    for m in _INSN.finditer(text):
        addr = int(m.group(1), 16)
        out.append((addr, m.group(3), m.group(4).strip(), (m.group(2) or "").strip()))
    return tuple(out)


def instructions(cubin: bytes):
    """[(address, opcode with modifiers, operands, predicate)] of the first kernel in the cubin."""
    return list(_parse_cached(disassemble(cubin)))


# Opcode classes reported in the mix. A key counts instructions whose opcode matches the pattern.
MIX_CLASSES = {
    "FFMA": r"FFMA(\..*)?",
    "FMUL": r"FMUL(\..*)?",
    "FADD": r"FADD(\..*)?",
    "LDS": r"LDS(\.(?!64|128)[A-Z0-9]+)*",
    "LDS.64": r"LDS(\.[A-Z]+)*\.64(\..*)?",
    "LDS.128": r"LDS(\.[A-Z]+)*\.128(\..*)?",
    "STS": r"STS(\.(?!64|128)[A-Z0-9]+)*",
    "STS.64": r"STS(\.[A-Z]+)*\.64(\..*)?",
    "STS.128": r"STS(\.[A-Z]+)*\.128(\..*)?",
    "LDG": r"LDG(\.(?!64|128)[A-Z0-9]+)*",
    "LDG.E.64": r"LDG(\.[A-Z]+)*\.64(\..*)?",
    "LDG.E.128": r"LDG(\.[A-Z]+)*\.128(\..*)?",
    "STG": r"STG(\.(?!64|128)[A-Z0-9]+)*",
    "STG.E.128": r"STG(\.[A-Z]+)*\.128(\..*)?",
    "LDGSTS": r"LDGSTS(\..*)?",
    "LDGDEPBAR": r"LDGDEPBAR(\..*)?",
    "DEPBAR": r"DEPBAR(\..*)?",
    "UTMALDG": r"UTMALDG(\..*)?",
    "SYNCS": r"SYNCS(\..*)?",
    "BAR": r"BAR(\..*)?",
    "LDL": r"LDL(\..*)?",
    "STL": r"STL(\..*)?",
    "HGMMA": r"HGMMA(\..*)?",
}
_MIX_RE = {k: re.compile(v + r"$") for k, v in MIX_CLASSES.items()}


def classify(opcode: str) -> str | None:
    for k, rx in _MIX_RE.items():
        if rx.match(opcode):
            return k
    return None


def mix(insns) -> dict:
    c = Counter()
    for _, op, _, _ in insns:
        k = classify(op)
        if k:
            c[k] += 1
    c["total"] = len(insns)
    return dict(c)


def has_opcode(insns, name: str) -> bool:
    """True when any instruction falls in mix class ``name`` (e.g. 'LDS.128', 'LDGSTS')."""
    rx = _MIX_RE.get(name) or re.compile(re.escape(name) + r"(\..*)?$")
    return any(rx.match(op) for _, op, _, _ in insns)


def inspect(cubin: bytes) -> dict:
    insns = instructions(cubin)
    res = resources(cubin)
    out = dict(res)
    out["mix"] = mix(insns)
    out.update(main_loop_stats(insns))
    return out


# ---- main loop, .reuse, register banks ------------------------------------------------------
_BRA = re.compile(r"^BRA(\..*)?$")
_TARGET = re.compile(r"(?:`\()?\.?L_x_\d+|0x([0-9a-f]+)")


def main_loop(insns):
    """The instructions of the loop with the most FFMAs, found by a backward branch."""
    best = []
    for i, (addr, op, operands, _) in enumerate(insns):
        if not _BRA.match(op):
            continue
        m = re.search(r"0x([0-9a-f]+)", operands)
        if not m:
            continue
        target = int(m.group(1), 16)
        if target >= addr:
            continue
        body = [x for x in insns if target <= x[0] <= addr]
        if sum(1 for x in body if x[1].startswith("FFMA")) > sum(1 for x in best if x[1].startswith("FFMA")):
            best = body
    return best


_REG = re.compile(r"\bR(\d+)(\.reuse)?\b")


def ffma_register_stats(insns) -> dict:
    """For FFMAs: share of source operands marked .reuse, and bank conflicts (reg % 4) among the
    three sources not covered by reuse (000 §11)."""
    sources = reuse = conflicts = n = 0
    for _, op, operands, _ in insns:
        if not op.startswith("FFMA"):
            continue
        n += 1
        regs = _REG.findall(operands)
        srcs = regs[1:]  # first is the destination
        sources += len(srcs)
        reuse += sum(1 for _, r in srcs if r)
        banks = Counter(int(r) % 4 for r, rr in srcs if not rr and int(r) != 255)
        conflicts += sum(v - 1 for v in banks.values() if v > 1)
    return {"ffma": n, "reuse_share": (reuse / sources) if sources else 0.0, "reg_bank_conflicts": conflicts}


def main_loop_stats(insns) -> dict:
    body = main_loop(insns)
    stats = ffma_register_stats(body if body else insns)
    ffma = sum(1 for x in body if x[1].startswith("FFMA"))
    return {
        "main_loop_instructions": len(body),
        "main_loop_ffma_share": (ffma / len(body)) if body else 0.0,
        "reuse_share": stats["reuse_share"],
        "reg_bank_conflicts": stats["reg_bank_conflicts"],
    }
