"""Which s10 kernels that `auto` can run on unaligned problems spill registers (CPU only: NVRTC and
the SASS, no GPU).

An unaligned problem that is not repacked runs s10 on 4-byte copies, at the s10 stand-in of the
tile the tables or the model chose (s11's ``fallback``, which sees the problem). For every tile of the space, every
layout, and split 1 and the splits of 2 and 4 slices added in a cluster, this compiles the
instantiation the plan would build (for a 255x257x259 problem: every operand unaligned) and
counts its local-memory traffic: the stack frame, STL and LDL, and those in the K loop (the main
loop and, where it sits in another loop, the loop around it: each costs every K step). ``local_bytes`` of the cubin stays 0 when the spills go to the stack
frame, so the compile tests' check of it does not see them. ``--aligned``: the s11 kernels of
aligned problems instead (TMA), the same way. ``--loop``: a line for every instantiation of split
1 instead, with its registers, stack bytes and the size of its K loop (instructions, FFMAs, copies:
what a change of the copy paths adds or removes; docs/stages/s10-s11.md, the M/N edge mask).
``--edge-shift``: the stand-ins with their M/N edge blocks moved inside (s11_tma.STAND_IN_EDGE_SHIFT).
Without either of the next two, the stand-ins uncarried. ``--frag-carry``: every stand-in with the
tile's last k carried over the barrier (s11_tma.STAND_IN_FRAG_CARRY, at every accumulator count; the
runtime carries at 64); ``--frag-carry-chunked``: the same, in trips of the uncarried kernel's k's
where a whole tile a trip is large (s11_tma.STAND_IN_FRAG_CARRY_CHUNKED).
    python3 scripts/s10_spill_scan.py [--layouts nn,nt,tn,tt] [--jobs N] [--aligned] [--loop] [--edge-shift]
                                      [--frag-carry] [--frag-carry-chunked]"""
from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from gemmlab.analysis import sass  # noqa: E402
from gemmlab.heuristics import space  # noqa: E402
from gemmlab.plan import kernel_for  # noqa: E402
from gemmlab.problem import Problem  # noqa: E402
from gemmlab.stages import s11_tma  # noqa: E402

SPLITS = (1, 2, 4)


def problem(layout, splits, aligned=False):
    """The scan's problem: 255x257x259 (every operand unaligned) or 256x256x256, its K in
    ``splits`` slices that share D (the variant then adds them in a cluster: ``cluster_k``)."""
    dims = (256, 256, 256) if aligned else (255, 257, 259)
    kw = {"splits": splits, "k_split": 128} if splits > 1 else {}
    return Problem.dense(*dims, layout, 1, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40, **kw)


def instantiations(layouts, aligned=False):
    """(tile label, layout, splits, spec, config, variant) of every distinct s10 kernel (with
    ``aligned``: every s11 kernel of a 256x256x256 problem, whose operands TMA takes)."""
    out, seen = [], set()
    for cand in space.SM90:
        for lay in layouts:
            for splits in SPLITS:
                p = problem(lay, splits, aligned)
                # what the plan builds: s11 hands the unaligned problem to its s10 stand-in
                spec, cfg = cand.spec().fallback(cand.config(), p) or (cand.spec(), cand.config())
                if splits > 1 and not spec.cluster_slices(cfg, splits, forced=True):
                    continue
                variant = spec.variant(cfg, p)
                key = (tuple(sorted(cfg.items())), tuple(sorted(variant.items())))
                if key not in seen:
                    seen.add(key)
                    out.append((cand.label, lay, splits, spec, cfg, variant))
    return out


def spills(spec, cfg, variant) -> dict:
    """registers, stack bytes, STL and LDL in the kernel and in its K loop; the K loop's size,
    FFMAs and copies (LDGSTS for s10, UTMALDG for s11)."""
    ck = kernel_for(spec, cfg, variant, "sm_90")
    res = sass.resources(ck.cubin)
    insns = sass.instructions(ck.cubin)
    ops, loop = sass.opcodes(insns), sass.opcodes(sass.k_loop(insns))
    return {"kernel": ck.name, "registers": res["registers"], "stack": res.get("stack_bytes", 0),
            "stl": ops.get("STL", 0), "ldl": ops.get("LDL", 0), "loop": loop.get("STL", 0) + loop.get("LDL", 0),
            "loop_insns": sum(loop.values()), "loop_ffma": loop.get("FFMA", 0),
            "loop_copies": loop.get("LDGSTS", 0) + loop.get("UTMALDG", 0)}


def main():
    layouts = ("nn", "nt", "tn", "tt")
    if "--layouts" in sys.argv:
        layouts = tuple(sys.argv[sys.argv.index("--layouts") + 1].split(","))
    jobs = int(sys.argv[sys.argv.index("--jobs") + 1]) if "--jobs" in sys.argv else 2
    s11_tma.STAND_IN_EDGE_SHIFT = "--edge-shift" in sys.argv
    s11_tma.STAND_IN_FRAG_CARRY = "--frag-carry" in sys.argv or "--frag-carry-chunked" in sys.argv
    s11_tma.STAND_IN_FRAG_CARRY_ACCUMULATORS = None
    s11_tma.STAND_IN_FRAG_CARRY_CHUNKED = "--frag-carry-chunked" in sys.argv
    todo = instantiations(layouts, aligned="--aligned" in sys.argv)
    if "--loop" in sys.argv:
        todo = [j for j in todo if j[2] == 1]
    first = spills(*todo[0][3:])  # alone: the compiler's lazy imports are not safe in two threads at once
    with ThreadPoolExecutor(jobs) as ex:
        found = [first] + list(ex.map(lambda j: spills(*j[3:]), todo[1:]))
    if "--loop" in sys.argv:
        print(f"{'space tile':28} {'lay':3} {'regs':>4} {'stack':>5} {'K loop':>6} {'FFMA':>5} {'copies':>6}")
        for (label, lay, *_), f in zip(todo, found):
            print(f"{label:28} {lay:3} {f['registers']:4} {f['stack']:5} {f['loop_insns']:6} {f['loop_ffma']:5} "
                  f"{f['loop_copies']:6}")
        return
    bad = [(j, f) for j, f in zip(todo, found) if f["stack"] or f["stl"] or f["ldl"]]
    print(f"{'space tile':28} {'lay':3} {'split':5} {'min_blocks':>10} {'regs':>4} {'stack':>5} {'STL':>4} {'LDL':>4} {'in K loop':>9}")
    for (label, lay, splits, _, cfg, _), f in bad:
        print(f"{label:28} {lay:3} {splits:5} {cfg['min_blocks']:10} {f['registers']:4} {f['stack']:5} {f['stl']:4} "
              f"{f['ldl']:4} {f['loop']:9}")
    print(f"{len(bad)} of {len(todo)} {'s11' if '--aligned' in sys.argv else 's10'} instantiations spill; {sum(1 for _, f in bad if f['loop'])} in the K loop")


if __name__ == "__main__":
    main()
