// gemmlab/kernels/stream_k_fixup.cuh — the second kernel of stream-K (epilogue/stream_k.cuh):
// block t takes shared tile t; where more than one block computed it, it adds their partial
// slots in K order (the first K tiles' block's slot 2o + 1, then slot 2b of each block b after
// it: the same bits on every run) and applies the epilogue D = alpha * sum + beta * C once (beta
// == 0 never reads C); a tile one block computed whole was stored by it already.
#pragma once
#define GEMMLAB_SEPARATE_C 1  // C has its own strides (CView)
#include "common.cuh"
#include "epilogue/stream_k.cuh"

extern "C" __global__ void __launch_bounds__(256) gemmlab_stream_k_fixup(
    const float* __restrict__ slots, float* __restrict__ D, int64 M, int64 N, int64 ldd, int64 k_tiles,
    int64 blocks, int bm, int bn, int group_m, float alpha, float beta, const float* C, int64 c_rs, int64 c_cs) {
    gemmlab::grid_dependency_wait();
    const int64 tiles = ((M + bm - 1) / bm) * ((N + bn - 1) / bn);
    const int64 shared = gemmlab::stream_k_shared_tiles(tiles, blocks);
    const int64 total = shared * k_tiles;
    const int64 t = blockIdx.x;
    if (t >= shared) return;
    const int64 owner = gemmlab::stream_k_block_of(t * k_tiles, total, blocks);
    const int64 last = gemmlab::stream_k_block_of((t + 1) * k_tiles - 1, total, blocks);
    if (owner == last) return;
    int64 row0, col0;
    gemmlab::tile_corner(tiles - shared + t, M, N, bm, bn, group_m, row0, col0);
    const int64 slot_floats = (int64)bm * bn;
    const gemmlab::CView c{C, c_rs, c_cs};
    gemmlab::GemmArgs out{};  // what the common epilogue reads: D, ldd, alpha, beta
    out.D = D;
    out.ldd = ldd;
    out.alpha = alpha;
    out.beta = beta;
    const bool d_vec = gemmlab::d_rows_take_16_bytes(out, col0);
    const int chunks = bn / 4;
    for (int idx = threadIdx.x; idx < bm * chunks; idx += blockDim.x) {
        const int r = idx / chunks, q = idx - r * chunks;
        const int64 row = row0 + r, col = col0 + 4 * q;
        if (row >= M || col >= N) continue;
        const int64 at = (int64)r * bn + 4 * q;
        float4 sum = *reinterpret_cast<const float4*>(slots + (2 * owner + 1) * slot_floats + at);
        for (int64 b = owner + 1; b <= last; ++b) {
            const float4 v = *reinterpret_cast<const float4*>(slots + 2 * b * slot_floats + at);
            sum.x += v.x;
            sum.y += v.y;
            sum.z += v.z;
            sum.w += v.w;
        }
        if (d_vec && col + 3 < N) {
            gemmlab::store_output4(out, c, row, col, sum);
        } else {
            const float acc[4] = {sum.x, sum.y, sum.z, sum.w};
            for (int e = 0; e < 4 && col + e < N; ++e) gemmlab::store_output(out, c, row, col + e, acc[e]);
        }
    }
}
