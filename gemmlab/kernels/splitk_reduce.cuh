// gemmlab/kernels/splitk_reduce.cuh — the second kernel of split-K (000 §12, 001 "split-K with
// a reduce kernel").
//
// The main kernel ran with gridDim.y = splits slices of K, each writing its partial product
// alpha = 1, beta = 0 into a workspace: ws[b][s][m][n] at ws + b*ws_bs + s*ws_ss + m*ws_ld + n
// (ws_ld, ws_ss, ws_bs multiples of 4, ws 16-byte aligned: the host allocates it so).
// This kernel adds the slices in a fixed order (s = 0, 1, ...: deterministic, the same bits on
// every run) and applies the epilogue once: D = alpha * sum + beta * D, where beta == 0 never
// reads D. D has any strides (d_rs, d_cs), so a transposed output costs nothing extra.
// One thread owns 4 consecutive columns of one row: float4 reads of every slice, and a float4
// store when D's rows are unit-stride and 16-byte aligned.
#pragma once
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256) gemmlab_splitk_reduce(
    const float* __restrict__ ws, float* __restrict__ D, int64 M, int64 N, int64 splits, int64 ws_ld,
    int64 ws_ss, int64 ws_bs, int64 d_rs, int64 d_cs, int64 d_bs, int64 batch, float alpha, float beta) {
    const int64 groups_n = (N + 3) / 4;
    const int64 per_batch = M * groups_n;
    const int64 total = per_batch * batch;
    const bool d_vec = d_cs == 1 && ((reinterpret_cast<unsigned long long>(D) | (unsigned long long)(d_rs * 4) |
                                      (unsigned long long)(d_bs * 4)) & 15) == 0;
    for (int64 i = (int64)blockIdx.x * blockDim.x + threadIdx.x; i < total; i += (int64)gridDim.x * blockDim.x) {
        const int64 b = i / per_batch;
        const int64 rem = i - b * per_batch;
        const int64 m = rem / groups_n;
        const int64 n = (rem - m * groups_n) * 4;
        const float* src = ws + b * ws_bs + m * ws_ld + n;
        float4 sum = *reinterpret_cast<const float4*>(src);
        for (int64 s = 1; s < splits; ++s) {
            const float4 v = *reinterpret_cast<const float4*>(src + s * ws_ss);
            sum.x += v.x;
            sum.y += v.y;
            sum.z += v.z;
            sum.w += v.w;
        }
        const float acc[4] = {sum.x, sum.y, sum.z, sum.w};
        float* dst = D + b * d_bs + m * d_rs;
        if (d_vec && n + 3 < N) {
            float4* d4 = reinterpret_cast<float4*>(dst + n);
            float4 out = make_float4(alpha * acc[0], alpha * acc[1], alpha * acc[2], alpha * acc[3]);
            if (beta != 0.0f) {
                const float4 old = *d4;
                out.x += beta * old.x;
                out.y += beta * old.y;
                out.z += beta * old.z;
                out.w += beta * old.w;
            }
            *d4 = out;
        } else {
            for (int e = 0; e < 4 && n + e < N; ++e) {
                float* d = dst + (n + e) * d_cs;
                *d = beta == 0.0f ? alpha * acc[e] : alpha * acc[e] + beta * (*d);
            }
        }
    }
}
