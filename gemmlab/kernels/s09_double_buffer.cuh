// s09 double_buffer (notes 000 §9): over the s08 kernels, the global loads of the next tile are
// overlapped with the arithmetic on the current one.
//   - two shared-memory buffers (stages): while the block multiplies out of one, the next tile
//     is written into the other;
//   - register prefetch (§9.3-9.5): each K-tile iteration first issues the next tile's LDGs into
//     registers, then runs the FFMAs on the current buffer (their ~500 cycles hide the global
//     latency), then stores those registers into the other buffer, then syncs: ONE barrier per
//     K tile instead of two (§9.6). The barrier both publishes the new buffer and frees the old
//     one, which is not written again until the iteration after;
//   - fragment double buffering (§9.2): the LDS.128s of step k+1 are issued before the FFMAs of
//     step k, so shared-memory latency hides behind the outer product.
// Shared layout and lanes: the best s08 scheme, s08c's Z-order lanes, on s08a's padded rows.
// Padding B keeps the Z-order fragment loads at 4 wavefronts per k step (A 2 + B 2) also if the
// hardware merges quarter-warps into half-warps before counting bank conflicts (the "hardware"
// reading of the bank model), where plain s08c would pay 2-way conflicts on B; padding A makes
// the transposed A store conflict-free. Both cost no instructions in the main loop.
// As in s07 the K tail (K % BLOCK_K != 0) is the first tile, so the pipelined loop loads whole
// tiles with no k checks, and with no m, n checks in blocks inside M x N.
#pragma once
#include "s08a_bank_padding.cuh"
#include "s08c_bank_zorder.cuh"

namespace gemmlab {

template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int LANES_N>
struct S09Layout : S08aLayout<BLOCK_M, BLOCK_N, BLOCK_K, LANES_N> {
    typedef S08cLayout<BLOCK_M, BLOCK_N, BLOCK_K, LANES_N> ZOrder;
    static __device__ __forceinline__ int lane_row(int lane) { return ZOrder::lane_row(lane); }
    static __device__ __forceinline__ int lane_col(int lane) { return ZOrder::lane_col(lane); }
};

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int WARP_M_, int WARP_N_, int WARP_M_ITER_, int WARP_N_ITER_,
          int THREAD_M_, int THREAD_N_, int VEC_, int A_K_MAJOR_, int B_N_MAJOR_>
struct S09DoubleBuffer
    : S07Vectorized<BLOCK_M_, BLOCK_N_, BLOCK_K_, WARP_M_, WARP_N_, WARP_M_ITER_, WARP_N_ITER_, THREAD_M_, THREAD_N_, VEC_,
                    A_K_MAJOR_, B_N_MAJOR_, S09Layout<BLOCK_M_, BLOCK_N_, BLOCK_K_, WARP_N_ / WARP_N_ITER_ / THREAD_N_>> {
    typedef S09Layout<BLOCK_M_, BLOCK_N_, BLOCK_K_, WARP_N_ / WARP_N_ITER_ / THREAD_N_> Layout;
    typedef S07Vectorized<BLOCK_M_, BLOCK_N_, BLOCK_K_, WARP_M_, WARP_N_, WARP_M_ITER_, WARP_N_ITER_, THREAD_M_, THREAD_N_,
                          VEC_, A_K_MAJOR_, B_N_MAJOR_, Layout> Base;
    using Base::BLOCK_M;
    using Base::BLOCK_N;
    using Base::BLOCK_K;
    using Base::THREADS;
    using Base::FRAG_M;
    using Base::FRAG_N;
    using Base::VEC;
    using Base::A_K_MAJOR;
    using Base::B_N_MAJOR;
    static_assert(BLOCK_K % 2 == 0, "the fragment double buffer alternates over block_k steps");
    static constexpr int STAGE_FLOATS = Layout::A_FLOATS + Layout::B_FLOATS;  // one buffer: As then Bs
    static constexpr int SMEM_BYTES = 2 * STAGE_FLOATS * 4;

    // The BLOCK_K outer products of the tile in buffer `stage`, reading the fragments of step k+1
    // while step k multiplies. On entry frag[0] holds step 0 (read after the last barrier).
    static __device__ __forceinline__ void multiply_tile(float (&acc)[FRAG_M][FRAG_N], float (&a_frag)[2][FRAG_M],
                                                         float (&b_frag)[2][FRAG_N], const float* stage, int thread_row,
                                                         int thread_col) {
#pragma unroll
        for (int k = 0; k < BLOCK_K; ++k) {
            if (k + 1 < BLOCK_K)
                Base::load_fragments(a_frag[(k + 1) % 2], b_frag[(k + 1) % 2], stage, stage + Layout::A_FLOATS, k + 1,
                                     thread_row, thread_col);
            tile_io::outer_product(acc, a_frag[k % 2], b_frag[k % 2]);
        }
    }

    static __device__ __forceinline__ float* stage_at(unsigned char* smem, int stage) {
        return reinterpret_cast<float*>(smem) + stage * STAGE_FLOATS;
    }

    // The pipelined main loop over the whole tiles k0 = k_next, k_next + BLOCK_K, ... < k_end. On
    // entry the tile before k_next is in buffer `stage` and its step-0 fragments in frag[0].
    template <bool CHECK_MN, class ATileT, class BTileT>
    static __device__ __forceinline__ void pipeline(float (&acc)[FRAG_M][FRAG_N], float (&a_frag)[2][FRAG_M],
                                                    float (&b_frag)[2][FRAG_N], ATileT& a_tile, BTileT& b_tile,
                                                    unsigned char* smem, int& stage, int64 k_next, int64 k_end,
                                                    int thread_row, int thread_col) {
        for (int64 k0 = k_next; k0 < k_end; k0 += BLOCK_K) {
            int64 k = k0;
            tile_io::opaque(k);  // addresses from k, not stepped pointers (tile_io::Float4Tile::at)
            a_tile.template load_full<CHECK_MN>(k);  // 1. the next tile's LDGs, in flight during ...
            b_tile.template load_full<CHECK_MN>(k);
            multiply_tile(acc, a_frag, b_frag, stage_at(smem, stage), thread_row, thread_col);  // 2. ... the FFMAs
            stage ^= 1;
            float* next = stage_at(smem, stage);
            Base::store_tiles(a_tile, b_tile, next, next + Layout::A_FLOATS);  // 3. STS into the other buffer
            __syncthreads();                                                    // 4. one barrier per tile
            Base::load_fragments(a_frag[0], b_frag[0], next, next + Layout::A_FLOATS, 0, thread_row, thread_col);
        }
    }

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem) {
        // Per-thread setup, recomputed for every batch (tile_io::opaque says why).
        int tid = threadIdx.x;
        int64 tile_row = row0, tile_col = col0, K = args.K;
        tile_io::opaque(tid);
        tile_io::opaque(tile_row);
        tile_io::opaque(tile_col);
        tile_io::opaque(K);
        const int thread_row = Base::thread_row_of(tid), thread_col = Base::thread_col_of(tid);

        tile_io::ATile<VEC, A_K_MAJOR, BLOCK_M, BLOCK_K, THREADS> a_tile;
        tile_io::BTile<VEC, B_N_MAJOR, BLOCK_N, BLOCK_K, THREADS> b_tile;
        a_tile.init(args, tile_row, tid);
        b_tile.init(args, tile_col, tid);

        float acc[FRAG_M][FRAG_N];
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j) acc[i][j] = 0.0f;

