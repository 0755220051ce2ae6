// gemmlab/kernels/transpose.cuh — a batched out-of-place transpose through shared memory, used
// by the plan to turn a K-major ("transposed", column-major) B into a row-major copy in the
// workspace. The warp-tiled kernels read B fastest as Bs[k][n] (N-major): the [n][k] layout costs
// them ~20% on the H200 (gemmlab tune, nt/tt layouts), far more than this copy (8·K·N bytes).
//
// src(r, c) = src[b*src_bs + r + c*src_cs]  (unit stride along r: reads coalesced along r)
// dst(r, c) = dst[b*dst_bs + r*dst_ld + c]  (unit stride along c: writes coalesced along c)
// A 32x32 tile passes through shared memory padded to 33 columns (no bank conflicts either way).
#pragma once
#include "common.cuh"

extern "C" __global__ void __launch_bounds__(256) gemmlab_transpose(
    const float* __restrict__ src, float* __restrict__ dst, int64 rows, int64 cols, int64 batch,
    int64 src_bs, int64 src_cs, int64 dst_bs, int64 dst_ld) {
    gemmlab::grid_dependency_wait();
    __shared__ float tile[32][33];
    const int64 tiles_r = (rows + 31) / 32, tiles_c = (cols + 31) / 32;
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;  // 32 x 8 threads
    for (int64 b = blockIdx.z; b < batch; b += gridDim.z) {
        for (int64 t = blockIdx.x; t < tiles_r * tiles_c; t += gridDim.x) {
            const int64 r0 = (t % tiles_r) * 32, c0 = (t / tiles_r) * 32;
            const float* s = src + b * src_bs;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int64 r = r0 + tx, c = c0 + ty + 8 * i;
                if (r < rows && c < cols) tile[ty + 8 * i][tx] = s[r + c * src_cs];  // tile[c][r]
            }
            __syncthreads();
            float* d = dst + b * dst_bs;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int64 r = r0 + ty + 8 * i, c = c0 + tx;
                if (r < rows && c < cols) d[r * dst_ld + c] = tile[tx][ty + 8 * i];
            }
            __syncthreads();  // the tile is reused by the next iteration
        }
    }
}
