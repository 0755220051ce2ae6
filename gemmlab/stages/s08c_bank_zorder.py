"""s08c bank_zorder (notes 000 §8.5 scheme 3): s07 with Z-order lanes, every quarter-warp a 2 x 4
block, so both fragment loads merge quarter-warps (4 wavefronts per k step instead of 10).
Mirrors S08cLayout in kernels/s08c_bank_zorder.cuh."""
from .s07_vectorized import PARAMS, VectorizedSpec, layout


def zorder_lane_row(lane):
    return (lane & 1) + (lane >> 4) * 2


def zorder_lane_col(lane):
    return (lane >> 1) & 7


def zorder_problem(kcfg):
    """The message when the lanes of a legal kernel config are not the 4 x 8 Z-order needs."""
    lay = layout(kcfg)
    if (lay["LANES_M"], lay["LANES_N"]) != (4, 8):
        return (f"Z-order lanes need a 4 x 8 lane grid: (warp_m/warp_m_iter)/thread_m x "
                f"(warp_n/warp_n_iter)/thread_n is {lay['LANES_M']} x {lay['LANES_N']}")
    return None


class ZOrderSpec(VectorizedSpec):
    struct = "S08cBankZorder"

    def lane_row(self, kcfg, lane):
        return zorder_lane_row(lane)

    def lane_col(self, kcfg, lane):
        return zorder_lane_col(lane)

    def constraints(self, cfg):
        out = super().constraints(cfg)
        if not out and zorder_problem(self.kernel_config(cfg)):
            out.append(zorder_problem(self.kernel_config(cfg)))
        return out


STAGE = ZOrderSpec(
    id="s08c",
    name="bank_zorder",
    adds="Z-order lane mapping (2x4 quarter-warps): both fragment loads merge, 4 wavefronts per k",
    notes="000 §8.5 scheme 3",
    params=PARAMS,
    sass=("LDG.E.128", "LDS.128", "STG.E.128", "FFMA", "BAR"),
    sass_scalar=("LDG", "LDS.128", "FFMA", "BAR"),
    aligned_path=True,
    expected_pct_cublas=(70, 80),  # 000 §12.2 "Bank Conflict 消除"
)
