// gemmlab/kernels/copy/row_groups.cuh — TMA row groups: an operand tile whose rows are not 16-byte
// aligned (ld % 4 != 0), loaded by TMA all the same (s11's A_ROW_GROUP / B_ROW_GROUP;
// docs/stages/s10-s11.md "row groups", scripts/row_group_model.py).
//
// G = 4 / gcd(ld, 4) consecutive rows span a multiple of 16 bytes, so the host describes the
// operand as a tensor of row groups: dim 0 a group's rows end to end ((G-1)*ld + inner floats: it
// ends at the last row's last element, so nothing past the operand is read), dim 1 the groups
// (stride G*ld floats, 16-byte aligned), dim 2 the batch. A stage's tile of OUTER rows from row r0
// is G boxes of OUTER/G groups: box j starts at row r0 + j (group (r0+j)/G, dim-0 coordinate
// ((r0+j) % G)*ld + inner0) and brings rows r0+j, r0+j+G, r0+j+2G, ... into shared rows
// j*(OUTER/G) .. (common.cuh group_slot). Past dim 0's end TMA writes zeros.
// Folded batches (problem.py Operand.row_fold): where the batch stride is not 16-byte aligned but
// a whole number R of rows, the batches' rows are one tensor (batch b's row r is row b*R + r, dim 2
// is 1), so a tile may start inside a group; the consumers then also zero the rows past K that the
// boxes bring from the next batch (rows of k) — rows of m or n past M or N feed only outputs that
// are never stored.
// ``full``: the first row (counted from the batch's row 0) that lies in no whole group of the
// tensor; rows from there on are the consumers' to write (TMA left zeros).
// G = 1 (rows already aligned): one box, the tile in order, nothing for the consumers to write.
// Two kinds of operand tile:
//   - rows of k ([k][x]: A M-major, B N-major; OUTER = block_k): the core reads its k through
//     WarpTileCore::k_slot. Past x's edge a box j < G-1 reads row k+1's first floats (or a strided
//     view's padding): they feed only outputs that are never stored. Rows from ``full`` on lie in
//     no whole group: fill_k_tail writes those below K.
//   - rows of m or n ([x][k]: A or B K-major; OUTER = block_m or block_n, rows swizzled as TMA lands
//     them): the epilogue stores the thread's rows / columns where they belong (WarpTileCore::out_m,
//     out_n). Past K a box j < G-1 reads the next row's first floats, which would meet the other
//     operand's zeros there (Inf or NaN times 0): mask_k zeroes columns from K on in the problem's
//     last K tile. Rows from ``full`` on lie in no whole group: fill_x_tail writes them, in every K
//     tile of the block that holds them.
#pragma once
#include "common.cuh"
#include "ptx/tma.cuh"

namespace gemmlab {

// The host's word on each operand's rows (stages/s11_tma.py fold_args): a_fold / b_fold, the rows
// one batch moves the operand's first row by where the batches are folded (0: the batch is a
// tensor dimension); a_full / b_full, the first row in no whole group of the tensor, counted from
// batch 0's row 0.
struct RowFold {
    int a_fold = 0, a_full = 0, b_fold = 0, b_full = 0;
};

// ROWS_OF_K: the tile's rows are k (OUTER = block_k, WIDTH = the tile's x); else x (OUTER = block_m
// or block_n, WIDTH = block_k).
template <int G, int OUTER, int WIDTH, int LD, bool ROWS_OF_K>
struct RowGroups {
    static_assert(G == 1 || G == 2 || G == 4, "a row group is 1 (rows aligned), 2 or 4 rows");
    static_assert(OUTER % G == 0, "a tile is whole row groups");
    static constexpr int ROWS = OUTER / G;  // groups (rows) of one box
    static constexpr unsigned BOX_BYTES = ROWS * LD * 4;
    static constexpr int BLOCK_K = ROWS_OF_K ? OUTER : WIDTH;
    static_assert(BOX_BYTES % 128 == 0, "each box lands 128-byte aligned in shared memory");

    // The tile's G boxes into dst, completing on bar: inner0 the tile's first column (x for rows
    // of k, k for rows of m), row0 its first row (batch b's row r at b*R + r where the batches are
    // folded), ld the operand's row stride.
    static __device__ __forceinline__ void load(unsigned dst, const async::TmaDescriptor* map, unsigned bar,
                                                int inner0, int row0, int ld, int batch) {
#pragma unroll
        for (int j = 0; j < G; ++j)
            async::tma_load_3d(dst + j * BOX_BYTES, map, bar, (row0 + j) % G * ld + inner0, (row0 + j) / G, batch);
    }

    // Rows of k: the rows k_tail .. k_tail + tail - 1 of the tile (rows below K past ``full``;
    // TMA left zeros there) from src (the operand at the tile's first k: element (k, x) at
    // src + k * ld + x, x < x_len). Threads 0 .. threads-1 share the work; the caller joins them at
    // a barrier before the tile is read.
    static __device__ __forceinline__ void fill_k_tail(float* tile, const float* __restrict__ src, int64 ld,
                                                       int k_tail, int tail, int64 x_len, int thread, int threads) {
        for (int i = thread; i < tail * WIDTH; i += threads) {
            const int r = i / WIDTH, x = i % WIDTH;
            const int k = k_tail + r;
            tile[group_slot<G, OUTER>(k) * LD + x] = x < x_len ? src[static_cast<int64>(k) * ld + x] : 0.0f;
        }
        // A later copy into this buffer (the next segment under stream-K) comes after these writes.
        async::fence_proxy_async_shared();
    }

