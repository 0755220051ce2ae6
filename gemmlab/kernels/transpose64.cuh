// gemmlab/kernels/transpose64.cuh — transpose.cuh's copy (src(r, c) with unit stride along r into
// dst(r, c) with unit stride along c, batched) in 64x64 tiles, one tile a block, the grid over
// them (x: tiles along r, y: along c, z: batches, striding over more than 65535).
//
// Why: gemmlab_transpose spends its instructions on index math: 64-bit division for each tile of
// a grid-strided loop, four elements a thread between two barriers, bounds checks on every
// access; ncu on the H100 had it at 31-38% of the DRAM bandwidth with the FMA pipe 27% busy
// (integer multiply-adds) and issue 74% active (results/h100/logs/76b06cd/ncu_mid.txt). Here a
// thread moves 16 elements a barrier, all 16 loads in flight before its first shared store,
// addresses by pointer increments, and the bounds are checked only in tiles that cross the edge.
// Shared memory: 64 x 65 floats (16.6 KB; the pad keeps both passes free of bank conflicts). Its
// own file, so that its source (the JIT cache's key) differs from gemmlab_transpose's. The plan
// chooses it with plan.TRANSPOSE_TILE.
#pragma once
#include "common.cuh"

namespace gemmlab {

template <bool EDGE>
__device__ __forceinline__ void transpose_tile64(const float* __restrict__ s, float* __restrict__ d, int64 rows,
                                                 int64 cols, int64 r0, int64 c0, int64 src_cs, int64 dst_ld,
                                                 float (*tile)[65]) {
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;  // 32 x 8 threads
    float v[2][8];
    // read: lanes along r (unit stride), 8 columns apart
    const float* sp = s + (r0 + tx) + (c0 + ty) * src_cs;
    const int64 step = 8 * src_cs;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            v[h][i] = (!EDGE || (r0 + tx + 32 * h < rows && c0 + ty + 8 * i < cols)) ? sp[32 * h] : 0.0f;
        }
        sp += step;
    }
#pragma unroll
    for (int i = 0; i < 8; ++i)
#pragma unroll
        for (int h = 0; h < 2; ++h) tile[ty + 8 * i][tx + 32 * h] = v[h][i];  // tile[c][r]
    __syncthreads();
    // write: lanes along c (unit stride), 8 rows apart
    float* dp = d + (r0 + ty) * dst_ld + (c0 + tx);
    const int64 dstep = 8 * dst_ld;
#pragma unroll
    for (int i = 0; i < 8; ++i) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            if (!EDGE || (r0 + ty + 8 * i < rows && c0 + tx + 32 * h < cols)) dp[32 * h] = tile[tx + 32 * h][ty + 8 * i];
        }
        dp += dstep;
    }
}

}  // namespace gemmlab

extern "C" __global__ void __launch_bounds__(256) gemmlab_transpose64(
    const float* __restrict__ src, float* __restrict__ dst, int64 rows, int64 cols, int64 batch,
    int64 src_bs, int64 src_cs, int64 dst_bs, int64 dst_ld) {
    gemmlab::grid_dependency_wait();
    __shared__ float tile[64][65];
    const int64 r0 = (int64)blockIdx.x * 64, c0 = (int64)blockIdx.y * 64;
    const bool edge = r0 + 64 > rows || c0 + 64 > cols;
    for (int64 b = blockIdx.z; b < batch; b += gridDim.z) {
        if (edge)
            gemmlab::transpose_tile64<true>(src + b * src_bs, dst + b * dst_bs, rows, cols, r0, c0, src_cs, dst_ld, tile);
        else
            gemmlab::transpose_tile64<false>(src + b * src_bs, dst + b * dst_bs, rows, cols, r0, c0, src_cs, dst_ld, tile);
        __syncthreads();  // the tile is reused by the next batch
    }
}
