// gemmlab/kernels/splitk_reduce.cuh — the second kernel of split-K (000 §12, 001 "split-K with
// a reduce kernel").
//
// The main kernel ran with gridDim.y = splits slices of K, each writing its partial product
// alpha = 1, beta = 0 into a workspace: ws[b][s][m][n] at ws + b*ws_bs + s*ws_ss + m*ws_ld + n
// (ws_ld, ws_ss, ws_bs multiples of 4, ws 16-byte aligned: the host allocates it so).
// This kernel adds the slices in a fixed order (deterministic: the same bits on every run) and
// applies the epilogue once: D = alpha * sum + beta * C, where beta == 0 never reads C. D and C
// have any strides (d_rs, d_cs; c_rs, c_cs), so a transposed output or a broadcast c costs nothing
// extra.
// A group of LANES threads (a power of two up to 32, lane-aligned in the warp) owns 4 consecutive
// columns of one row: lane j adds slices j, j + LANES, j + 2 LANES, ... with float4 reads, then the
// group adds its lanes' sums by a butterfly (xor 1, 2, ...), so few outputs with many slices
// (64x64 with 128 slices: 1024 outputs of 4) still keep thousands of loads in flight, not a
// thousand serial chains (H200: 18.1 us with one lane, cuBLAS's reduce 10.4 us). A float4 store
// when D's rows are unit-stride and 16-byte aligned.
#pragma once
#define GEMMLAB_SEPARATE_C 1  // C has its own strides (CView: the epilogue's reads of a separate c)
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256) gemmlab_splitk_reduce(
    const float* __restrict__ ws, float* __restrict__ D, int64 M, int64 N, int64 splits, int64 ws_ld,
    int64 ws_ss, int64 ws_bs, int64 d_rs, int64 d_cs, int64 d_bs, int64 batch, float alpha, float beta,
    int lanes, const float* C, int64 c_rs, int64 c_cs, int64 c_bs) {
    gemmlab::grid_dependency_wait();
    const int64 groups_n = (N + 3) / 4;
    const int64 per_batch = M * groups_n;
    const int64 total = per_batch * batch;
    const bool d_vec = d_cs == 1 && ((reinterpret_cast<unsigned long long>(D) | (unsigned long long)(d_rs * 4) |
                                      (unsigned long long)(d_bs * 4)) & 15) == 0;
    const int lane = static_cast<int>(threadIdx.x) & (lanes - 1);
    const int64 stride = (int64)gridDim.x * blockDim.x / lanes;  // outputs per round (blockDim: whole warps)
    // Rounds are warp-uniform: a warp leaves only when none of its groups has an output left.
    for (int64 i = ((int64)blockIdx.x * blockDim.x + threadIdx.x) / lanes;; i += stride) {
        const bool active = i < total;
        if (!__any_sync(0xffffffffu, active)) break;
        int64 b = 0, m = 0, n = 0;
        float4 sum = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        if (active) {
            b = i / per_batch;
            const int64 rem = i - b * per_batch;
            m = rem / groups_n;
            n = (rem - m * groups_n) * 4;
            const float* src = ws + b * ws_bs + m * ws_ld + n;
            for (int64 s = lane; s < splits; s += lanes) {
                const float4 v = *reinterpret_cast<const float4*>(src + s * ws_ss);
                sum.x += v.x;
                sum.y += v.y;
                sum.z += v.z;
                sum.w += v.w;
            }
        }
        for (int off = 1; off < lanes; off *= 2) {
            sum.x += __shfl_xor_sync(0xffffffffu, sum.x, off, lanes);
            sum.y += __shfl_xor_sync(0xffffffffu, sum.y, off, lanes);
            sum.z += __shfl_xor_sync(0xffffffffu, sum.z, off, lanes);
            sum.w += __shfl_xor_sync(0xffffffffu, sum.w, off, lanes);
        }
        if (!active || lane != 0) continue;
        const float acc[4] = {sum.x, sum.y, sum.z, sum.w};
        float* dst = D + b * d_bs + m * d_rs;
        const gemmlab::CView c{C + b * c_bs, c_rs, c_cs};
        const float* src = c.src(dst, m, n);
        if (d_vec && n + 3 < N) {
            float4* d4 = reinterpret_cast<float4*>(dst + n);
            float4 out = make_float4(alpha * acc[0], alpha * acc[1], alpha * acc[2], alpha * acc[3]);
            if (beta != 0.0f) {
                const float4 old = c.load4(src);
                out.x += beta * old.x;
                out.y += beta * old.y;
                out.z += beta * old.z;
                out.w += beta * old.w;
            }
            *d4 = out;
        } else {
            for (int e = 0; e < 4 && n + e < N; ++e) {
                float* d = dst + (n + e) * d_cs;
                *d = beta == 0.0f ? alpha * acc[e] : alpha * acc[e] + beta * src[e * c_cs];
            }
        }
    }
}
