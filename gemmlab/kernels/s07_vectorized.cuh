// s07 vectorized (notes 000 §7, 001 kernel 6): over s06 (same block -> warp -> lane hierarchy,
// same parameters), global memory is read and written as float4 and both fragments come out
// of shared memory with 128-bit loads:
//   - A is stored transposed, As[k][m] (§7.3), so a thread's THREAD_M values of one k are
//     contiguous: THREAD_M/4 LDS.128 per k for A and THREAD_N/4 for B into per-k fragments
//     (in s06's As[m][k] they are BLOCK_K floats apart);
//   - tiles come from global memory as float4 (LDG.E.128) in either layout of each operand, and D
//     is written as float4 (STG.E.128), both through tile_io.cuh; unaligned problems run the
//     scalar instantiation (VEC = 0) of the same kernel.
// Each thread tile now starts at a multiple of 4 rows and columns (§7.4), so its runs of 4 are
// float4s in shared memory and in D. Shared layout and lane placement are the Layout policy:
// s08a-c change only that; s08d changes only the sub-tile shape.
#pragma once
#include "common.cuh"
#include "copy/tile_io.cuh"

namespace gemmlab {

// s07's shared layout and lanes: As[k][m] at k*BLOCK_M + m, Bs[k][n] at k*BLOCK_N + n (no
// padding: the notes' baseline, 10 wavefronts per k, §8.4); lanes row-major LANES_M x LANES_N.
// What a Layout promises (s08a-c keep it), so that addresses fold into compile-time offsets:
//   a_index(k + j, m) == a_index(k, m) + j * A_STRIDE  for k % 4 == 0, j < 4 (transposed store);
//   a_index(k, m + d) == a_index(k, m) + d  while m and m + d lie in one aligned run of A_RUN floats;
// and the same for B.
template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int LANES_N>
struct S07Layout {
    static constexpr int A_STRIDE = BLOCK_M;
    static constexpr int B_STRIDE = BLOCK_N;
    static constexpr int A_RUN = BLOCK_M;
    static constexpr int B_RUN = BLOCK_N;
    static constexpr int A_FLOATS = BLOCK_K * BLOCK_M;
    static constexpr int B_FLOATS = BLOCK_K * BLOCK_N;
    static __device__ __forceinline__ int a_index(int k, int m) { return k * BLOCK_M + m; }
    static __device__ __forceinline__ int b_index(int k, int n) { return k * BLOCK_N + n; }
    static __device__ __forceinline__ int lane_row(int lane) { return lane / LANES_N; }
    static __device__ __forceinline__ int lane_col(int lane) { return lane % LANES_N; }
};

__host__ __device__ constexpr int gcd(int a, int b) { return b == 0 ? a : gcd(b, a % b); }

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int WARP_M_, int WARP_N_, int WARP_M_ITER_, int WARP_N_ITER_,
          int THREAD_M_, int THREAD_N_, int VEC_, int A_K_MAJOR_, int B_N_MAJOR_,
          class Layout = S07Layout<BLOCK_M_, BLOCK_N_, BLOCK_K_, WARP_N_ / WARP_N_ITER_ / THREAD_N_>>
struct S07Vectorized {
    static constexpr int BLOCK_M = BLOCK_M_;
    static constexpr int BLOCK_N = BLOCK_N_;
    static constexpr int BLOCK_K = BLOCK_K_;
    static constexpr int WARP_M = WARP_M_;
    static constexpr int WARP_N = WARP_N_;
    static constexpr int WARP_M_ITER = WARP_M_ITER_;
    static constexpr int WARP_N_ITER = WARP_N_ITER_;
    static constexpr int THREAD_M = THREAD_M_;
    static constexpr int THREAD_N = THREAD_N_;
    static constexpr bool VEC = VEC_ != 0;              // float4 global access (aligned problems)
    static constexpr bool A_K_MAJOR = A_K_MAJOR_ != 0;  // VEC: A's unit stride is along k (else m)
    static constexpr bool B_N_MAJOR = B_N_MAJOR_ != 0;  // VEC: B's unit stride is along n (else k)
    static constexpr int WARPS_N = BLOCK_N / WARP_N;
    static constexpr int WARPS = BLOCK_M / WARP_M * WARPS_N;
    static constexpr int THREADS = 32 * WARPS;
    static constexpr int SUB_M = WARP_M / WARP_M_ITER;  // warp sub-tile
    static constexpr int SUB_N = WARP_N / WARP_N_ITER;
    static constexpr int LANES_M = SUB_M / THREAD_M;
    static constexpr int LANES_N = SUB_N / THREAD_N;
    static constexpr int FRAG_M = WARP_M_ITER * THREAD_M;
    static constexpr int FRAG_N = WARP_N_ITER * THREAD_N;
    static_assert(BLOCK_M % WARP_M == 0 && BLOCK_N % WARP_N == 0, "block_m and block_n must be multiples of warp_m and warp_n");
    static_assert(THREADS <= 1024, "(block_m/warp_m)*(block_n/warp_n) must be at most 32 warps");
    static_assert(WARP_M % WARP_M_ITER == 0 && WARP_N % WARP_N_ITER == 0,
                  "warp_m and warp_n must be multiples of warp_m_iter and warp_n_iter");
    static_assert(SUB_M % THREAD_M == 0 && SUB_N % THREAD_N == 0 && LANES_M * LANES_N == 32,
                  "the warp sub-tile must hold exactly 32 thread tiles (one per lane)");
    static_assert(THREAD_M % 4 == 0 && THREAD_N % 4 == 0, "thread_m and thread_n must be multiples of 4 (LDS.128)");
    static_assert(Layout::A_RUN % 4 == 0 && Layout::B_RUN % 4 == 0, "a layout keeps float4s whole");
    static_assert(BLOCK_K % 4 == 0, "block_k must be a multiple of 4 (float4 along k)");
    static_assert(THREADS % BLOCK_M == 0 && THREADS % BLOCK_N == 0 && THREADS % BLOCK_K == 0,
                  "the thread count must be a multiple of block_m, block_n and block_k (tile loaders)");
    static_assert(BLOCK_M * BLOCK_K % (4 * THREADS) == 0 && BLOCK_N * BLOCK_K % (4 * THREADS) == 0,
                  "every thread loads whole float4s of A and B: block_m*block_k and block_n*block_k must be "
                  "multiples of 4*threads");
    static_assert(FRAG_M * FRAG_N <= 128, "warp_m_iter*thread_m * warp_n_iter*thread_n must be at most 128 accumulators");
    static constexpr int SMEM_BYTES = (Layout::A_FLOATS + Layout::B_FLOATS) * 4;

