"""s10 cp_async (notes 000 §10.1–10.4): the warp-tiled SIMT FFMA kernel fed by a multistage
cp.async pipeline (LDGSTS straight into shared memory, commit/wait_group, one barrier per K tile).

Variants: the size of the copies, 16-byte cp.async.cg where every row start of an operand is
16-byte aligned with a unit inner stride, else 4-byte cp.async.ca (``vec`` 1: both operands
16-byte; ``vec`` 0: both 4-byte, or with ``a_vec``/``b_vec`` 1 that one operand 16-byte, where A
is M-major and the 16-byte operand not K-major: see ``ONE_OPERAND_VEC``), times the shared layout
of each operand, which follows its global layout: ``a_k_major`` (A row-major: As[m][k], swizzled;
else As[k][m]) and ``b_n_major`` (B row-major: Bs[k][n]; else Bs[n][k], swizzled), as
gemmlab/problem.py's operand views decide them (``Problem.a_k_major``, ``Operand.vec_aligned``).
Every shape and stride works; D alignment is checked in the kernel (16-byte stores where possible).
"""
from __future__ import annotations

from .base import Param, StageSpec

SMEM_LIMIT = 227 * 1024  # H200 opt-in shared memory per block
SMEM_PER_SM = 228 * 1024  # H200 shared memory per SM (what min_blocks blocks must share)
RESERVED_SMEM = 1024     # static shared memory ptxas reserves in these kernels (cuobjdump: "shared 1024")
LANES_M, LANES_N = 4, 8
# (a_k_major, b_n_major, operand): where one aligned operand keeps its 16-byte copies beside an
# unaligned one on 4-byte copies; elsewhere both take 4-byte copies. Measured on the H200
# (scripts/operand_vec_probe.py, docs/stages/s10-s11.md): with A M-major it pays (4096x17x4096 tn
# 54.7 -> 44.3 us, 601x900x301 tn 25.9 -> 25.6, 512x333x777 tt 22.8 -> 22.2); a 16-byte K-major
# operand loses the turned [k][x] tile's layout (333x512x1024 tt 24.0 -> 24.6), and in nn even a
# 16-byte B beside the turned A lost at 64x64 (1001x2048x1023 135 -> 193 us).
ONE_OPERAND_VEC = ((0, 1, "a_vec"), (0, 1, "b_vec"), (0, 0, "a_vec"))


