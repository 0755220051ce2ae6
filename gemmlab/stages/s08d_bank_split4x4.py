"""s08d bank_split4x4 (notes 000 §8.5 scheme 4): s07 with each thread tile split into 4 x 4
sub-tiles spread across the warp tile, so a quarter-warp's B float4s are contiguous (no conflict).
The kernel is s07 instantiated with warp_m_iter*thread_m/4 x warp_n_iter*thread_n/4 warp sub-tiles
of 4 x 4 thread tiles (``kernel_config``), as in kernels/s08d_bank_split4x4.cuh."""
from .s07_vectorized import KEYS, PARAMS, VectorizedSpec


class Split4x4Spec(VectorizedSpec):
    struct = "S08dBankSplit4x4"

    def kernel_config(self, cfg):
        kcfg = super().kernel_config(cfg)
        kcfg["warp_m_iter"] = cfg["warp_m_iter"] * (cfg["thread_m"] // 4)
        kcfg["warp_n_iter"] = cfg["warp_n_iter"] * (cfg["thread_n"] // 4)
        kcfg["thread_m"] = kcfg["thread_n"] = 4
        return kcfg

    def constraints(self, cfg):
        if min(cfg.values()) >= 1 and (cfg["thread_m"] % 4 or cfg["thread_n"] % 4):
            return [f"thread_m ({cfg['thread_m']}) and thread_n ({cfg['thread_n']}) must be multiples of 4 "
                    "(4 x 4 sub-tiles)"]
        return super().constraints(cfg)

    def template(self, cfg, variant):
        # The .cuh takes the user's parameters and splits them itself.
        vec = int(variant.get("vec", 0))
        flags = (vec, int(variant.get("a_k_major", 1)) if vec else 1, int(variant.get("b_n_major", 1)) if vec else 1)
        return "gemmlab::{}<{}>".format(self.struct, ", ".join(str(x) for x in [cfg[k] for k in KEYS] + list(flags)))


STAGE = Split4x4Spec(
    id="s08d",
    name="bank_split4x4",
    adds="each 8x8 thread tile split into four 4x4 sub-tiles: conflict-free B fragment loads",
    notes="000 §8.5 scheme 4",
    params=PARAMS,
    sass=("LDG.E.128", "LDS.128", "STG.E.128", "FFMA", "BAR"),
    sass_scalar=("LDG", "LDS.128", "FFMA", "BAR"),
    aligned_path=True,
    expected_pct_cublas=(70, 80),  # 000 §12.2 "Bank Conflict 消除"
)