    // Fragment row i / column j -> offset from the thread's origin; runs of 4 stay contiguous.
    __host__ __device__ static constexpr int row(int i) { return i / THREAD_M * SUB_M + i % THREAD_M; }
    __host__ __device__ static constexpr int col(int j) { return j / THREAD_N * SUB_N + j % THREAD_N; }

    // A thread's fragments of step k: 128-bit shared loads. Each aligned group of A_GROUP (B_GROUP)
    // fragment values lies in one run of the layout, so it costs one address and the main loop
    // reads at compile-time offsets from a few base registers.
    static constexpr int A_GROUP = gcd(THREAD_M, Layout::A_RUN);
    static constexpr int B_GROUP = gcd(THREAD_N, Layout::B_RUN);
    static __device__ __forceinline__ void load_fragments(float (&a_frag)[FRAG_M], float (&b_frag)[FRAG_N],
                                                          const float* As, const float* Bs, int k, int thread_row,
                                                          int thread_col) {
#pragma unroll
        for (int i = 0; i < FRAG_M; i += 4) {
            const int group = i - i % A_GROUP;
            tile_io::load_shared4(&a_frag[i], &As[Layout::a_index(k, thread_row + row(group)) + row(i) - row(group)]);
        }
#pragma unroll
        for (int j = 0; j < FRAG_N; j += 4) {
            const int group = j - j % B_GROUP;
            tile_io::load_shared4(&b_frag[j], &Bs[Layout::b_index(k, thread_col + col(group)) + col(j) - col(group)]);
        }
    }

    // The BLOCK_K outer products of one tile.
    static __device__ __forceinline__ void multiply_tile(float (&acc)[FRAG_M][FRAG_N], const float* As, const float* Bs,
                                                         int thread_row, int thread_col) {
#pragma unroll
        for (int k = 0; k < BLOCK_K; ++k) {
            float a_frag[FRAG_M], b_frag[FRAG_N];
            load_fragments(a_frag, b_frag, As, Bs, k, thread_row, thread_col);
            tile_io::outer_product(acc, a_frag, b_frag);
        }
    }

