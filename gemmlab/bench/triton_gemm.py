"""The Triton baseline: a tiled FP32 matmul with ``tl.dot(..., input_precision="ieee")`` (FFMA,
no TF32; or "tf32x3", Triton's FP32-accurate tensor-core path, the baseline of s13), grouped block order for L2 reuse, any strides, masked edges, and the BLAS epilogue
``D = alpha * A B + beta * D`` (``beta == 0`` never reads D). A handful of autotune configs; the
tuning result is cached per (M, N, K) for the process.

Imports triton at module level: import this module only where Triton is installed.
"""
from __future__ import annotations

import triton
import triton.language as tl

# (BLOCK_M, BLOCK_N, BLOCK_K, num_warps, num_stages). FP32 "ieee" dots run on the FMA pipe, so
# the tile sizes follow the SIMT ladder's (128x128 with 8 warps = 64 accumulators per thread),
# plus a 128x256 tile and two smaller ones for small problems.
CONFIGS = (
    (128, 128, 32, 8, 3),
    (128, 128, 16, 8, 4),
    (128, 256, 16, 8, 3),
    (64, 128, 32, 4, 4),
    (64, 64, 32, 4, 4),
)


def _configs():
    return [triton.Config({"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": 8}, num_warps=w, num_stages=s)
            for bm, bn, bk, w, s in CONFIGS]


def _divides(args) -> bool:
    return (args["M"] % args["BLOCK_M"] == 0 and args["N"] % args["BLOCK_N"] == 0
            and args["K"] % args["BLOCK_K"] == 0)


@triton.autotune(configs=_configs(), key=["M", "N", "K", "INPUT_PRECISION"], restore_value=["d_ptr"])
@triton.heuristics({"EVEN": _divides})
@triton.jit
def _gemm_kernel(a_ptr, b_ptr, d_ptr, M, N, K,
                 stride_am, stride_ak, stride_bk, stride_bn, stride_dm, stride_dn,
                 alpha, beta,
                 BETA_ZERO: tl.constexpr, EVEN: tl.constexpr, INPUT_PRECISION: tl.constexpr,
                 BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr, GROUP_M: tl.constexpr):
    # Grouped order: GROUP_M tile rows are walked column by column, so blocks resident together
    # share rows of A and columns of B in L2.
    pid = tl.program_id(0)
    tiles_m = tl.cdiv(M, BLOCK_M)
    tiles_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * tiles_n
    first_m = (pid // per_group) * GROUP_M
    rows_here = min(tiles_m - first_m, GROUP_M)
    tile_m = first_m + (pid % per_group) % rows_here
    tile_n = (pid % per_group) // rows_here

    # 64-bit offsets: row * stride passes 2**31 elements on large problems.
    rows = (tile_m * BLOCK_M + tl.arange(0, BLOCK_M)).to(tl.int64)
    cols = (tile_n * BLOCK_N + tl.arange(0, BLOCK_N)).to(tl.int64)
    ks = tl.arange(0, BLOCK_K)
    a_ptrs = a_ptr + rows[:, None] * stride_am + ks[None, :] * stride_ak
    b_ptrs = b_ptr + ks[:, None] * stride_bk + cols[None, :] * stride_bn
    row_in = rows[:, None] < M
    col_in = cols[None, :] < N

    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)
    for kt in range(0, tl.cdiv(K, BLOCK_K)):
        if EVEN:  # every tile full: no masks
            a = tl.load(a_ptrs)
            b = tl.load(b_ptrs)
        else:
            k_left = K - kt * BLOCK_K
            a = tl.load(a_ptrs, mask=row_in & (ks[None, :] < k_left), other=0.0)
            b = tl.load(b_ptrs, mask=(ks[:, None] < k_left) & col_in, other=0.0)
        acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
        a_ptrs += BLOCK_K * stride_ak
        b_ptrs += BLOCK_K * stride_bk

    d = acc * alpha
    d_ptrs = d_ptr + rows[:, None] * stride_dm + cols[None, :] * stride_dn
    if EVEN:
        if not BETA_ZERO:
            d += beta * tl.load(d_ptrs)
        tl.store(d_ptrs, d)
    else:
        inside = row_in & col_in
        if not BETA_ZERO:
            d += beta * tl.load(d_ptrs, mask=inside, other=0.0)
        tl.store(d_ptrs, d, mask=inside)


def gemm(a, b, out, c=None, alpha: float = 1.0, beta: float = 0.0, input_precision: str = "ieee"):
    """``out = alpha * a @ b + beta * c`` for 2-D float32 torch CUDA tensors (any strides).

    Returns Triton's compiled kernel object of the launch (registers, shared memory, name).
    """
    M, K = a.shape
    K2, N = b.shape
    if K != K2 or tuple(out.shape) != (M, N):
        raise ValueError(f"triton gemm: shapes {tuple(a.shape)} @ {tuple(b.shape)} -> {tuple(out.shape)}")
    beta = float(beta) if c is not None else 0.0
    if c is not None and beta != 0.0 and c.data_ptr() != out.data_ptr():
        out.copy_(c)
    if M == 0 or N == 0:
        return None

    def grid(meta):
        return (triton.cdiv(M, meta["BLOCK_M"]) * triton.cdiv(N, meta["BLOCK_N"]),)

    return _gemm_kernel[grid](a, b, out, M, N, K, a.stride(0), a.stride(1), b.stride(0), b.stride(1),
                              out.stride(0), out.stride(1), float(alpha), beta, BETA_ZERO=(beta == 0.0),
                              INPUT_PRECISION=input_precision)


def best_config() -> str | None:
    cfg = getattr(_gemm_kernel, "best_config", None)
    if cfg is None:
        return None
    kw = cfg.kwargs
    return (f"BLOCK_M={kw['BLOCK_M']} BLOCK_N={kw['BLOCK_N']} BLOCK_K={kw['BLOCK_K']} "
            f"warps={cfg.num_warps} stages={cfg.num_stages}")
