"""s06 warp_tiling (notes 000 §6, 001 kernel 10): block -> warp -> thread hierarchy, 8 warps as
4x2, lanes as 4x8, with warp_m, warp_n, warp_m_iter, warp_n_iter as parameters. Default config =
the notes' (000 §6.3, §12.1). The index maths mirror kernels/s06_warp_tiling.cuh (same names)."""
from ._slices import run_instructions, slice_load_rules, slice_store_instructions
from .base import Param, StageSpec

_KEYS = ("block_m", "block_n", "block_k", "warp_m", "warp_n", "warp_m_iter", "warp_n_iter", "thread_m", "thread_n")


def layout(cfg):
    """The derived sizes of the .cuh (same names). Assumes ``cfg`` is legal."""
    warps_n = cfg["block_n"] // cfg["warp_n"]
    sub_m = cfg["warp_m"] // cfg["warp_m_iter"]
    sub_n = cfg["warp_n"] // cfg["warp_n_iter"]
    return {"WARPS_N": warps_n, "THREADS": 32 * (cfg["block_m"] // cfg["warp_m"]) * warps_n,
            "SUB_M": sub_m, "SUB_N": sub_n, "LANES_M": sub_m // cfg["thread_m"], "LANES_N": sub_n // cfg["thread_n"],
            "FRAG_M": cfg["warp_m_iter"] * cfg["thread_m"], "FRAG_N": cfg["warp_n_iter"] * cfg["thread_n"]}


def thread_origin(cfg, tid):
    """(thread_row, thread_col) of the .cuh: this lane's tile in warp sub-tile (0, 0)."""
    lay = layout(cfg)
    warp_id, lane_id = divmod(tid, 32)
    warp_row, warp_col = divmod(warp_id, lay["WARPS_N"])  # 000 §6.3: warps 4 x 2
    lane_row, lane_col = divmod(lane_id, lay["LANES_N"])  # 000 §6.3: lanes 4 x 8
    return (warp_row * cfg["warp_m"] + lane_row * cfg["thread_m"],
            warp_col * cfg["warp_n"] + lane_col * cfg["thread_n"])


def thread_outputs(cfg, tid):
    """Every (row, col) of the block tile that thread ``tid`` computes (acc[m*TM+i][n*TN+j])."""
    lay = layout(cfg)
    row, col = thread_origin(cfg, tid)
    return [(row + m * lay["SUB_M"] + i, col + n * lay["SUB_N"] + j)
            for m in range(cfg["warp_m_iter"]) for i in range(cfg["thread_m"])
            for n in range(cfg["warp_n_iter"]) for j in range(cfg["thread_n"])]


def b_load_cols(cfg):
    return min(cfg["block_n"], layout(cfg)["THREADS"])


class WarpTiling(StageSpec):
    def threads(self, cfg):
        return layout(cfg)["THREADS"]

    def min_blocks_per_sm(self, cfg):
        # 000 §12.1 / §12.5: __launch_bounds__(256, 2) -> at most 128 registers, two blocks per SM.
        lay = layout(cfg)
        return 2 if lay["THREADS"] <= 256 and lay["FRAG_M"] * lay["FRAG_N"] <= 64 else 1

    def constraints(self, cfg):
        bm, bn, bk, wm, wn, wmi, wni, tm, tn = (cfg[k] for k in _KEYS)
        if min(bm, bn, bk, wm, wn, wmi, wni, tm, tn) < 1:
            return [f"{', '.join(_KEYS)} must all be positive"]
        if bm % wm or bn % wn:
            return [f"block_m ({bm}) and block_n ({bn}) must be multiples of warp_m ({wm}) and warp_n ({wn})"]
        if wm % wmi or wn % wni:
            return [f"warp_m ({wm}) and warp_n ({wn}) must be multiples of warp_m_iter ({wmi}) and warp_n_iter ({wni})"]
        sub_m, sub_n = wm // wmi, wn // wni
        if sub_m % tm or sub_n % tn:
            return [f"the warp sub-tile {sub_m}x{sub_n} (warp_m/warp_m_iter x warp_n/warp_n_iter) must be a multiple "
                    f"of thread_m x thread_n = {tm}x{tn}"]
        out = []
        lanes = (sub_m // tm) * (sub_n // tn)
        if lanes != 32:
            out.append(f"the warp sub-tile {sub_m}x{sub_n} holds {lanes} thread tiles of {tm}x{tn}, must hold exactly "
                       "32, one per lane (warp_m*warp_n = 32*warp_m_iter*warp_n_iter*thread_m*thread_n)")
        t = 32 * (bm // wm) * (bn // wn)
        if t > 1024:
            return out + [f"(block_m/warp_m)*(block_n/warp_n) = {t // 32} warps, must be at most 32"]
        if wmi * tm * wni * tn > 128:
            out.append(f"{wmi * tm}x{wni * tn} outputs per thread: at most 128 (more would spill)")
        return (out + slice_load_rules("A slice (block_m x block_k)", bm, bk, t, bk)
                + slice_load_rules("B slice (block_k x block_n)", bk, bn, t, min(bn, t)))

    def smem_bytes(self, cfg, variant=None):
        return 4 * cfg["block_k"] * (cfg["block_m"] + cfg["block_n"])

    def template(self, cfg, variant):
        return "gemmlab::S06WarpTiling<{}>".format(", ".join(str(cfg[k]) for k in _KEYS))

    def smem_accesses(self, cfg):
        """Warp 0, one BLOCK_K slice. A: a_frag's rows of a_tile over all k (WARP_M_ITER x
        THREAD_M rows), merged by the compiler along k; B: per k and sub-tile n, THREAD_N
        consecutive floats, merged."""
        lay = layout(cfg)
        bm, bn, bk, t = cfg["block_m"], cfg["block_n"], cfg["block_k"], lay["THREADS"]
        b_base = 4 * bm * bk
        a_runs = [lambda tid, m=m, i=i: (thread_origin(cfg, tid)[0] + m * lay["SUB_M"] + i) * bk
                  for m in range(cfg["warp_m_iter"]) for i in range(cfg["thread_m"])]
        b_runs = [lambda tid, k=k, n=n: k * bn + thread_origin(cfg, tid)[1] + n * lay["SUB_N"]
                  for k in range(bk) for n in range(cfg["warp_n_iter"])]
        return {
            "a_load": run_instructions(a_runs, bk, t),
            "b_load": run_instructions(b_runs, cfg["thread_n"], t, b_base),
            "a_store": slice_store_instructions(bm, bk, t, bk, 0),
            "b_store": slice_store_instructions(bk, bn, t, b_load_cols(cfg), b_base),
        }


STAGE = WarpTiling(
    id="s06",
    name="warp_tiling",
    adds="block -> warp -> thread hierarchy, 4x8 lane layout, WM/WN/WMITER/WNITER",
    notes="000 §6, 001 (kernel 10)",
    params=(Param("block_m", 128, "rows of D per block"),
            Param("block_n", 128, "columns of D per block"),
            Param("block_k", 8, "depth of the shared-memory slices"),
            Param("warp_m", 32, "rows of D per warp tile (block_m/warp_m warps down the block)"),
            Param("warp_n", 64, "columns of D per warp tile (block_n/warp_n warps across)"),
            Param("warp_m_iter", 1, "warp sub-tiles down the warp tile"),
            Param("warp_n_iter", 1, "warp sub-tiles across the warp tile"),
            Param("thread_m", 8, "rows of a lane's tile in each sub-tile"),
            Param("thread_n", 8, "columns of a lane's tile in each sub-tile")),
    # The compiler merges a_frag (along k) and b_frag (along n) into LDS.128; no scalar LDS is left.
    sass=("STS", "LDS.128", "BAR", "FFMA"),
    expected_pct_cublas=(80, 87),  # 000 §12.2 "Warp Tiling"
)