    // Registers -> this stage's shared layout (As transposed).
    template <class ATileT, class BTileT>
    static __device__ __forceinline__ void store_tiles(const ATileT& a_tile, const BTileT& b_tile, float* As, float* Bs) {
        a_tile.template store<Layout::A_STRIDE>(As, [](int k, int m) { return Layout::a_index(k, m); });
        b_tile.template store<Layout::B_STRIDE>(Bs, [](int k, int n) { return Layout::b_index(k, n); });
    }

    // The tiles that lie wholly inside K, k0 = 0, BLOCK_K, ... < k_end.
    template <bool CHECK_MN, class ATileT, class BTileT>
    static __device__ __forceinline__ void full_tiles(float (&acc)[FRAG_M][FRAG_N], ATileT& a_tile, BTileT& b_tile,
                                                      float* As, float* Bs, int64 k_end, int thread_row, int thread_col) {
        for (int64 k0 = 0; k0 < k_end; k0 += BLOCK_K) {
            int64 k = k0;
            tile_io::opaque(k);  // addresses from k, not stepped pointers (tile_io::Float4Tile::at)
            a_tile.template load_full<CHECK_MN>(k);
            b_tile.template load_full<CHECK_MN>(k);
            store_tiles(a_tile, b_tile, As, Bs);
            __syncthreads();
            multiply_tile(acc, As, Bs, thread_row, thread_col);
            __syncthreads();  // the next tile overwrites As and Bs
        }
    }

    // Thread placement (§6.3): warps row-major over the block tile, lanes as the Layout says.
    static __device__ __forceinline__ int thread_row_of(int tid) {
        return tid / 32 / WARPS_N * WARP_M + Layout::lane_row(tid % 32) * THREAD_M;
    }
    static __device__ __forceinline__ int thread_col_of(int tid) {
        return tid / 32 % WARPS_N * WARP_N + Layout::lane_col(tid % 32) * THREAD_N;
    }

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem) {
        float* As = reinterpret_cast<float*>(smem);  // As[k][m], transposed (§7.3)
        float* Bs = As + Layout::A_FLOATS;           // Bs[k][n]
        // Per-thread setup, recomputed for every batch (tile_io::opaque says why).
        int tid = threadIdx.x;
        int64 tile_row = row0, tile_col = col0, K = args.K;
        tile_io::opaque(tid);
        tile_io::opaque(tile_row);
        tile_io::opaque(tile_col);
        tile_io::opaque(K);
        const int thread_row = thread_row_of(tid), thread_col = thread_col_of(tid);

        tile_io::ATile<VEC, A_K_MAJOR, BLOCK_M, BLOCK_K, THREADS> a_tile;
        tile_io::BTile<VEC, B_N_MAJOR, BLOCK_N, BLOCK_K, THREADS> b_tile;
        a_tile.init(args, tile_row, tid);
        b_tile.init(args, tile_col, tid);

        float acc[FRAG_M][FRAG_N];
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
            for (int j = 0; j < FRAG_N; ++j) acc[i][j] = 0.0f;

        // The partial tile at the end of K first (K % BLOCK_K != 0), zero-filled past K; then the
        // whole tiles with no k checks, and with no m, n checks either in blocks inside M x N (most
        // of them). Done first, the tail's bookkeeping is dead by the main loop.
        const int64 k_full = K / BLOCK_K * BLOCK_K;
        const int k_tail = (int)(K - k_full);
        if (k_tail > 0) {
            a_tile.load_tail(k_full, k_tail);
            b_tile.load_tail(k_full, k_tail);
            store_tiles(a_tile, b_tile, As, Bs);
            __syncthreads();
            multiply_tile(acc, As, Bs, thread_row, thread_col);
            __syncthreads();
        }
        if (tile_row + BLOCK_M <= args.M && tile_col + BLOCK_N <= args.N)
            full_tiles<false>(acc, a_tile, b_tile, As, Bs, k_full, thread_row, thread_col);
        else
            full_tiles<true>(acc, a_tile, b_tile, As, Bs, k_full, thread_row, thread_col);

        // The epilogue places the thread again rather than keep its origin live through the loop.
        int tid_out = threadIdx.x;
        tile_io::opaque(tid_out);
        tile_io::store_fragment<S07Vectorized, VEC>(args, acc, row0 + thread_row_of(tid_out),
                                                    col0 + thread_col_of(tid_out));
    }
};

}  // namespace gemmlab
