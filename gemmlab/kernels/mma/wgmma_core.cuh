// gemmlab/kernels/mma/wgmma_core.cuh — the tensor-core core of s12 and s13: one warpgroup
// multiplies its 64-row slice of an A tile by a B tile, both K-major in shared memory with the
// 128-byte swizzle (one row of either tile = BLOCK_K = 32 tf32 values = 128 bytes).
#pragma once
#include "ptx/wgmma.cuh"

namespace gemmlab {

template <int N, int BLOCK_K>
struct WgmmaCoreTf32 {
    static_assert(BLOCK_K == 32, "a 128-byte swizzled row holds 32 tf32 values: BLOCK_K is 32");
    static_assert(N % 32 == 0 && N >= 32 && N <= 256, "wgmma N: 32..256 in steps of 32 (ptx/wgmma_tf32_ops.cuh)");
    static constexpr int K_STEPS = BLOCK_K / 8;
    static constexpr int ACC = N / 2;          // FP32 accumulators per thread
    static constexpr int A_ROWS = 64;          // one warpgroup's rows
    static constexpr int ROW_BYTES = BLOCK_K * 4;

    // acc (+)= A[a_smem: 64 x BLOCK_K] * B[b_smem: N x BLOCK_K]^T; scale_d 0 on the first k8 step
    // overwrites acc (a new partial sum), 1 accumulates. Issues K_STEPS wgmmas; no commit/wait.
    static __device__ __forceinline__ void multiply(float (&acc)[ACC], unsigned a_smem, unsigned b_smem,
                                                    int scale_d = 1) {
        const unsigned long long a_desc = wgmma::desc_k_major_sw128(a_smem);
        const unsigned long long b_desc = wgmma::desc_k_major_sw128(b_smem);
#pragma unroll
        for (int k = 0; k < K_STEPS; ++k) {
            wgmma::mma_tf32_ss<N>(acc, a_desc + k * wgmma::DESC_K8_STEP, b_desc + k * wgmma::DESC_K8_STEP,
                                  k == 0 ? scale_d : 1);
        }
    }
};

}  // namespace gemmlab
