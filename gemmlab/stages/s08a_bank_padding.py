"""s08a bank_padding (notes 000 §8.5 scheme 1): s07 with As[BLOCK_K][BLOCK_M + 4] (the transposed
A store becomes conflict-free) and Bs rows padded by 4 floats after every 32 (the B fragment loads
become conflict-free). Mirrors S08aLayout in kernels/s08a_bank_padding.cuh."""
from .s07_vectorized import PARAMS, VectorizedSpec


def a_stride(kcfg):
    return kcfg["block_m"] + 4


def b_stride(kcfg):
    row = kcfg["block_n"] + kcfg["block_n"] // 32 * 4
    return row + 4 if row % 8 == 0 else row  # 4 mod 8: K-major B's transposed store


class BankPaddingSpec(VectorizedSpec):
    struct = "S08aBankPadding"

    def a_floats(self, kcfg):
        return kcfg["block_k"] * a_stride(kcfg)

    def b_floats(self, kcfg):
        return kcfg["block_k"] * b_stride(kcfg)

    def a_index(self, kcfg, k, m, variant=None):
        return k * a_stride(kcfg) + m

    def b_index(self, kcfg, k, n, variant=None):
        return k * b_stride(kcfg) + n + (n >> 5) * 4

    def constraints(self, cfg):
        out = super().constraints(cfg)
        if not out and (cfg["block_m"] % 8 or cfg["block_n"] % 32):
            out.append(f"bank padding: block_m ({cfg['block_m']}) must be a multiple of 8 and block_n "
                       f"({cfg['block_n']}) of 32")
        return out


STAGE = BankPaddingSpec(
    id="s08a",
    name="bank_padding",
    adds="As[BK][BM+4] and Bs padded every 32 floats: conflict-free A stores and B fragment loads",
    notes="000 §8.5 scheme 1",
    params=PARAMS,
    sass=("LDG.E.128", "LDS.128", "STG.E.128", "FFMA", "BAR"),
    sass_scalar=("LDG", "LDS.128", "FFMA", "BAR"),
    aligned_path=True,
    expected_pct_cublas=(70, 80),  # 000 §12.2 "Bank Conflict 消除"
)