class CpAsync(StageSpec):
    def consumer_threads(self, cfg) -> int:
        """The threads of the warp tiling (WarpTileCore::THREADS); s11 may add a producer warp."""
        return (cfg["block_m"] // cfg["warp_m"]) * (cfg["block_n"] // cfg["warp_n"]) * 32

    def threads(self, cfg):
        return self.consumer_threads(cfg)

    def min_blocks_per_sm(self, cfg):
        return cfg.get("min_blocks", 1)

    def thread_tile(self, cfg) -> tuple[int, int]:
        return cfg["warp_m"] // LANES_M, cfg["warp_n"] // LANES_N

    # frag_prefetch=-1 (the default) loads B's fragments a group of 4 k ahead (mma/warp_tile.cuh
    # FRAG_PREFETCH) where a thread holds at most this many accumulators. H200
    # (scripts/frag_prefetch_probe.py, results/h200/logs/frag-prefetch-probe.txt): 64x64 x3 (8x4 a
    # thread) faster on 34 of 35 shapes, by 1-14% (1200^3 nn 0.908 -> 0.959 of cuBLAS, 160^3 x 100 nt
    # 0.725 -> 0.825), and 32x128 x2 (4x8) 1.510 -> 1.625 at 32x11008x4096 nt; 128x256 (16x8, 255
    # registers with it) 4-10% slower everywhere, 128x128 x2 (16x8) faster only where two blocks
    # share an SM (4096^3 nn +4%) and 20-40% slower where one block has it alone.
    FRAG_PREFETCH_MAX_ACC = 32

    def frag_prefetch(self, cfg) -> bool:
        """Whether the kernel loads B's fragments a group ahead (``frag_prefetch``; -1: the rule above)."""
        v = cfg.get("frag_prefetch", -1)
        if v >= 0:
            return bool(v)
        tm, tn = self.thread_tile(cfg)
        return tm * tn <= self.FRAG_PREFETCH_MAX_ACC

    def kernel_name(self, cfg, variant):
        # the rule's choice is named (fp1) where it prefetches; elsewhere the names stay as before
        if "frag_prefetch" in cfg:
            cfg = {**cfg, "frag_prefetch": 1 if self.frag_prefetch(cfg) else -1}
        return super().kernel_name(cfg, variant)

    def constraints(self, cfg):
        out = []
        bm, bn, bk, wm, wn = (cfg[k] for k in ("block_m", "block_n", "block_k", "warp_m", "warp_n"))
        if wm <= 0 or wn <= 0 or bm % wm or bn % wn:
            out.append(f"warp tile {wm}x{wn} must divide the block tile {bm}x{bn}")
        if wm % 16:
            out.append(f"warp_m={wm} must be a multiple of 16 (4 lanes x groups of 4 rows)")
        if wn % 32:
            out.append(f"warp_n={wn} must be a multiple of 32 (8 lanes x chunks of 4 columns)")
        if bk not in (8, 16, 32):
            out.append(f"block_k={bk} must be 8, 16 or 32 (one 32/64/128-byte swizzle span per [x][k] row)")
        if not out:
            t = self.consumer_threads(cfg)
            if not 32 <= t <= 1024:
                out.append(f"threads = (block_m/warp_m)*(block_n/warp_n)*32 = {t} must be 32..1024")
            tm, tn = self.thread_tile(cfg)
            if tm * tn > 128:
                out.append(f"thread tile {tm}x{tn} = {tm * tn} accumulators; at most 128 fit in registers")
        if bk in (8, 16, 32) and (cfg["k_unroll"] < 1 or (bk // 4) % cfg["k_unroll"]):
            out.append(f"k_unroll={cfg['k_unroll']} must divide block_k/4 = {bk // 4} (groups of 4 k per loop trip)")
        if not 2 <= cfg["stages"] <= self.max_stages:
            out.append(f"stages={cfg['stages']} must be 2..{self.max_stages}")
        if cfg.get("a_swizzle", 1) not in (0, 1):
            out.append(f"a_swizzle={cfg['a_swizzle']} must be 0 or 1")
        if cfg.get("group_m", 1) < 1:
            out.append("group_m must be >= 1")
        if cfg.get("transpose_in", 0) not in (0, 1):
            out.append(f"transpose_in={cfg['transpose_in']} must be 0 or 1")
        if cfg.get("frag_prefetch", -1) not in (-1, 0, 1):
            out.append(f"frag_prefetch={cfg['frag_prefetch']} must be -1 (auto), 0 or 1")
        if cfg.get("edge_shift", 0) not in (0, 1):
            out.append(f"edge_shift={cfg['edge_shift']} must be 0 or 1")
        if cfg.get("frag_carry", 0) not in (0, 1):
            out.append(f"frag_carry={cfg['frag_carry']} must be 0 or 1")
        if cfg.get("ffma_serpentine", 0) not in (0, 1):
            out.append(f"ffma_serpentine={cfg['ffma_serpentine']} must be 0 or 1")
        ck = cfg.get("carry_copy_k", -1)
        if ck != -1 and not (cfg.get("frag_carry", 0) == 1 and bk in (8, 16, 32) and 0 <= ck <= bk - 2):
            out.append(f"carry_copy_k={ck} must be -1, or with frag_carry=1 a k of 0..block_k-2 = {bk - 2}")
        chunk = cfg.get("carry_chunk", 0)
        if chunk and not (cfg.get("frag_carry", 0) == 1 and ck == -1 and bk in (8, 16, 32) and 2 <= chunk < bk
                          and bk % chunk == 0):
            out.append(f"carry_chunk={chunk} must be 0, or with frag_carry=1 and carry_copy_k=-1 a divisor of "
                       f"block_k = {bk} from 2 to {bk // 2}")
        if not out:
            smem = self.smem_bytes(cfg, {}) + RESERVED_SMEM
            if smem > SMEM_LIMIT:
                out.append(f"shared memory {smem} B exceeds {SMEM_LIMIT} B per block; lower stages, block_k or the tile")
            mb = cfg.get("min_blocks", 1)
            if not 1 <= mb <= 8:
                out.append(f"min_blocks={mb} must be 1..8")
            elif mb > 1 and mb * smem > SMEM_PER_SM:
                out.append(f"min_blocks={mb} blocks of {smem} B shared memory exceed {SMEM_PER_SM} B per SM")
            elif mb * self.threads(cfg) > 2048:
                out.append(f"min_blocks={mb} blocks of {self.threads(cfg)} threads exceed 2048 threads per SM")
            out += self.copy_constraints(cfg)
        return out

    def copy_constraints(self, cfg) -> list[str]:
        """TileCopier's static_asserts: every tile copy splits evenly over the threads."""
        out = []
        t = self.consumer_threads(cfg)
        bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
        for unit in (4, 1):
            for name, inners in (("A", (bk, bm)), ("B", (bn, bk))):
                for inner in inners:
                    per_row = inner // unit
                    units = bm * bk // unit if name == "A" else bn * bk // unit
                    if units % t or (t % per_row and per_row % t):
                        out.append(f"{name} tile copy ({units} copies of {4 * unit} B, {per_row} per row) "
                                   f"does not split evenly over {t} threads")
        if cfg.get("transpose_in", 0):  # TransposingCopier: 8 k x 4 x per warp
            t8 = t // 8
            for name, x in (("A", bm), ("B", bn)):
                if bk % 8 or x % t8:
                    out.append(f"transpose_in: the {name} tile copy ({x} rows x {bk} k, 8 k x {t8} rows per pass "
                               f"of {t} threads) does not split evenly; block_k must be 8, 16 or 32 and the rows a "
                               f"multiple of threads/8, or transpose_in=0")
        return sorted(set(out))

    @staticmethod
    def transposed_in(cfg, variant) -> tuple[bool, bool]:
        """S10CpAsync::A_T / B_T: whether A / B (4-byte copies, ``transpose_in``) land as [k][x]
        tiles: A in nn, B in tt (one operand at most; nt keeps both). With no variant (the
        constraints: one size per config) both count."""
        if not cfg.get("transpose_in", 0):
            return False, False
        if not variant:
            return True, True
        a_vec, b_vec = operand_vec(variant)
        a_k, b_n = bool(variant.get("a_k_major", 1)), bool(variant.get("b_n_major", 1))
        return not a_vec and a_k and b_n, not b_vec and not a_k and not b_n  # nn: A, tt: B, nt: neither

    @staticmethod
    def smem_layout(cfg, variant) -> dict:
        """The layout the core reads: the variant's majorness, with ``a_ld``/``b_ld`` the row strides
        of [k][x] tiles (the K-major operands that ``transpose_in`` turns around: padded by 4)."""
        a_t, b_t = CpAsync.transposed_in(cfg, variant)
        return {**variant, "a_k_major": 0 if a_t else variant.get("a_k_major", 1),
                "b_n_major": 1 if b_t else variant.get("b_n_major", 1),
                "a_ld": cfg["block_m"] + (4 if a_t else 0), "b_ld": cfg["block_n"] + (4 if b_t else 0),
                "a_t": a_t, "b_t": b_t}

    max_stages = 8

    @staticmethod
    def stage_buffer_bytes(cfg) -> int:
        """The pipeline's stage buffers without transpose_in's padding: stages x (A tile + B tile)."""
        return cfg["stages"] * (cfg["block_m"] + cfg["block_n"]) * cfg["block_k"] * 4

    def smem_bytes(self, cfg, variant):
        a_t, b_t = self.transposed_in(cfg, variant)
        pad = 4 * (int(a_t) + int(b_t))  # floats per k row of the padded [k][x] tiles
        return CpAsync.stage_buffer_bytes(cfg) + cfg["stages"] * pad * cfg["block_k"] * 4

    # ---- split-K in a cluster (kernels/epilogue/cluster_reduce.cuh; s10 and s11) ---------------
    MAX_CLUSTER = 8  # a portable cluster
    # 2 slices on any grid: on the H200 (scripts/cluster_split_probe.py, docs/stages/s10-s11.md)
    # 2 slices in a cluster beat the workspace path by its whole cost (s11, 4096x512x2048: 187.6
    # against 200.3 us).
    DEFAULT_CLUSTER = (2,)
    # 3 to RESIDENT_CLUSTER_MAX slices only for tiles of at most RESIDENT_CLUSTER_AREA outputs and
    # only where every cluster of the grid is resident at once (scripts/cluster_occupancy_probe.py,
    # results/h200/logs/cluster-occupancy-probe.txt and -2.txt). There, 64x64 tiles won 22 of 23
    # (slices, shape) pairs against the workspace at the same split (120x897x759 tn, 4 slices:
    # 13.1 against 17.4 us); larger tiles 12 of 20 (128x64 x4, 212x236x704x8 nn: 3 slices
    # 38.7 against 41.0 us, 4 slices 40.1 against 35.0; 128x256 x4 on 896x896x4096 tn 188.3
    # against 181.1), and `auto` picked them where a 64x64 tile was faster (860x820x580 nt:
    # 256x128 x4 in a cluster 46.7 us, 64x64 x2 33.9). Past residency clusters lose
    # (288x1179x879 nn, 95 clusters of 4 where 92 fit: 40.3 against 33.5; 768x768x2048 nn as
    # 128x256, 18 clusters of 6 where 17 fit: 141.5 against 83.7).
    RESIDENT_CLUSTER_MAX = 8
    RESIDENT_CLUSTER_AREA = 64 * 64
    # The clusters resident at once are fewer than the block slots / slices: a cluster's blocks
    # share one GPC, whose slots do not divide evenly (H200, cuOccupancyMaxActiveClusters: 3
    # blocks per SM, 124, 92, 69, 62, 47, 45 clusters of 3..8 against 132, 99, 79, 66, 56, 49 slot
    # groups; 1 block per SM, 39, 30, 22, 17, 15, 15 against 44, 33, 26, 22, 18, 16). 0.8 of the
    # slot groups stays under every count.
    CLUSTER_PACKING = 0.8

    def resident_clusters(self, cfg, splits, sms) -> int:
        """Clusters of ``splits`` blocks the GPU holds at once, by the config's min_blocks per SM
        (the occupancy it is built for; the driver may fit more)."""
        return int(sms * self.min_blocks_per_sm(cfg) * self.CLUSTER_PACKING / splits)

    def cluster_slices(self, cfg, splits, forced=False, clusters=0, sms=0):
        """The kernel can: 2..8 slices, and the partial tile (rows of block_n + 8 floats) fits in
        the stage buffers (the kernels' static_asserts). By default DEFAULT_CLUSTER slices on any
        grid, up to RESIDENT_CLUSTER_MAX for small tiles where all ``clusters`` are resident on
        ``sms`` SMs.
        Asked only on CLUSTER_MIN_CC and later (stages/base.py)."""
        can = (2 <= splits <= self.MAX_CLUSTER
               and cfg["block_m"] * (cfg["block_n"] + 8) * 4 <= self.stage_buffer_bytes(cfg))
        if forced or not can or splits in self.DEFAULT_CLUSTER:
            return can
        return (splits <= self.RESIDENT_CLUSTER_MAX and cfg["block_m"] * cfg["block_n"] <= self.RESIDENT_CLUSTER_AREA
                and 0 < clusters <= self.resident_clusters(cfg, splits, sms))

    def kernel_attributes(self, cfg, variant):
        k = variant.get("cluster_k", 1)
        return f"__cluster_dims__(1, {k}, 1) " if k > 1 else ""

    # ---- instantiation -------------------------------------------------------------------
    def variants(self, cfg):
        # The 16-byte instantiations first, then one operand 16-byte, then none (CI checks `sass` on
        # the first, `sass_scalar` on the last).
        majors = [(a, b) for a in (1, 0) for b in (1, 0)]
        return ([{"vec": 1, "a_k_major": a, "b_n_major": b} for a, b in majors]
                + [{"vec": 0, "a_k_major": a, "b_n_major": b, one: 1} for a, b, one in ONE_OPERAND_VEC]
                + [{"vec": 0, "a_k_major": a, "b_n_major": b} for a, b in majors])

    def variant(self, cfg, problem):
        # Every layout fact is the problem's (gemmlab/problem.py): 16-byte alignment and majorness.
        a_vec, b_vec = problem.operand("a").vec_aligned, problem.operand("b").vec_aligned
        a_k, b_n = int(problem.a_k_major), int(problem.b_n_major)
        out = {"vec": int(a_vec and b_vec), "a_k_major": a_k, "b_n_major": b_n}
        one = "a_vec" if a_vec else "b_vec"
        if a_vec != b_vec and (a_k, b_n, one) in ONE_OPERAND_VEC:
            out[one] = 1
        if problem.splits > 1 and problem.d_ss == 0:  # the slices share D: added in a cluster
            out["cluster_k"] = problem.splits
        return out

    def template(self, cfg, variant):
        b = lambda x: "true" if x else "false"  # noqa: E731
        a_vec, b_vec = operand_vec(variant)
        return (f"gemmlab::S10CpAsync<{cfg['block_m']}, {cfg['block_n']}, {cfg['block_k']}, {cfg['warp_m']}, "
                f"{cfg['warp_n']}, {cfg['k_unroll']}, {b(cfg['a_swizzle'])}, {cfg['stages']}, {b(a_vec)}, {b(b_vec)}, "
                f"{b(variant['a_k_major'])}, {b(variant['b_n_major'])}, {b(cfg['transpose_in'] and not (a_vec and b_vec))}, "
                f"{b(self.frag_prefetch(cfg))}, {variant.get('cluster_k', 1)}, {b(cfg.get('edge_shift', 0))}"
                f"{self._tail_args(cfg)}>")

    @staticmethod
    def _tail_args(cfg) -> str:
        """FRAG_CARRY, CARRY_COPY_K, FFMA_SERPENTINE and CARRY_CHUNK, written up to the last one set
        (older sources unchanged)."""
        args = [("true" if cfg.get("frag_carry", 0) else "false", "false"),
                (str(cfg.get("carry_copy_k", -1)), "-1"),
                ("true" if cfg.get("ffma_serpentine", 0) else "false", "false"),
                (str(cfg.get("carry_chunk", 0)), "0")]
        while args and args[-1][0] == args[-1][1]:
            args.pop()
        return "".join(f", {v}" for v, _ in args)

    @staticmethod
    def outer_product(cfg, variant) -> bool:
        """WarpTileCore::OUTER_PRODUCT: the core reads A M-major and B N-major (tn, or nn / tt with
        their K-major operand turned by ``transpose_in``), where ``frag_carry`` and
        ``ffma_serpentine`` apply."""
        layout = CpAsync.smem_layout(cfg, variant)
        return not layout["a_k_major"] and bool(layout["b_n_major"])

    @staticmethod
    def carries(cfg, variant) -> bool:
        """S10CpAsync::CARRY: ``frag_carry`` where the core reads the outer-product layout."""
        return bool(cfg.get("frag_carry", 0)) and CpAsync.outer_product(cfg, variant)

    # ---- shared-memory addressing for the bank model ---------------------------------------
    def smem_accesses(self, cfg, variant=None):
        """Warp 0's shared-memory instructions. Loads: the LDS.128 of one k group (4 k steps: one
        LDS.128 covers 4 k of a [x][k] row, or one k of 4 rows/columns of a [k][x] tile), for the
        variant given (default: the first, A and B row-major). Stores: the LDGSTS of one K tile."""
        variant = variant or self.variants(cfg)[0]
        layout = self.smem_layout(cfg, variant)
        return {**fragment_loads(cfg, layout), **copy_stores(cfg, layout, self.threads(cfg))}


def operand_vec(variant) -> tuple[bool, bool]:
    """Whether A / B have the 16-byte copies in this variant (``vec``, or ``a_vec``/``b_vec`` alone)."""
    both = bool(variant.get("vec", 1))
    return both or bool(variant.get("a_vec", 0)), both or bool(variant.get("b_vec", 0))


def swizzle_chunk(block_k: int, x: int, c: int) -> int:
    """WarpTileCore::swizzle_chunk: TMA SWIZZLE_{32,64,128}B for rows of block_k floats."""
    row_bytes, chunks = 4 * block_k, block_k // 4
    return c ^ ((x * row_bytes // 128) & (chunks - 1))


def _lane_bases(cfg, variant, lane):
    """(first row, first column) of lane `lane` of warp 0 (WarpTileCore's constructor)."""
    lane_row, lane_col = lane // LANES_N, lane % LANES_N
    m_base = lane_row if a_rows_swizzled(cfg, variant) else lane_row * 4
    n_base = lane_col * 4 if variant["b_n_major"] else lane_col
    return m_base, n_base


def a_rows_swizzled(cfg, variant) -> bool:
    """WarpTileCore::A_ROWS_SWIZZLED: As[m][k] swizzled, a thread's rows 4 apart."""
    return bool(variant["a_k_major"] and cfg.get("a_swizzle", 1))


def row_offsets(cfg, variant) -> list[int]:
    """WarpTileCore::row_of: a thread's rows relative to its first row."""
    tm = cfg["warp_m"] // LANES_M
    if a_rows_swizzled(cfg, variant):
        return [i * LANES_M for i in range(tm)]
    return [(i // 4) * LANES_M * 4 + i % 4 for i in range(tm)]


def fragment_loads(cfg, variant, b_scalar=False) -> dict:
    """(bytes per lane, byte addresses within a stage's A or B tile) of warp 0's fragment loads
    for k group 0: LDS.128, or with ``b_scalar`` a K-major B one k at a time (s11's LDS.32)."""
    bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
    a_ld, b_ld = variant.get("a_ld", bm), variant.get("b_ld", bn)  # [k][x] row strides (smem_layout)
    tm, tn = cfg["warp_m"] // LANES_M, cfg["warp_n"] // LANES_N
    g = 0
    a_insns, b_insns = [], []
    bases = [_lane_bases(cfg, variant, lane) for lane in range(32)]
    if variant["b_n_major"]:
        for kk in range(4):
            for jq in range(tn // 4):
                b_insns.append((16, [4 * ((4 * g + kk) * b_ld + nb + jq * LANES_N * 4) for _, nb in bases]))
    else:
        for j in range(tn):
            col = [4 * ((nb + j * LANES_N) * bk + swizzle_chunk(bk, nb, g) * 4) for _, nb in bases]
            if b_scalar:
                b_insns += [(4, [x + 4 * kk for x in col]) for kk in range(4)]
            else:
                b_insns.append((16, col))
    if variant["a_k_major"]:
        swz = a_rows_swizzled(cfg, variant)
        for row in row_offsets(cfg, variant):
            a_insns.append((16, [4 * ((mb + row) * bk + (swizzle_chunk(bk, mb + row, g) if swz else g) * 4)
                                 for mb, _ in bases]))
    else:
        for kk in range(4):
            for iq in range(tm // 4):
                a_insns.append((16, [4 * ((4 * g + kk) * a_ld + mb + iq * LANES_M * 4) for mb, _ in bases]))
    return {"a_load": a_insns, "b_load": b_insns}


def transposing_stores(x: int, bk: int, ld: int, threads: int) -> list:
    """TransposingCopier: warp 0's 4-byte copies of one K tile into a [k][x] tile of row stride ld
    (lane l, iteration i: k = l mod 8 + 8 (i mod bk/8), row = l div 8 + (threads/8)(i div bk/8))."""
    t8, octets = threads // 8, bk // 8
    return [(4, [4 * ((lane % 8 + 8 * (it % octets)) * ld + lane // 8 + t8 * (it // octets)) for lane in range(32)])
            for it in range(x * bk // threads)]


def copy_stores(cfg, variant, threads) -> dict:
    """Shared-memory byte addresses written by warp 0's cp.async instructions for one K tile
    (``variant``: the layout the core reads, CpAsync.smem_layout)."""
    bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
    a_vec, b_vec = operand_vec(variant)
    out = {}
    if variant.get("a_t"):
        out["a_store"] = transposing_stores(bm, bk, variant["a_ld"], threads)
    if variant.get("b_t"):
        out["b_store"] = transposing_stores(bn, bk, variant["b_ld"], threads)
    for kind, vec, (outer, inner, swizzle) in (
        ("a_store", a_vec, (bm, bk, a_rows_swizzled(cfg, variant)) if variant["a_k_major"] else (bk, bm, False)),
        ("b_store", b_vec, (bk, bn, False) if variant["b_n_major"] else (bn, bk, True)),
    ):
        if kind in out:
            continue
        unit = 4 if vec else 1
        per_row = inner // unit
        units = outer * per_row
        insns = []
        for it in range(-(-units // threads)):
            addrs = []
            for lane in range(32):
                u = lane + it * threads
                if u >= units:
                    addrs.append(None)
                    continue
                o, i = u // per_row, (u % per_row) * unit
                f = swizzle_chunk(bk, o, i // 4) * 4 + i % 4 if swizzle else i
                addrs.append(4 * (o * inner + f))
            insns.append((4 * unit, addrs))
        out[kind] = insns
    return out


# The knob of the core both s10 and s11 run (mma/warp_tile.cuh), with CpAsync.frag_prefetch's rule.
FRAG_PREFETCH_PARAM = Param(
    "frag_prefetch", -1, "1: B's fragments of the next group of 4 k are loaded before this group's FFMAs, into a "
    "second set of registers (mma/warp_tile.cuh FRAG_PREFETCH); 0: ptxas hoists loads within one trip of k_unroll "
    f"groups; -1: 1 where a thread holds at most {CpAsync.FRAG_PREFETCH_MAX_ACC} accumulators (measured faster "
    "there), else 0",
    named_at_default=False)

STAGE = CpAsync(
    id="s10",
    name="cp_async",
    adds="cp.async multistage pipeline (3-4 stages), commit/wait_group, LDGSTS straight to shared memory",
    notes="000 §10.1-10.4",
    params=(
        Param("block_m", 128, "rows of D per block"),
        Param("block_n", 256, "columns of D per block"),
        Param("block_k", 32, "K depth of one pipeline stage (8, 16 or 32)"),
        Param("warp_m", 64, "rows of D per warp (thread tile rows = warp_m/4)"),
        Param("warp_n", 64, "columns of D per warp (thread tile columns = warp_n/8)"),
        Param("k_unroll", 2, "groups of 4 k unrolled per trip of the inner loop (divides block_k/4)"),
        Param("a_swizzle", 0, "1: row-major A as As[m][k] XOR-swizzled, a thread's rows 4 apart; 0: plain, groups of 4 rows"),
        Param("stages", 3, "shared-memory buffers in the cp.async pipeline"),
        Param("group_m", 8, "tile rows per L2 group in the block order"),
        Param("min_blocks", 1, "blocks per SM that __launch_bounds__ asks registers for (small tiles: 2-4)"),
        Param("transpose_in", 1, "1: the K-major operand of nn (A) or tt (B), where it has 4-byte copies (rows not "
              "16-byte aligned), is copied into a [k][x] tile (rows padded by 4 floats), so the core reads A M-major and "
              "B N-major; 0: kept as [x][k] (nt always)",
              named_at_default=False),
        FRAG_PREFETCH_PARAM,
        Param("edge_shift", 0, "1: a block whose tile hangs over the M (N) edge of an operand on 4-byte copies starts "
              "at M - block_m (N - block_n) where M >= block_m, so its copies test only the last K tile, and its "
              "epilogue skips the rows (columns) the block before it owns (s11's stand-in for unaligned operands sets 1: "
              "s11_tma.STAND_IN_EDGE_SHIFT); 0: such a block tests every copy of every K tile (16-byte copies always do)",
              named_at_default=False),
        Param("frag_carry", 0, "1: where the core reads A M-major and B N-major (tn; nn and tt with transpose_in), "
              "the K tile's barrier sits before the last k of the tile before, whose fragments are already in "
              "registers: after it a warp loads the next tile's first k, issues the copies and multiplies the "
              "carried k (s10_cp_async.cuh FRAG_CARRY); 0: the barrier before a tile's first k (other layouts always)",
              named_at_default=False),
        Param("carry_copy_k", -1, "with frag_carry=1: the copies that refill a stage go after the FFMAs of this k "
              "(0..block_k-2) of the tile after the barrier that frees it, as cuBLAS issues its copies late in a tile; "
              "-1: right after that barrier", named_at_default=False),
        Param("carry_chunk", 0, "with frag_carry=1 (and carry_copy_k=-1): the carried loop runs this many k's a trip "
              "(a divisor of block_k, below it), a tile's last trip crossing the barrier, so the loop's code is that "
              "many k's of FFMAs instead of a whole tile's (s10_cp_async.cuh CARRY_CHUNK); 0: a whole tile a trip",
              named_at_default=False),
        Param("ffma_serpentine", 0, "1: where the core reads A M-major and B N-major, the runs of FFMAs of odd rows go "
              "right to left (mma/warp_tile.cuh FFMA_ROTATE 2), so ptxas keeps two B values in the reuse cache and "
              "fewer FFMAs read two registers of one bank; 0: every run left to right", named_at_default=False),
    ),
    sass=("LDGSTS", "LDGDEPBAR", "DEPBAR", "LDS.128", "FFMA"),
    sass_scalar=("LDGSTS", "LDGDEPBAR", "DEPBAR", "LDS.128", "FFMA"),
    aligned_path=True,
    min_cc=80,
    expected_pct_cublas=(90, 97),
)
