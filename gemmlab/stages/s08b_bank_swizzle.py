"""s08b bank_swizzle (notes 000 §8.5 scheme 2): s07 with XOR-swizzled shared addresses, As[k][m]
at m ^ (k/4)*(128/BLOCK_K) (where As is written transposed) and Bs[k][n] at n ^ (bit 5 of n)*4:
the same conflicts as s08a fixed with no extra space. Mirrors S08bLayout in
kernels/s08b_bank_swizzle.cuh."""
from .s07_vectorized import PARAMS, VectorizedSpec


def a_swizzle(kcfg, variant=None):
    """S08bLayout::A_SWIZZLE: As is swizzled only where it is written transposed (K-major A, and
    the scalar path); an M-major A is stored with STS.128 along m, conflict-free already."""
    variant = variant or {"vec": 1, "a_k_major": 1}
    swizzle_a = not variant.get("vec") or variant.get("a_k_major", 1)
    return 128 // kcfg["block_k"] if swizzle_a else 0


class BankSwizzleSpec(VectorizedSpec):
    struct = "S08bBankSwizzle"

    def a_index(self, kcfg, k, m, variant=None):
        return k * kcfg["block_m"] + (m ^ ((k >> 2) * a_swizzle(kcfg, variant)))

    def b_index(self, kcfg, k, n, variant=None):
        return k * kcfg["block_n"] + (n ^ (((n >> 5) & 1) << 2))

    def constraints(self, cfg):
        out = super().constraints(cfg)
        if not out and (cfg["block_k"] not in (4, 8, 16, 32) or cfg["block_m"] % 32):
            out.append(f"bank swizzle: block_k ({cfg['block_k']}) must be 4, 8, 16 or 32 and block_m ({cfg['block_m']}) "
                       "a multiple of 32 (the XOR stays inside 32 floats)")
        return out


STAGE = BankSwizzleSpec(
    id="s08b",
    name="bank_swizzle",
    adds="XOR-swizzled shared-memory addresses: conflict-free A stores and B fragment loads, no padding",
    notes="000 §8.5 scheme 2",
    params=PARAMS,
    sass=("LDG.E.128", "LDS.128", "STG.E.128", "FFMA", "BAR"),
    sass_scalar=("LDG", "LDS.128", "FFMA", "BAR"),
    aligned_path=True,
    expected_pct_cublas=(70, 80),  # 000 §12.2 "Bank Conflict 消除"
)
