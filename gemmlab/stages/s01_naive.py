"""s01 naive (notes 000 §3): one thread per element of D, rows of A and columns of B read straight
from global memory; consecutive threads take consecutive columns (coalesced along N). The K loop
is unrolled ``unroll`` times with every load of a trip issued before its multiply-adds."""
from .base import Param, StageSpec


class Naive(StageSpec):
    def threads(self, cfg):
        return cfg["block_m"] * cfg["block_n"]

    def min_blocks_per_sm(self, cfg):
        return cfg["min_blocks"]

    def constraints(self, cfg):
        out = []
        if min(cfg.values()) < 1:
            return ["block_m, block_n, unroll and min_blocks must be positive"]
        if cfg["block_n"] % 32:
            out.append("block_n must be a multiple of 32 (a warp spans consecutive columns)")
        t = cfg["block_m"] * cfg["block_n"]
        if not 32 <= t <= 1024:
            out.append(f"block_m*block_n = {t} threads, must be 32..1024")
        elif t * cfg["min_blocks"] > 2048:
            out.append(f"min_blocks ({cfg['min_blocks']}) blocks of {t} threads exceed 2048 threads per SM")
        if cfg["unroll"] > 32:
            out.append(f"unroll = {cfg['unroll']} must be 1..32")
        return out

    def template(self, cfg, variant):
        return f"gemmlab::S01Naive<{cfg['block_m']}, {cfg['block_n']}, {cfg['unroll']}>"


STAGE = Naive(
    id="s01",
    name="naive",
    adds="one thread per C element, coalesced along N",
    notes="000 §3",
    params=(Param("block_m", 8, "rows of D per block (warps sharing each B line in L1)"),
            Param("block_n", 32, "columns of D per block"),
            Param("unroll", 16, "k steps per trip of the K loop, all their loads issued first"),
            Param("min_blocks", 4, "blocks per SM that __launch_bounds__ asks registers for")),
    sass=("FFMA", "LDG"),
    expected_pct_cublas=None,
)
