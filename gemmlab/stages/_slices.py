"""Python mirror of kernels/slice_load.cuh and of the shared-memory reads of the scalar stages
s02-s06: the rules a slice copy imposes, which thread copies which element, and the lane -> byte
address map of warp 0's shared-memory instructions (StageSpec.smem_accesses, for the bank model).
"""
from __future__ import annotations

WARP = 32


def slice_load_rules(what: str, rows: int, cols: int, threads: int, thread_cols: int) -> list[str]:
    """Messages for the static_asserts of SliceLoad<rows, cols, threads, thread_cols>; ``what``
    names the slice and its dimensions, e.g. "A slice (block_m x block_k)"."""
    if thread_cols < 1 or threads % thread_cols or cols % thread_cols:
        return [f"{what} = {rows}x{cols}: the {thread_cols} threads across a row of it must divide both the "
                f"thread count ({threads}) and its width ({cols})"]
    thread_rows = threads // thread_cols
    if rows % thread_rows:
        return [f"{what} = {rows}x{cols}: its height must be a multiple of the {thread_rows} thread rows "
                f"(threads/{thread_cols}), so that every thread copies the same number of elements"]
    return []


def slice_load_elements(rows: int, cols: int, threads: int, thread_cols: int, tid: int) -> list[tuple[int, int]]:
    """(row, col) of every element thread ``tid`` stores, in the order of SliceLoad's store loop."""
    thread_rows = threads // thread_cols
    first_row, first_col = divmod(tid, thread_cols)
    return [(first_row + i * thread_rows, first_col + j * thread_cols)
            for i in range(rows // thread_rows) for j in range(cols // thread_cols)]


def slice_store_instructions(rows, cols, threads, thread_cols, base_bytes) -> list:
    """Warp 0's STS instructions for one slice copy into a row-major [rows][cols] float array."""
    per_lane = [slice_load_elements(rows, cols, threads, thread_cols, lane) for lane in range(WARP)]
    out = []
    for n in range(len(per_lane[0])):  # the n-th store of every lane is one warp instruction
        out.append((4, [base_bytes + 4 * (elems[n][0] * cols + elems[n][1]) for elems in per_lane]))
    return out


def vector_width(length: int, starts) -> int:
    """Floats per shared load when the compiler merges a run of ``length`` consecutive floats that
    starts at each offset in ``starts`` (all threads): the widest of 4, 2, 1 dividing the length
    and every start (16-, 8-, 4-byte alignment it can prove). nvcc does this merging on its own
    for fully unrolled loops; tests check the result against the SASS."""
    for w in (4, 2, 1):
        if length % w == 0 and all(s % w == 0 for s in starts):
            return w
    return 1


def run_instructions(runs, length: int, threads: int, base_bytes: int = 0) -> list:
    """Warp 0's shared loads for runs of ``length`` consecutive floats. ``runs`` is a list of
    functions tid -> first float offset of that run; each run becomes length/w loads of w floats."""
    out = []
    for start in runs:
        w = vector_width(length, [start(t) for t in range(threads)])
        for chunk in range(length // w):
            out.append((4 * w, [base_bytes + 4 * (start(lane) + chunk * w) for lane in range(WARP)]))
    return out
