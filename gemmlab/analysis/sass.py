"""SASS inspection from a cubin with cuobjdump (the nvidia-cuda-cuobjdump wheel, or PATH).

``inspect(cubin, kernel)`` returns registers, shared and local memory, the instruction mix, the
main loop (found by its back edge) and its FFMA share, the share of FFMA operands carrying
``.reuse`` and the FFMA register-bank conflicts (000 §11, 002).

Every stage's cubin holds two kernels, the stage's and ``gemmlab_copy`` (kernels/common.cuh);
each function is parsed on its own and the functions here take the kernel's name. Without one
they use the first kernel that is not ``gemmlab_copy``.

Register banks (000 §11.1): a register's bank is its number mod 4; an FFMA whose source registers
read from the register file include two different registers of the same bank loses a cycle per
extra register. A source is not read from the register file when the previous instruction read
the same register in the same operand slot with ``.reuse`` set (the reuse cache, §11.2).
"""
from __future__ import annotations

import functools
import re
from collections import Counter
from typing import NamedTuple

# The cubin tools (finding cuobjdump / nvdisasm, running them on a cubin) are the runtime's
# (GEMMLAB_DUMP_SASS prints the SASS of every compile): gemmlab/jit/disasm.py.
from ..jit.disasm import ToolMissing, _run_on_cubin, _tool_env, disassemble, tool  # noqa: F401


# ---- resources --------------------------------------------------------------------------------
_RES_FN = re.compile(r"Function\s+(\S+?):\s*\n\s*REG:(\d+)\s+STACK:(\d+)\s+SHARED:(\d+)\s+LOCAL:(\d+)")


def all_resources(cubin: bytes) -> dict:
    """{kernel name: {"registers", "stack_bytes", "shared_bytes", "local_bytes"}}."""
    text = _run_on_cubin(("--dump-resource-usage",), cubin)
    out = {}
    for m in _RES_FN.finditer(text):
        reg, stack, shared, local = (int(x) for x in m.groups()[1:])
        out[m.group(1)] = {"registers": reg, "stack_bytes": stack, "shared_bytes": shared, "local_bytes": local}
    if not out:
        raise RuntimeError(f"cuobjdump printed no resource usage:\n{text}")
    return out


def _pick(names, kernel: str | None) -> str:
    names = list(names)
    if kernel is not None:
        if kernel not in names:
            raise KeyError(f"kernel {kernel!r} is not in the cubin; it has {names}")
        return kernel
    main = [n for n in names if n != "gemmlab_copy"]
    return (main or names)[0]


def resources(cubin: bytes, kernel: str | None = None) -> dict:
    """Registers per thread, stack, static shared and local memory of ``kernel``."""
    res = all_resources(cubin)
    return dict(res[_pick(res, kernel)])


# ---- instructions -----------------------------------------------------------------------------
class Insn(NamedTuple):
    addr: int
    op: str          # opcode with modifiers, e.g. "LDS.U.128"
    operands: str    # e.g. "R8, [R2+0x10]"
    pred: str        # guard predicate, e.g. "@!P0", or ""


_FUNC = re.compile(r"^\s*Function\s*:\s*(\S+)\s*$", re.M)
_INSN = re.compile(r"/\*([0-9a-f]{4,})\*/\s+(@!?U?P[T\d]+\s+)?([A-Z][A-Z0-9_.]*)\s*([^;]*);")


@functools.lru_cache(maxsize=64)
def _functions(text: str) -> dict:
    starts = list(_FUNC.finditer(text))
    out = {}
    for i, m in enumerate(starts):
        end = starts[i + 1].start() if i + 1 < len(starts) else len(text)
        body = text[m.end():end]
        out[m.group(1)] = tuple(
            Insn(int(x.group(1), 16), x.group(3), x.group(4).strip(), (x.group(2) or "").strip())
            for x in _INSN.finditer(body))
    return out


def functions(cubin: bytes) -> dict:
    """{kernel name: [Insn]} for every function in the cubin."""
    return {k: list(v) for k, v in _functions(disassemble(cubin)).items()}


def instructions(cubin: bytes, kernel: str | None = None) -> list:
    """[Insn(address, opcode with modifiers, operands, predicate)] of ``kernel``."""
    fns = _functions(disassemble(cubin))
    if not fns:
        raise RuntimeError("cuobjdump printed no SASS for this cubin")
    return list(fns[_pick(fns, kernel)])