        const int64 k_full = K / BLOCK_K * BLOCK_K;
        const int k_tail = (int)(K - k_full);
        if (K > 0) {
            // Prologue: the first tile (the K tail if there is one, zero-filled past K) into buffer 0.
            int64 k_next = 0;
            if (k_tail > 0) {
                a_tile.load_tail(k_full, k_tail);
                b_tile.load_tail(k_full, k_tail);
            } else {
                a_tile.template load_full<true>(0);
                b_tile.template load_full<true>(0);
                k_next = BLOCK_K;
            }
            int stage = 0;
            float* first = stage_at(smem, 0);
            Base::store_tiles(a_tile, b_tile, first, first + Layout::A_FLOATS);
            __syncthreads();
            float a_frag[2][FRAG_M], b_frag[2][FRAG_N];
            Base::load_fragments(a_frag[0], b_frag[0], first, first + Layout::A_FLOATS, 0, thread_row, thread_col);
            if (tile_row + BLOCK_M <= args.M && tile_col + BLOCK_N <= args.N)
                pipeline<false>(acc, a_frag, b_frag, a_tile, b_tile, smem, stage, k_next, k_full, thread_row, thread_col);
            else
                pipeline<true>(acc, a_frag, b_frag, a_tile, b_tile, smem, stage, k_next, k_full, thread_row, thread_col);
            multiply_tile(acc, a_frag, b_frag, stage_at(smem, stage), thread_row, thread_col);  // the last tile
        }

        // The epilogue places the thread again rather than keep its origin live through the loop.
        int tid_out = threadIdx.x;
        tile_io::opaque(tid_out);
        tile_io::store_fragment<Base, VEC>(args, acc, row0 + Base::thread_row_of(tid_out), col0 + Base::thread_col_of(tid_out));
    }
};

}  // namespace gemmlab
