"""s09 double_buffer (notes 000 §9): two shared-memory buffers and register prefetch: each K tile
issues the next tile's global loads first, then its FFMAs, then the shared stores into the other
buffer, and one barrier; fragments of step k+1 are read during step k. Shared layout and lanes:
s08c's Z-order lanes on s08a's padded rows (mirrors S09Layout in kernels/s09_double_buffer.cuh)."""
from .base import Param
from .s07_vectorized import PARAMS
from .s08a_bank_padding import BankPaddingSpec
from .s08c_bank_zorder import zorder_lane_col, zorder_lane_row, zorder_problem


class DoubleBufferSpec(BankPaddingSpec):
    struct = "S09DoubleBuffer"

    def lane_row(self, kcfg, lane):
        return zorder_lane_row(lane)

    def lane_col(self, kcfg, lane):
        return zorder_lane_col(lane)

    def smem_bytes(self, cfg, variant=None):
        return 2 * super().smem_bytes(cfg, variant)  # two buffers

    def constraints(self, cfg):
        out = super().constraints(cfg)
        if not out and zorder_problem(self.kernel_config(cfg)):
            out.append(zorder_problem(self.kernel_config(cfg)))
        return out


# Not the notes' 128 x 128 tile: 8 x 16 outputs per thread (two 8 x 8 sub-tiles 64 columns apart)
# over a 128 x 256 block, one block of 8 warps per SM (231 registers). Per k step 6 LDS.128 feed
# 128 FFMA (4 for 64 at 8 x 8) and the per-tile work is spread over twice the FFMAs; the notes'
# tile with double buffering needs more than 128 registers, so it cannot keep 2 blocks per SM.
_DEFAULTS = {"block_n": 256, "warp_n": 128, "warp_n_iter": 2, "min_blocks": 1}

STAGE = DoubleBufferSpec(
    id="s09",
    name="double_buffer",
    adds="two shared buffers + register prefetch; LDG -> FFMA -> STS, one barrier per K tile",
    notes="000 §9",
    params=tuple(Param(p.name, _DEFAULTS.get(p.name, p.default), p.doc) for p in PARAMS),
    sass=("LDG.E.128", "LDS.128", "STG.E.128", "FFMA", "BAR"),
    sass_scalar=("LDG", "LDS.128", "FFMA", "BAR"),
    aligned_path=True,
    expected_pct_cublas=(90, 97),  # 000 §12.2 "Double Buffering"
)
