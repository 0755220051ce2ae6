"""s01 naive (notes 000 §3): one thread per element of D, rows of A and columns of B read straight
from global memory; consecutive threads take consecutive columns (coalesced along N)."""
from .base import Param, StageSpec


class Naive(StageSpec):
    def threads(self, cfg):
        return cfg["block_m"] * cfg["block_n"]

    def constraints(self, cfg):
        out = []
        if cfg["block_n"] % 32:
            out.append("block_n must be a multiple of 32 (a warp spans consecutive columns)")
        t = cfg["block_m"] * cfg["block_n"]
        if not 32 <= t <= 1024:
            out.append(f"block_m*block_n = {t} threads, must be 32..1024")
        return out

    def template(self, cfg, variant):
        return f"gemmlab::S01Naive<{cfg['block_m']}, {cfg['block_n']}>"


STAGE = Naive(
    id="s01",
    name="naive",
    adds="one thread per C element, coalesced along N",
    notes="000 §3",
    params=(Param("block_m", 8, "rows of D per block"), Param("block_n", 32, "columns of D per block")),
    sass=("FFMA", "LDG"),
    expected_pct_cublas=None,
)