    // Rows of m or n (WIDTH = LD = block_k floats a row; chunk(s, c): where 16-byte chunk c of shared
    // row s lies, the TMA swizzle): zero columns k_len .. WIDTH-1 of every row, the next rows'
    // floats past K (the problem's last K tile).
    template <class Chunk>
    static __device__ __forceinline__ void mask_k(float* tile, int k_len, Chunk chunk, int thread, int threads) {
        const int cols = WIDTH - k_len;
        for (int i = thread; i < OUTER * cols; i += threads) {
            const int s = i / cols, k = k_len + i % cols;
            tile[s * LD + chunk(s, k / 4) * 4 + k % 4] = 0.0f;
        }
        async::fence_proxy_async_shared();
    }

    // Rows of m or n: the tile rows x_tail .. x_tail + tail - 1 (rows below M or N past ``full``;
    // TMA left zeros there), columns 0 .. min(k_len, WIDTH) - 1 (mask_k owns the rest), from
    // src (the operand at the tile's first row and k: element (x, k) at src + x * ld + k).
    template <class Chunk>
    static __device__ __forceinline__ void fill_x_tail(float* tile, const float* __restrict__ src, int64 ld,
                                                       int x_tail, int tail, int k_len, Chunk chunk, int thread,
                                                       int threads) {
        const int cols = k_len < WIDTH ? k_len : WIDTH;
        for (int i = thread; i < tail * cols; i += threads) {
            const int x = x_tail + i / cols, k = i % cols;
            const int s = group_slot<G, OUTER>(x);
            tile[s * LD + chunk(s, k / 4) * 4 + k % 4] = src[static_cast<int64>(x) * ld + k];
        }
        async::fence_proxy_async_shared();
    }

    // Rows of k: zero the tile rows from .. to - 1 (past K: the next batch's rows where the
    // batches are folded).
    static __device__ __forceinline__ void zero_k_rows(float* tile, int from, int to, int thread, int threads) {
        for (int i = thread; i < (to - from) * WIDTH; i += threads)
            tile[group_slot<G, OUTER>(from + i / WIDTH) * LD + i % WIDTH] = 0.0f;
        async::fence_proxy_async_shared();
    }

    // Whether K tile t of the block needs the consumers' writes (the same answer in every thread of
    // the block): first, the tile's first row (rows of k: k_begin + t * BLOCK_K; rows of x: x0),
    // full as above, both from the batch's row 0; k_len the tile's k's (K - t * BLOCK_K, K the
    // slice's); x_end: M or N. Rows of k: a row below K past full, or (the last tile) rows past K
    // before full (folded batches); rows of x: the last K tile where K ends inside it (the mask),
    // or a row of the block's below x_end past full.
    static __device__ __forceinline__ bool gaps(bool last, int k_len, int64 first, int64 full, int64 x_end) {
        if constexpr (G == 1) {
            return false;
        } else if constexpr (ROWS_OF_K) {
            const int64 f = full - first;
            return f < (k_len < OUTER ? k_len : OUTER) || (k_len < OUTER && f > k_len);
        } else {
            const int64 rows = x_end - first < OUTER ? x_end - first : OUTER;
            return (last && k_len < WIDTH) || full - first < rows;
        }
    }

    // Those writes (where ``gaps``): base the operand at the slice's first k (element (k, x) or
    // (x, k) at base + k * ld + x or x * ld + k), ld its row stride; x0 the tile's first x (rows of
    // x: first); chunk as in mask_k (rows of x). The addresses go through opaque moves, so that they
    // are worked out here and not hoisted out of the K loop and kept live through it.
    template <class Chunk>
    static __device__ __forceinline__ void fill_gaps(float* tile, const float* base, int64 row_stride, bool last,
                                                     int k_len, int t, int64 first, int64 full, int64 x0, int64 x_end,
                                                     Chunk chunk, int thread, int threads) {
        const int64 ld = opaque(row_stride);
        const int64 f = full - first;
        // the first of the tile's ``rows`` rows past full (rows if none is)
        auto from_of = [f](int rows) { return f < 0 ? 0 : f < rows ? static_cast<int>(f) : rows; };
        if constexpr (ROWS_OF_K) {
            const int rows = k_len < OUTER ? k_len : OUTER;
            const int from = from_of(rows);
            if (from < rows)
                fill_k_tail(tile, base + opaque(x0 + static_cast<int64>(t) * BLOCK_K * ld), ld, from, rows - from,
                            opaque(x_end - x0), thread, threads);
            if (k_len < OUTER && f > k_len)
                zero_k_rows(tile, k_len, f < OUTER ? static_cast<int>(f) : OUTER, thread, threads);
        } else {
            if (last && k_len < WIDTH) mask_k(tile, k_len, chunk, thread, threads);
            const int rows = static_cast<int>(x_end - x0 < OUTER ? x_end - x0 : OUTER);
            const int from = from_of(rows);
            if (from < rows)
                fill_x_tail(tile, base + opaque(x0 * ld + static_cast<int64>(t) * BLOCK_K), ld, from, rows - from, k_len,
                            chunk, thread, threads);
        }
    }
};

}  // namespace gemmlab
