"""s07 vectorized (notes 000 §7, 001 kernel 6): over s06, float4 global loads and D stores in
either layout of A and B, As stored transposed (As[k][m]) and 128-bit shared loads for both
fragments. Same parameters and default config as s06 (the notes', 000 §6.3 / §12.1).

The index maths of kernels/s07_vectorized.cuh and tile_io.cuh are written once more here, under
the same names, for the bank model (``smem_accesses``) and the tests; s08a-s09 subclass this spec
and override the same pieces their .cuh overrides (``a_index``/``b_index``, ``lane_row``/
``lane_col``, the kernel config)."""
from __future__ import annotations

from .base import Param, Problem, StageSpec

MAX_SMEM_PER_BLOCK = 227 * 1024  # sm_90 opt-in limit for one block

KEYS = ("block_m", "block_n", "block_k", "warp_m", "warp_n", "warp_m_iter", "warp_n_iter", "thread_m", "thread_n")

PARAMS = (
    Param("block_m", 128, "rows of D per block"),
    Param("block_n", 128, "columns of D per block"),
    Param("block_k", 8, "depth of the shared-memory tiles"),
    Param("warp_m", 32, "rows of D per warp (block_m/warp_m warps down the tile)"),
    Param("warp_n", 64, "columns of D per warp (block_n/warp_n warps across the tile)"),
    Param("warp_m_iter", 1, "warp sub-tiles down the warp tile"),
    Param("warp_n_iter", 1, "warp sub-tiles across the warp tile"),
    Param("thread_m", 8, "rows of a thread tile (a multiple of 4: LDS.128)"),
    Param("thread_n", 8, "columns of a thread tile (a multiple of 4: LDS.128)"),
    Param("min_blocks", 2, "blocks per SM that __launch_bounds__ asks registers for (2: at most 128 per thread)"),
)


def layout(kcfg: dict) -> dict:
    """The derived sizes of the .cuh (same names), for a legal kernel config."""
    warps_n = kcfg["block_n"] // kcfg["warp_n"]
    warps = kcfg["block_m"] // kcfg["warp_m"] * warps_n
    sub_m = kcfg["warp_m"] // kcfg["warp_m_iter"]
    sub_n = kcfg["warp_n"] // kcfg["warp_n_iter"]
    return {"WARPS_N": warps_n, "WARPS": warps, "THREADS": 32 * warps, "SUB_M": sub_m, "SUB_N": sub_n,
            "LANES_M": sub_m // kcfg["thread_m"], "LANES_N": sub_n // kcfg["thread_n"],
            "FRAG_M": kcfg["warp_m_iter"] * kcfg["thread_m"], "FRAG_N": kcfg["warp_n_iter"] * kcfg["thread_n"]}