# Opcode classes reported in the mix. A key counts instructions whose opcode matches the pattern.
_NOT_WIDE = r"(\.(?!64$|64\.|128$|128\.)[A-Z0-9_]+)*"
MIX_CLASSES = {
    "FFMA": r"FFMA(\..*)?",
    "FMUL": r"FMUL(\..*)?",
    "FADD": r"FADD(\..*)?",
    "LDS": r"LDS" + _NOT_WIDE,
    "LDS.64": r"LDS(\.[A-Z]+)*\.64(\..*)?",
    "LDS.128": r"LDS(\.[A-Z]+)*\.128(\..*)?",
    "LDSM": r"LDSM(\..*)?",
    "STS": r"STS" + _NOT_WIDE,
    "STS.64": r"STS(\.[A-Z]+)*\.64(\..*)?",
    "STS.128": r"STS(\.[A-Z]+)*\.128(\..*)?",
    "LDG": r"LDG" + _NOT_WIDE,
    "LDG.E.64": r"LDG(\.[A-Z_]+)*\.64(\..*)?",
    "LDG.E.128": r"LDG(\.[A-Z_]+)*\.128(\..*)?",
    "STG": r"STG" + _NOT_WIDE,
    "STG.E.64": r"STG(\.[A-Z_]+)*\.64(\..*)?",
    "STG.E.128": r"STG(\.[A-Z_]+)*\.128(\..*)?",
    "LDGSTS": r"LDGSTS(\..*)?",
    "LDGDEPBAR": r"LDGDEPBAR(\..*)?",
    "DEPBAR": r"DEPBAR(\..*)?",
    "UTMALDG": r"UTMALDG(\..*)?",
    "SYNCS": r"SYNCS(\..*)?",
    "BAR": r"BAR(\..*)?",
    "LDL": r"LDL(\..*)?",
    "STL": r"STL(\..*)?",
    "HGMMA": r"HGMMA(\..*)?",
    "IMAD": r"IMAD(\..*)?",
    "IADD3": r"IADD3(\..*)?",
    "LOP3": r"LOP3(\..*)?",
    "ISETP": r"ISETP(\..*)?",
    "BRA": r"BRA(\..*)?",
}
_MIX_RE = {k: re.compile(v + r"$") for k, v in MIX_CLASSES.items()}


def classify(opcode: str) -> str | None:
    for k, rx in _MIX_RE.items():
        if rx.match(opcode):
            return k
    return None


def mix(insns) -> dict:
    """Count per mix class, plus "total" (every instruction, NOPs included)."""
    c = Counter()
    for x in insns:
        k = classify(x[1])
        if k:
            c[k] += 1
    c["total"] = len(insns)
    return dict(c)


def opcodes(insns) -> dict:
    """Count per base opcode (the part before the first dot)."""
    return dict(Counter(x[1].split(".")[0] for x in insns).most_common())


def has_opcode(insns, name: str) -> bool:
    """True when any instruction falls in mix class ``name`` (e.g. 'LDS.128', 'LDGSTS')."""
    rx = _MIX_RE.get(name) or re.compile(re.escape(name) + r"(\..*)?$")
    return any(rx.match(x[1]) for x in insns)


# ---- loops ------------------------------------------------------------------------------------
_BRANCH = re.compile(r"^BRA(\..*)?$")
_HEX = re.compile(r"0x([0-9a-f]+)")


def loops(insns) -> list[tuple[int, int]]:
    """(first address, back-edge address) of every loop: a branch to an earlier address."""
    out = []
    for x in insns:
        if not _BRANCH.match(x.op):
            continue
        m = _HEX.search(x.operands)
        if m and int(m.group(1), 16) <= x.addr:
            out.append((int(m.group(1), 16), x.addr))
    return out


def _is_ffma(op: str) -> bool:
    return op == "FFMA" or op.startswith("FFMA.")


def main_loop(insns) -> list:
    """The instructions of the hot loop, found by its back edge (a branch to an earlier address):

    1. loops holding FFMAs with no other such loop inside them (an outer batch, tile or epilogue
       loop around the K loop is skipped; loops that merely overlap do not count as inside);
    2. of those, the ones holding more than half as many FFMAs as the fullest (a short remainder
       loop is skipped);
    3. of those, the one with the highest FFMA share (when the compiler emits two versions of the
       K loop, or an outer loop that overlaps it, the K loop proper is the densest); ties go to the
       shorter loop.
    """
    stats = []
    for first, last in loops(insns):
        body = [x for x in insns if first <= x.addr <= last]
        n = sum(1 for x in body if _is_ffma(x.op))
        if n:
            stats.append({"span": (first, last), "ffma": n, "share": n / len(body), "body": body})

    def inside(a, b):  # a strictly inside b
        return a != b and b[0] <= a[0] and a[1] <= b[1]

    innermost = [s for s in stats if not any(inside(o["span"], s["span"]) for o in stats)]
    if not innermost:
        return []
    most = max(s["ffma"] for s in innermost)
    best = max((s for s in innermost if 2 * s["ffma"] > most),
               key=lambda s: (s["share"], -(s["span"][1] - s["span"][0])))
    return best["body"]


def k_loop(insns) -> list:
    """The instructions run once per K step: the main loop or, where it sits inside another loop
    and holds no barrier, the smallest loop around it (a K step's copies and barriers around an
    inner FFMA loop). A main loop with its barrier is a K step already: the loop around it is not
    (s10's carried loop, a whole tile a trip, inside the kernel's outer loop)."""
    body = main_loop(insns)
    if not body or any(classify(x.op) == "BAR" for x in body):
        return body
    first, last = body[0].addr, body[-1].addr
    around = [(a, b) for a, b in loops(insns) if a <= first and last <= b and (a, b) != (first, last)]
    if around:
        a, b = min(around, key=lambda s: s[1] - s[0])
        body = [x for x in insns if a <= x.addr <= b]
    return body


