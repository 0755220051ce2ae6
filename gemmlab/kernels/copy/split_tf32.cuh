// gemmlab/kernels/copy/split_tf32.cuh — the 3xTF32 pre-pass of s13: one operand, any strides, into
// two K-major workspace copies hi[x][k] and lo[x][k] (x = m of A or n of B) with
//   hi = tf32 round-to-nearest of v,   lo = tf32 round-to-nearest of (v - hi),
// so v = hi + lo to about 2^-22 relative and each part is exact for the tensor core (which reads
// only a word's 10 high mantissa bits); special values as ptx/cvt.cuh's split_tf32 says. A 32x32
// tile passes through shared memory, so reads are
// coalesced along the source's unit-stride dimension (x or k) and writes along k.
#pragma once
#include "common.cuh"
#include "ptx/cvt.cuh"


// src(x, k) = src[b*src_bs + x*src_xs + k*src_ks];  hi/lo(x, k) = dst[b*dst_bs + x*ld + k] (+ lo_off for lo).
// X_UNIT: the source's unit stride is along x (else along k, or neither: still correct, slower).
extern "C" __global__ void __launch_bounds__(256) gemmlab_split_tf32(
    const float* __restrict__ src, float* __restrict__ dst, int64 rows, int64 cols, int64 batch, int64 src_bs,
    int64 src_xs, int64 src_ks, int64 dst_bs, int64 ld, int64 lo_off, int x_unit) {
    gemmlab::grid_dependency_wait();
    __shared__ float tile[32][33];
    const int64 tiles_x = (rows + 31) / 32, tiles_k = (cols + 31) / 32;
    const int tx = threadIdx.x % 32, ty = threadIdx.x / 32;  // 32 x 8 threads
    for (int64 b = blockIdx.z; b < batch; b += gridDim.z) {
        const float* s = src + b * src_bs;
        float* d = dst + b * dst_bs;
        for (int64 t = blockIdx.x; t < tiles_x * tiles_k; t += gridDim.x) {
            const int64 x0 = (t % tiles_x) * 32, k0 = (t / tiles_x) * 32;
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                // consecutive lanes walk the source's unit-stride dimension
                const int64 x = x0 + (x_unit ? tx : ty + 8 * i), k = k0 + (x_unit ? ty + 8 * i : tx);
                const float v = (x < rows && k < cols) ? s[x * src_xs + k * src_ks] : 0.0f;
                if (x_unit) tile[ty + 8 * i][tx] = v; else tile[tx][ty + 8 * i] = v;  // tile[k][x]
            }
            __syncthreads();
#pragma unroll
            for (int i = 0; i < 4; ++i) {
                const int64 x = x0 + ty + 8 * i, k = k0 + tx;
                if (x < rows && k < cols) {
                    float hi, lo;
                    gemmlab::split_tf32(tile[tx][ty + 8 * i], hi, lo);
                    d[x * ld + k] = hi;
                    d[lo_off + x * ld + k] = lo;
                }
            }
            __syncthreads();
        }
    }
}
