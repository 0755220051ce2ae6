// gemmlab/kernels/copy/row_groups.cuh — TMA row groups: a [k][x] operand tile (A M-major, B
// N-major) whose k rows are not 16-byte aligned (ld % 4 != 0), loaded by TMA all the same
// (s11's A_ROW_GROUP / B_ROW_GROUP; docs/stages/s10-s11.md "row groups", scripts/row_group_model.py).
//
// G = 4 / gcd(ld, 4) consecutive rows span a multiple of 16 bytes, so the host describes the
// operand as a tensor of row groups: dim 0 a group's rows end to end ((G-1)*ld + x floats: it ends
// at the last row's last element, so nothing past the operand is read), dim 1 the groups (stride
// G*ld floats, 16-byte aligned), dim 2 the batch. One stage's tile is G boxes of BLOCK_K/G groups:
// box j starts at dim-0 coordinate j*ld + x0 and brings k rows j, j+G, j+2G, ... into shared rows
// j*(BLOCK_K/G) .. (WarpTileCore::k_slot is the inverse).
//   - Past x's edge, a box j < G-1 reads row k+1's first floats (or a strided view's padding): it
//     feeds only outputs that are never stored. Past dim 0's end TMA writes zeros.
//   - The last K % G rows lie in no whole group: TMA writes zeros there and fill_tail writes them
//     from global memory, in the last K tile of the problem (every block, once).
#pragma once
#include "common.cuh"
#include "ptx/tma.cuh"

namespace gemmlab {

template <int G, int BLOCK_K, int WIDTH, int LD>
struct RowGroups {
    static_assert(G == 2 || G == 4, "a row group is 2 or 4 rows");
    static_assert(BLOCK_K % G == 0, "a K tile is whole row groups");
    static constexpr int ROWS = BLOCK_K / G;  // groups (rows) of one box
    static constexpr unsigned BOX_BYTES = ROWS * LD * 4;
    static_assert(BOX_BYTES % 128 == 0, "each box lands 128-byte aligned in shared memory");

    // The tile's G boxes into dst, completing on bar: x0 the tile's first x, k0 its first k (a
    // multiple of G: K tiles and split-K slices are), ld the operand's k-row stride in floats.
    static __device__ __forceinline__ void load(unsigned dst, const async::TmaDescriptor* map, unsigned bar, int x0,
                                                int k0, int ld, int batch) {
#pragma unroll
        for (int j = 0; j < G; ++j) async::tma_load_3d(dst + j * BOX_BYTES, map, bar, j * ld + x0, k0 / G, batch);
    }

    // The rows k_end - k_end % G .. k_end - 1 of the tile that holds them (TMA left zeros there),
    // from src (the operand at the tile's first k: element (k, x) at src + k * ld + x, x < x_len);
    // k_tail: that first row's k within the tile. Threads 0 .. threads-1 share the work; the
    // caller joins them at a barrier before the tile is read.
    static __device__ __forceinline__ void fill_tail(float* tile, const float* __restrict__ src, int64 ld, int k_tail,
                                                     int tail, int64 x_len, int thread, int threads) {
        for (int i = thread; i < tail * WIDTH; i += threads) {
            const int r = i / WIDTH, x = i % WIDTH;
            const int k = k_tail + r;
            const int row = (k % G) * ROWS + k / G;
            tile[row * LD + x] = x < x_len ? src[static_cast<int64>(k) * ld + x] : 0.0f;
        }
        // A later copy into this buffer (the next segment under stream-K) comes after these writes.
        async::fence_proxy_async_shared();
    }
};

}  // namespace gemmlab
