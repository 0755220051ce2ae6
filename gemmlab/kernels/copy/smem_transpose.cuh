// gemmlab/kernels/copy/smem_transpose.cuh — one warp turns its columns of a K-major operand tile,
// as TMA lands it (Xs[x][k]: rows of BLOCK_K floats, SWIZZLE_{32,64,128}B), into the [k][x]
// layout WarpTileCore reads with B N-major (s11 ``b_transpose``, docs/stages/s10-s11.md).
//
// Why: read as Xs[x][k], one LDS.128 gives 4 k of one column, so a thread's B values of one k all
// sit in one register bank and half the FFMAs lose an issue slot to a bank conflict. Read as
// Xt[k][x], one LDS.128 gives 4 columns of one k (consecutive registers, alternating banks).
//
// Work: the warp's WIDTH columns x BLOCK_K/4 chunks of 4 k, in items of 4 columns x 4 k: 4 LDS.128
// (a 4 k chunk of 4 columns), a 4x4 register transpose, 4 STS.128 (4 columns of 4 rows of k).
// Bank groups (8 of 16 bytes per 128-byte wavefront; a quarter-warp per wavefront of 16-byte
// accesses): the 8 lanes of a quarter-warp take 8 consecutive groups of 4 columns, so each STS.128
// covers the 8 groups of one 128-byte row segment; their chunks are c = c_sel ^ ((lane / 2) % 4),
// so that with 128-byte rows (BLOCK_K 32) the swizzled chunk positions c ^ (x % 8) of a load are 8
// different ones as well (shorter rows: 2-way / 4-way on the loads).
// Core: the WarpTileCore whose [x][k] tiles these are (its swizzle_chunk and block_k, as in
// copy/cp_async_tile.cuh).
#pragma once
#include "common.cuh"

namespace gemmlab {

template <class Core, int WIDTH, int LD_OUT>
struct WarpTransposeXK {
    static constexpr int K_CHUNKS = Core::K_CHUNKS;
    static constexpr int BLOCK_K = 4 * K_CHUNKS;
    static constexpr int GROUPS = WIDTH / 4;  // groups of 4 columns
    static constexpr int ITEMS = GROUPS * K_CHUNKS;
    static constexpr int TRIPS = (ITEMS + 31) / 32;
    static_assert(WIDTH % 32 == 0, "a warp transposes whole runs of 8 groups of 4 columns");
    static_assert(LD_OUT % 4 == 0, "rows of the [k][x] tile must keep 16-byte alignment");

    // xs: the stage's [x][k] tile (row x at xs + x * BLOCK_K); xt: the [k][x] tile (row k at
    // xt + k * LD_OUT); the warp's columns x0 .. x0 + WIDTH - 1 (x0 a multiple of 32) of both.
    static __device__ __forceinline__ void run(const float* __restrict__ xs, float* __restrict__ xt, int x0,
                                               int lane) {
#pragma unroll
        for (int trip = 0; trip < TRIPS; ++trip) {
            const int item = lane + 32 * trip;
            if (ITEMS % 32 == 0 || item < ITEMS) {
                const int low = item % 8, q = item / 8;
                const int group = (q / K_CHUNKS) * 8 + low;
                const int c = (q % K_CHUNKS) ^ ((low / 2) & (K_CHUNKS - 1));
                const int x = x0 + 4 * group;
                float4 v[4];
#pragma unroll
                for (int r = 0; r < 4; ++r)
                    v[r] = *reinterpret_cast<const float4*>(xs + (x + r) * BLOCK_K + Core::swizzle_chunk(x + r, c) * 4);
                float* out = xt + (4 * c) * LD_OUT + x;
                *reinterpret_cast<float4*>(out + 0 * LD_OUT) = make_float4(v[0].x, v[1].x, v[2].x, v[3].x);
                *reinterpret_cast<float4*>(out + 1 * LD_OUT) = make_float4(v[0].y, v[1].y, v[2].y, v[3].y);
                *reinterpret_cast<float4*>(out + 2 * LD_OUT) = make_float4(v[0].z, v[1].z, v[2].z, v[3].z);
                *reinterpret_cast<float4*>(out + 3 * LD_OUT) = make_float4(v[0].w, v[1].w, v[2].w, v[3].w);
            }
        }
    }
};

}  // namespace gemmlab