# ---- tile_io.cuh: which thread loads which element of an operand tile ------------------------
def float4_tile_map(rows: int, cols: int, threads: int, tid: int) -> list[tuple[int, int]]:
    """Float4Tile: the (row, first column) of each float4 thread ``tid`` loads, r = 0..COUNT-1."""
    col_vecs = cols // 4
    row_step = threads // col_vecs
    return [(tid // col_vecs + r * row_step, tid % col_vecs * 4) for r in range(rows // row_step)]


def scalar_tile_map(block_mn: int, block_k: int, threads: int, tid: int, k_unit: bool) -> list[tuple[int, int]]:
    """ScalarOperand: the (k, mn) of each element thread ``tid`` loads."""
    count = block_mn * block_k // threads
    if k_unit:
        return [(tid % block_k, tid // block_k + r * (threads // block_k)) for r in range(count)]
    return [(tid // block_mn + r * (threads // block_mn), tid % block_mn) for r in range(count)]


def operand_stores(block_mn: int, block_k: int, threads: int, tid: int, vec: bool, k_contiguous: bool):
    """Shared stores of one thread for one tile, in issue order: [(width_bytes, (k, mn))], the element
    a 4-byte store writes or the first of the 4 consecutive m (n) a 16-byte one writes.

    A float4 along k is stored transposed (4 x 32 bit: k, k+1, k+2, k+3 of one mn), a float4 along
    mn as one 128-bit store (As/Bs keep 4 consecutive m or n together)."""
    if not vec:
        return [(4, (k, mn)) for k, mn in scalar_tile_map(block_mn, block_k, threads, tid, k_contiguous)]
    if k_contiguous:
        out = []
        for mn, k in float4_tile_map(block_mn, block_k, threads, tid):
            out += [(4, (k + j, mn)) for j in range(4)]
        return out
    return [(16, (k, mn)) for k, mn in float4_tile_map(block_k, block_mn, threads, tid)]


class VectorizedSpec(StageSpec):
    struct = "S07Vectorized"

    # ---- the kernel's config and layout (overridden by s08a-d, s09) --------------------------
    def kernel_config(self, cfg: dict) -> dict:
        """The S07Vectorized-style parameters the kernel is instantiated with."""
        return {k: cfg[k] for k in KEYS}

    def a_floats(self, kcfg):
        return kcfg["block_k"] * kcfg["block_m"]

    def b_floats(self, kcfg):
        return kcfg["block_k"] * kcfg["block_n"]

    # Shared offsets (floats) of As[k][m] and Bs[k][n]; ``variant`` is the instantiation (None: the
    # aligned one with K-major A and N-major B), for layouts that depend on it (s08b).
    def a_index(self, kcfg, k, m, variant=None):
        return k * kcfg["block_m"] + m

    def b_index(self, kcfg, k, n, variant=None):
        return k * kcfg["block_n"] + n

    def lane_row(self, kcfg, lane):
        return lane // layout(kcfg)["LANES_N"]

    def lane_col(self, kcfg, lane):
        return lane % layout(kcfg)["LANES_N"]

    # ---- geometry as in run() ----------------------------------------------------------------
    def frag_row(self, kcfg, i):
        return i // kcfg["thread_m"] * layout(kcfg)["SUB_M"] + i % kcfg["thread_m"]

    def frag_col(self, kcfg, j):
        return j // kcfg["thread_n"] * layout(kcfg)["SUB_N"] + j % kcfg["thread_n"]

    def thread_origin(self, cfg, tid):
        """(thread_row, thread_col) of run()."""
        kcfg = self.kernel_config(cfg)
        lay = layout(kcfg)
        warp_id, lane_id = divmod(tid, 32)
        warp_row, warp_col = divmod(warp_id, lay["WARPS_N"])
        return (warp_row * kcfg["warp_m"] + self.lane_row(kcfg, lane_id) * kcfg["thread_m"],
                warp_col * kcfg["warp_n"] + self.lane_col(kcfg, lane_id) * kcfg["thread_n"])

    def thread_outputs(self, cfg, tid):
        """Every (row, col) of the block tile that thread ``tid`` computes and stores."""
        kcfg = self.kernel_config(cfg)
        lay = layout(kcfg)
        r0, c0 = self.thread_origin(cfg, tid)
        return [(r0 + self.frag_row(kcfg, i), c0 + self.frag_col(kcfg, j))
                for i in range(lay["FRAG_M"]) for j in range(lay["FRAG_N"])]

    # ---- StageSpec ----------------------------------------------------------------------------
    def threads(self, cfg):
        return layout(self.kernel_config(cfg))["THREADS"]

    def min_blocks_per_sm(self, cfg):
        return cfg["min_blocks"]

    def constraints(self, cfg):
        if min(cfg[k] for k in KEYS + ("min_blocks",)) < 1:
            return [f"{', '.join(KEYS)} and min_blocks must all be positive"]
        out = kernel_constraints(self.kernel_config(cfg))
        if not out and self.threads(cfg) * cfg["min_blocks"] > 2048:
            out.append(f"min_blocks ({cfg['min_blocks']}) blocks of {self.threads(cfg)} threads exceed 2048 threads per SM")
        if not out and self.smem_bytes(cfg) > MAX_SMEM_PER_BLOCK:
            out.append(f"{self.smem_bytes(cfg)} bytes of shared memory per block, more than the "
                       f"{MAX_SMEM_PER_BLOCK} an sm_90 block can have: use a smaller block_k or block tile")
        return out

    def smem_bytes(self, cfg, variant=None):
        kcfg = self.kernel_config(cfg)
        return 4 * (self.a_floats(kcfg) + self.b_floats(kcfg))

    def variants(self, cfg):
        return [{"vec": 1, "a_k_major": a, "b_n_major": b} for a in (1, 0) for b in (1, 0)] + [{"vec": 0}]

    def variant(self, cfg, problem: Problem):
        # aligned(4) already needs a unit stride in each operand and 16-byte row starts.
        if problem.aligned(4) and (problem.a_cs == 1 or problem.a_rs == 1) and (problem.b_cs == 1 or problem.b_rs == 1):
            return {"vec": 1, "a_k_major": int(problem.a_k_major), "b_n_major": int(problem.b_n_major)}
        return {"vec": 0}

    def template(self, cfg, variant):
        kcfg = self.kernel_config(cfg)
        vec = int(variant.get("vec", 0))
        flags = (vec, int(variant.get("a_k_major", 1)) if vec else 1, int(variant.get("b_n_major", 1)) if vec else 1)
        return "gemmlab::{}<{}>".format(self.struct, ", ".join(str(x) for x in [kcfg[k] for k in KEYS] + list(flags)))

    # ---- shared-memory addressing of warp 0 ---------------------------------------------------
    def smem_accesses(self, cfg, variant=None, k=0):
        """Warp 0's shared-memory instructions (see StageSpec.smem_accesses): fragment loads of
        step ``k`` and the stores of one tile in ``variant`` (default: the aligned nn one, K-major
        A and N-major B). Byte addresses from the start of the dynamic shared memory (stage 0)."""
        kcfg = self.kernel_config(cfg)
        lay = layout(kcfg)
        variant = variant or {"vec": 1, "a_k_major": 1, "b_n_major": 1}
        vec = bool(variant.get("vec"))
        b_base = 4 * self.a_floats(kcfg)
        origins = [self.thread_origin(cfg, lane) for lane in range(32)]
        a_load = [(16, [4 * self.a_index(kcfg, k, r + self.frag_row(kcfg, i), variant) for r, _ in origins])
                  for i in range(0, lay["FRAG_M"], 4)]
        b_load = [(16, [b_base + 4 * self.b_index(kcfg, k, c + self.frag_col(kcfg, j), variant) for _, c in origins])
                  for j in range(0, lay["FRAG_N"], 4)]
        threads = lay["THREADS"]
        a_k = bool(variant.get("a_k_major", 1))
        b_k = not bool(variant.get("b_n_major", 1))
        a_st = [operand_stores(kcfg["block_m"], kcfg["block_k"], threads, lane, vec, a_k) for lane in range(32)]
        b_st = [operand_stores(kcfg["block_n"], kcfg["block_k"], threads, lane, vec, b_k) for lane in range(32)]
        a_store = [(a_st[0][n][0], [4 * self.a_index(kcfg, *a_st[lane][n][1], variant) for lane in range(32)])
                   for n in range(len(a_st[0]))]
        b_store = [(b_st[0][n][0], [b_base + 4 * self.b_index(kcfg, *b_st[lane][n][1], variant) for lane in range(32)])
                   for n in range(len(b_st[0]))]
        return {"a_load": a_load, "b_load": b_load, "a_store": a_store, "b_store": b_store}


def kernel_constraints(kcfg: dict) -> list[str]:
    """The static_asserts of S07Vectorized, as messages."""
    bm, bn, bk, wm, wn, wmi, wni, tm, tn = (kcfg[k] for k in KEYS)
    if bm % wm or bn % wn:
        return [f"block_m ({bm}) and block_n ({bn}) must be multiples of warp_m ({wm}) and warp_n ({wn})"]
    warps = bm // wm * (bn // wn)
    out = []
    if warps > 32:
        out.append(f"(block_m/warp_m)*(block_n/warp_n) = {warps} warps, must be at most 32 (1024 threads)")
    if wm % wmi or wn % wni:
        return out + [f"warp_m ({wm}) and warp_n ({wn}) must be multiples of warp_m_iter ({wmi}) and warp_n_iter ({wni})"]
    sub_m, sub_n = wm // wmi, wn // wni
    if sub_m % tm or sub_n % tn or (sub_m // tm) * (sub_n // tn) != 32:
        out.append(f"the warp sub-tile {sub_m}x{sub_n} (warp_m/warp_m_iter x warp_n/warp_n_iter) must hold exactly 32 "
                   f"thread tiles of {tm}x{tn} (one per lane)")
    if tm % 4 or tn % 4:
        out.append(f"thread_m ({tm}) and thread_n ({tn}) must be multiples of 4 (LDS.128)")
    if bk % 4:
        out.append(f"block_k ({bk}) must be a multiple of 4 (float4 along k)")
    t = 32 * warps
    if t % bm or t % bn or t % bk:
        out.append(f"the thread count {t} must be a multiple of block_m ({bm}), block_n ({bn}) and block_k ({bk}) "
                   "(tile loaders)")
    if (bm * bk) % (4 * t) or (bn * bk) % (4 * t):
        out.append(f"every thread loads whole float4s of A and B: block_m*block_k ({bm * bk}) and block_n*block_k "
                   f"({bn * bk}) must be multiples of 4*threads ({4 * t})")
    if wmi * tm * wni * tn > 128:
        out.append(f"warp_m_iter*thread_m*warp_n_iter*thread_n = {wmi * tm * wni * tn} accumulators per thread is "
                   "more than 128 (would spill)")
    return out


STAGE = VectorizedSpec(
    id="s07",
    name="vectorized",
    adds="float4 global loads/stores, As stored transposed, LDS.128 for both tiles",
    notes="000 §7, 001 (kernel 6)",
    params=PARAMS,
    sass=("LDG.E.128", "LDS.128", "STG.E.128", "FFMA", "BAR"),
    sass_scalar=("LDG", "LDS.128", "FFMA", "BAR"),
    aligned_path=True,
    expected_pct_cublas=(60, 75),  # 000 §12.2 "Vectorized Load (float4)"
)