# ---- .reuse and register banks ----------------------------------------------------------------
_OPERAND_REG = re.compile(r"^[-|!~]*\|?R(\d+)(\.reuse)?(\.[A-Z0-9_]+)*\|?$")


def _split_operands(text: str) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()]


def _source_slots(x: Insn) -> list:
    """[(slot, register number or None, reuse flag)] for the source operands of an ALU-style
    instruction "OP Rd, a, b, c" (slot 0 = a). Non-register operands give None."""
    ops = _split_operands(x.operands)
    if not ops or not re.match(r"^R(\d+|Z)$", ops[0]):
        return []
    out = []
    for slot, tok in enumerate(ops[1:]):
        m = _OPERAND_REG.match(tok)
        if m:
            out.append((slot, int(m.group(1)), bool(m.group(2))))
        else:
            out.append((slot, None, False))
    return out


def ffma_register_stats(insns, banks: int = 4, reuse_per_bank: bool = False) -> dict:
    """For the FFMAs in ``insns`` (in address order):

    - ``reuse_share``: share of register source operands carrying ``.reuse``;
    - ``reuse_hit_share``: share served from the reuse cache (same register, same slot, flagged by
      the previous instruction);
    - ``reg_bank_conflicts``: FFMAs whose register-file reads include two different registers of
      one bank (reg % ``banks``); ``reg_bank_conflict_cycles``: the extra read cycles they cost.

    ``reuse_per_bank``: a reuse cache of one entry per operand slot and register bank (reg % 2)
    instead of one per slot: a register flagged ``.reuse`` stays until its slot reads another
    register of its bank. cuBLAS's FFMA kernels flag two B registers of different banks in one slot
    in turn (``FFMA R45, R82.reuse, R74.reuse`` / ``FFMA R49, R82, R75.reuse`` / ``FFMA R44,
    R83.reuse, R74.reuse``), which only pays if both stay; a hypothesis, not what the issue model
    was calibrated with (docs/stages/s10-s11.md, "Serpentine FFMA runs").
    """
    sources = flagged = hits = conflicts = cycles = n = 0
    cache: dict = {}
    entry = (lambda slot, reg: (slot, reg % 2)) if reuse_per_bank else (lambda slot, reg: slot)
    for x in insns:
        slots = _source_slots(x)
        if _is_ffma(x.op):
            n += 1
            reads = set()
            for slot, reg, reuse in slots:
                if reg is None or reg == 255:
                    continue
                sources += 1
                flagged += reuse
                if cache.get(entry(slot, reg)) == reg:
                    hits += 1
                else:
                    reads.add(reg)
            per_bank = Counter(r % banks for r in reads)
            extra = sum(v - 1 for v in per_bank.values())
            conflicts += extra > 0
            cycles += extra
        if reuse_per_bank:
            for slot, reg, reuse in slots:
                if reg is not None and reg != 255:
                    if reuse:
                        cache[entry(slot, reg)] = reg
                    else:
                        cache.pop(entry(slot, reg), None)
        else:
            cache = {slot: reg for slot, reg, reuse in slots if reuse and reg is not None}
    return {
        "ffma": n,
        "ffma_source_registers": sources,
        "reuse_share": flagged / sources if sources else 0.0,
        "reuse_hit_share": hits / sources if sources else 0.0,
        "reg_bank_conflicts": conflicts,
        "reg_bank_conflict_cycles": cycles,
    }


def main_loop_stats(insns) -> dict:
    body = main_loop(insns)
    scope = body if body else insns
    stats = ffma_register_stats(scope)
    ffma = sum(1 for x in body if _is_ffma(x.op))
    return {
        "main_loop_instructions": len(body),
        "main_loop_ffma": ffma,
        "main_loop_ffma_share": (ffma / len(body)) if body else 0.0,
        "main_loop_span": [hex(body[0].addr), hex(body[-1].addr)] if body else None,
        "main_loop_mix": {k: v for k, v in mix(body).items() if k != "total"} if body else {},
        "reuse_share": stats["reuse_share"],
        "reuse_hit_share": stats["reuse_hit_share"],
        "reg_bank_conflicts": stats["reg_bank_conflicts"],
        "reg_bank_conflict_cycles": stats["reg_bank_conflict_cycles"],
        "register_stats_scope": "main loop" if body else "whole kernel",
    }


def inspect(cubin: bytes, kernel: str | None = None) -> dict:
    """Resources, mix and main-loop statistics of ``kernel`` (see the module docstring)."""
    fns = _functions(disassemble(cubin))
    name = _pick(fns, kernel)
    insns = list(fns[name])
    out = {"kernel": name}
    out.update(resources(cubin, name))
    out["mix"] = mix(insns)
    out["opcodes"] = opcodes(insns)
    out.update(main_loop_stats(insns))
    return out
