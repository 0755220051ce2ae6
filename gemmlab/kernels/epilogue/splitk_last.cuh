// gemmlab/kernels/epilogue/splitk_last.cuh — split-K through the workspace without the reduce
// kernel: the last of a tile's slices to finish adds them all and applies the epilogue.
//
// Every slice stores its partial product (alpha 1, beta 0) into its workspace slot as before
// (ws[b][s][m][n], splitk_reduce.cuh's layout), makes it visible device-wide (__threadfence),
// and one thread counts the slice in the tile's counter. The block that brings the count to
// ``splits`` is the last: it reads the tile's slots (from L2, where the slices wrote them
// moments before, not after the whole grid as the reduce kernel does), adds them in slot order
// 0, 1, ..., splits - 1 (the same bits on every run, whichever block is last), applies the
// epilogue once (splitk_store.cuh) and sets the counter back to 0. No block waits for another.
// The counters (one per tile and batch) start at 0: the plan zeroes them before the GEMM
// (kernels/zero_counters.cuh), as a workspace may be new memory.
// Why: ncu on the H100 (results/h100/logs/76b06cd/ncu_mid.txt) had the reduce kernel at 11-28 us
// after the GEMM, reading every partial back from DRAM (66 MB at 5120x640x1280 tt, split 5, where
// the whole gap to cuBLAS was that kernel); cuBLAS adds its slices inside its GEMM kernel.
// The main loop is untouched: this runs after Stage::run has stored the accumulators.
#pragma once
#include "common.cuh"
#include "epilogue/splitk_store.cuh"

namespace gemmlab {

// Where the tile's sum goes: D = alpha * sum + beta * C (this batch's D and C, any strides).
struct SplitOut {
    float* d;
    int64 d_rs, d_cs;
    float alpha, beta;
    const float* c;
    int64 c_rs, c_cs;
};

// Called by every thread of the block once its slice's partial is stored. ws: this batch's slot 0;
// slot s at ws + s * ws_ss, rows ws_ld apart (multiples of 4, 16-byte aligned: the plan's layout).
template <int BM, int BN>
__device__ __forceinline__ void last_slice_reduce(const float* ws, int64 ws_ld, int64 ws_ss, int splits, int64 M,
                                                  int64 N, int64 row0, int64 col0, const SplitOut& out,
                                                  unsigned* counter) {
    static_assert(BN % 4 == 0, "last_slice_reduce: the tile's columns in groups of 4");
    __shared__ int last;
    __threadfence();  // this thread's partial is visible to every block before the count says so
    __syncthreads();
    if (threadIdx.x == 0) {
        last = atomicAdd(counter, 1u) == static_cast<unsigned>(splits - 1);
        if (last) *counter = 0u;  // every slice has counted: ready for the next launch
    }
    __syncthreads();
    if (!last) return;
    __threadfence();  // the other slices' partials, seen through their counts
    const bool d_vec = out.d_cs == 1 && ((reinterpret_cast<unsigned long long>(out.d) |
                                          static_cast<unsigned long long>(out.d_rs * 4)) & 15) == 0;
    constexpr int GROUPS = BN / 4;
    for (int i = threadIdx.x; i < BM * GROUPS; i += blockDim.x) {
        const int64 m = row0 + i / GROUPS, n = col0 + 4 * (i % GROUPS);
        if (m >= M || n >= N) continue;
        const float* src = ws + m * ws_ld + n;
        float4 sum = __ldcg(reinterpret_cast<const float4*>(src));  // L2: other SMs wrote it
        for (int s = 1; s < splits; ++s) {
            const float4 v = __ldcg(reinterpret_cast<const float4*>(src + s * ws_ss));
            sum.x += v.x;
            sum.y += v.y;
            sum.z += v.z;
            sum.w += v.w;
        }
        split_out4(out.d + m * out.d_rs + n * out.d_cs, out.d_cs, d_vec, out.c + m * out.c_rs + n * out.c_cs, out.c_cs,
                   out.alpha, out.beta, sum, N - n);
    }
}

}  // namespace gemmlab
