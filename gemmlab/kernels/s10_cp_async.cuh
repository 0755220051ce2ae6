// s10 cp_async (notes 000 §10.1–10.4): the register- and warp-tiled SIMT FFMA kernel fed by an
// Ampere cp.async pipeline. What it adds over double buffering (s09):
//   - global -> shared copies go straight into shared memory (LDGSTS), no register staging;
//   - STAGES shared buffers (3–4), one cp.async group committed per K tile, and
//     cp.async.wait_group(STAGES-2) + one __syncthreads per K tile;
//   - edges are zero-filled by the copy itself (the src-size operand), not by branches;
//   - 16-byte cp.async.cg where every row start is 16-byte aligned (VEC), 4-byte cp.async.ca else.
// Each operand is kept in shared memory in its global layout (copies cannot transpose 16 bytes):
//   A K-major (row-major) -> As[m][k], XOR-swizzled (a_swizzle=1);  A M-major -> As[k][m];
//   B N-major (row-major) -> Bs[k][n];  B K-major (transposed view) -> Bs[n][k], XOR-swizzled.
// The swizzle of the [x][k] tiles is TMA's SWIZZLE_{32,64,128}B, so s11's boxes land the same way.
// WarpTileCore (the fragment loads, FFMAs and epilogue for these layouts) is shared with s11,
// which replaces only the copies.
#pragma once
#include "common.cuh"
#include "async_copy.cuh"

namespace gemmlab {

// Block -> warp -> thread tiling with lanes as 4 (M) x 8 (N). A thread owns THREAD_M x THREAD_N
// outputs. Rows: in groups of 4 consecutive rows, 16 apart (A M-major: one LDS.128 reads 4 rows),
// or single rows 4 apart (A K-major: the 4 quarter-warps then read 4 consecutive swizzled rows of
// As[m][k], in 4 different banks). Columns: chunks of 4 consecutive columns 32 apart (B N-major),
// or single columns 8 apart (B K-major: a quarter-warp reads 8 consecutive swizzled rows of Bs[n][k]).
// The k loop runs in groups of 4 k: one LDS.128 then yields 4 k of one row of a [x][k] tile or
// 4 rows/columns of one k of a [k][x] tile, so every fragment load is an LDS.128 in all layouts.
template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int WARP_M, int WARP_N, int K_UNROLL, bool A_SWIZZLE,
          bool A_K_MAJOR, bool B_N_MAJOR>
struct WarpTileCore {
    // As[m][k] swizzled, with single rows 4 apart (else plain, with groups of 4 rows): a config choice.
    static constexpr bool A_ROWS_SWIZZLED = A_K_MAJOR && A_SWIZZLE;
    static constexpr int LANES_M = 4, LANES_N = 8;
    static constexpr int THREAD_M = WARP_M / LANES_M, THREAD_N = WARP_N / LANES_N;
    static constexpr int WARPS_M = BLOCK_M / WARP_M, WARPS_N = BLOCK_N / WARP_N;
    static constexpr int THREADS = WARPS_M * WARPS_N * 32;
    static constexpr int A_TILE_FLOATS = BLOCK_M * BLOCK_K;
    static constexpr int B_TILE_FLOATS = BLOCK_K * BLOCK_N;
    static constexpr int K_ROW_BYTES = BLOCK_K * 4;  // one row of a [x][k] tile
    static constexpr int K_CHUNKS = BLOCK_K / 4;     // its 16-byte chunks
    static constexpr int K_GROUPS = BLOCK_K / 4;

    static_assert(BLOCK_M % WARP_M == 0 && BLOCK_N % WARP_N == 0, "the warp tile must divide the block tile");
    static_assert(WARP_M % 16 == 0, "warp_m must be a multiple of 16 (4 lanes x groups of 4 rows)");
    static_assert(WARP_N % 32 == 0, "warp_n must be a multiple of 32 (8 lanes x chunks of 4 columns)");
    static_assert(THREADS >= 32 && THREADS <= 1024, "threads = (block_m/warp_m)*(block_n/warp_n)*32 must be 32..1024");
    static_assert(BLOCK_K == 8 || BLOCK_K == 16 || BLOCK_K == 32,
                  "block_k must be 8, 16 or 32 (a [x][k] row is then one 32/64/128-byte swizzle span)");
    static_assert(THREAD_M * THREAD_N <= 128, "thread_m*thread_n accumulators must be at most 128 (registers)");
    static_assert(K_UNROLL >= 1 && K_GROUPS % K_UNROLL == 0, "k_unroll must divide block_k/4");

    // Chunk c of row x of a [x][k] tile is stored at chunk c ^ f(x): the TMA SWIZZLE_32B/64B/128B
    // pattern for K_ROW_BYTES-wide rows (bits [4,4+log2 K_CHUNKS) of the byte offset XOR bits
    // [7,7+log2 K_CHUNKS)). Tiles are 1024-byte aligned, so offsets and addresses agree.
    static __device__ __forceinline__ int swizzle_chunk(int x, int c) {
        return c ^ ((x * K_ROW_BYTES / 128) & (K_CHUNKS - 1));
    }

    // Offset of row i / column j of the thread tile from the thread's first row / column.
    static __device__ __forceinline__ int row_of(int i) {
        return A_ROWS_SWIZZLED ? i * LANES_M : (i / 4) * (LANES_M * 4) + i % 4;
    }
    static __device__ __forceinline__ int col_of(int j) {
        return B_N_MAJOR ? (j / 4) * (LANES_N * 4) + j % 4 : j * LANES_N;
    }

    int m_base;     // first row of this thread in the block tile
    int n_base;     // first column
    int a_swizzle;  // f(m_base): row m_base + 4i of As[m][k] has f = a_swizzle ^ (i odd ? K_CHUNKS/2 : 0)
    int b_swizzle;  // f(n) of the thread's Bs[n][k] rows (the same for all its columns)

    __device__ __forceinline__ WarpTileCore() {
        const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
        const int warp_row = warp / WARPS_N, warp_col = warp % WARPS_N;
        const int lane_row = lane / LANES_N, lane_col = lane % LANES_N;
        m_base = warp_row * WARP_M + (A_ROWS_SWIZZLED ? lane_row : lane_row * 4);
        n_base = warp_col * WARP_N + (B_N_MAJOR ? lane_col * 4 : lane_col);
        // f(x) = (x * K_CHUNKS / 8) mod K_CHUNKS, so f(x + 8j) = f(x) and f(x + 4i) = f(x) ^ (i odd) * K_CHUNKS/2.
        a_swizzle = swizzle_chunk(m_base, 0);
        b_swizzle = swizzle_chunk(n_base, 0);
    }

    // acc += A_tile * B_tile for one BLOCK_K-deep stage, K_UNROLL groups of 4 k per loop trip
    // (full unrolling would let ptxas hoist so many loads that it runs out of registers).
    __device__ __forceinline__ void multiply(float (&acc)[THREAD_M][THREAD_N], const float* __restrict__ a_tile,
                                             const float* __restrict__ b_tile) const {
#pragma unroll K_UNROLL
        for (int g = 0; g < K_GROUPS; ++g) {
            float b[4][THREAD_N];
            if constexpr (B_N_MAJOR) {
#pragma unroll
                for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
                    for (int jq = 0; jq < THREAD_N / 4; ++jq) {
                        const float4 v = *reinterpret_cast<const float4*>(
                            b_tile + (4 * g + kk) * BLOCK_N + n_base + jq * (LANES_N * 4));
                        b[kk][4 * jq + 0] = v.x;
                        b[kk][4 * jq + 1] = v.y;
                        b[kk][4 * jq + 2] = v.z;
                        b[kk][4 * jq + 3] = v.w;
                    }
                }
            } else {
                const int chunk = g ^ b_swizzle;
#pragma unroll
                for (int j = 0; j < THREAD_N; ++j) {
                    const float4 v = *reinterpret_cast<const float4*>(
                        b_tile + (n_base + j * LANES_N) * BLOCK_K + chunk * 4);
                    b[0][j] = v.x;
                    b[1][j] = v.y;
                    b[2][j] = v.z;
                    b[3][j] = v.w;
                }
            }
            if constexpr (A_K_MAJOR) {
                // One row at a time: 4 k of it in one LDS.128, then 4*THREAD_N FFMAs.
                const int chunk = A_ROWS_SWIZZLED ? g ^ a_swizzle : g;
#pragma unroll
                for (int i = 0; i < THREAD_M; ++i) {
                    const int row_chunk = A_ROWS_SWIZZLED ? chunk ^ ((i & 1) * (K_CHUNKS / 2)) : chunk;
                    const float4 v = *reinterpret_cast<const float4*>(a_tile + (m_base + row_of(i)) * BLOCK_K +
                                                                      row_chunk * 4);
                    const float a[4] = {v.x, v.y, v.z, v.w};
#pragma unroll
                    for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
                        for (int j = 0; j < THREAD_N; ++j) acc[i][j] = fmaf(a[kk], b[kk][j], acc[i][j]);
                    }
                }
            } else {
                // One k at a time: the classic outer product of a THREAD_M column and a THREAD_N row.
#pragma unroll
                for (int kk = 0; kk < 4; ++kk) {
                    float a[THREAD_M];
#pragma unroll
                    for (int iq = 0; iq < THREAD_M / 4; ++iq) {
                        const float4 v = *reinterpret_cast<const float4*>(
                            a_tile + (4 * g + kk) * BLOCK_M + m_base + iq * (LANES_M * 4));
                        a[4 * iq + 0] = v.x;
                        a[4 * iq + 1] = v.y;
                        a[4 * iq + 2] = v.z;
                        a[4 * iq + 3] = v.w;
                    }
#pragma unroll
                    for (int i = 0; i < THREAD_M; ++i) {
#pragma unroll
                        for (int j = 0; j < THREAD_N; ++j) acc[i][j] = fmaf(a[i], b[kk][j], acc[i][j]);
                    }
                }
            }
        }
    }

    // D = alpha * acc + beta * D for the thread's outputs, guarded at the M/N edges. Chunks of 4
    // columns use one 16-byte store when D's rows are 16-byte aligned (checked here, at run time).
    __device__ __forceinline__ void store(const GemmArgs& args, int64 row0, int64 col0,
                                          const float (&acc)[THREAD_M][THREAD_N]) const {
        const bool d_aligned = ((reinterpret_cast<unsigned long long>(args.D) | (unsigned long long)(args.ldd * 4)) & 15) == 0;
#pragma unroll
        for (int i = 0; i < THREAD_M; ++i) {
            const int64 row = row0 + m_base + row_of(i);
            if (row >= args.M) continue;
            if constexpr (B_N_MAJOR) {
#pragma unroll
                for (int jq = 0; jq < THREAD_N / 4; ++jq) {
                    const int64 col = col0 + n_base + jq * (LANES_N * 4);
                    if (d_aligned && col + 3 < args.N) {
                        store_output4(args, row, col,
                                      make_float4(acc[i][4 * jq], acc[i][4 * jq + 1], acc[i][4 * jq + 2], acc[i][4 * jq + 3]));
                    } else {
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            if (col + e < args.N) store_output(args, row, col + e, acc[i][4 * jq + e]);
                        }
                    }
                }
            } else {
#pragma unroll
                for (int j = 0; j < THREAD_N; ++j) {
                    const int64 col = col0 + n_base + col_of(j);
                    if (col < args.N) store_output(args, row, col, acc[i][j]);
                }
            }
        }
    }
};

// Copies one operand tile, stored [OUTER][INNER] in shared memory, with cp.async. Consecutive
// threads take consecutive units (4 floats when VEC, else 1) along INNER, the unit-stride global
// dimension when the layout was chosen by the operand's majorness, so reads are coalesced and a
// warp's shared-memory writes are contiguous. INNER_IS_K says which of the two dimensions walks
// K (it moves by BLOCK_K per tile); the other is M or N (fixed for the block). All 64-bit address
// arithmetic is done once in the constructor; a tile costs an add per copy plus the edge tests.
template <int OUTER, int INNER, bool INNER_IS_K, bool SWIZZLE, bool VEC, int THREADS, class Core>
struct TileCopier {
    static constexpr int UNIT = VEC ? 4 : 1;
    static constexpr int UNITS_PER_ROW = INNER / UNIT;
    static constexpr int UNITS = OUTER * UNITS_PER_ROW;
    static constexpr int ITERS = UNITS / THREADS;
    static_assert(INNER % 4 == 0, "tile rows are whole 16-byte chunks");
    static_assert(UNITS % THREADS == 0 && (THREADS % UNITS_PER_ROW == 0 || UNITS_PER_ROW % THREADS == 0),
                  "the tile copy must split evenly over the threads");
    // Iteration `it` copies unit threadIdx.x + it*THREADS: (outer0 + outer_step, inner0 + inner_step).
    static constexpr int ROWS_PER_ITER = THREADS >= UNITS_PER_ROW ? THREADS / UNITS_PER_ROW : 0;
    static constexpr int ITERS_PER_ROW = THREADS >= UNITS_PER_ROW ? 1 : UNITS_PER_ROW / THREADS;
    static __device__ __forceinline__ constexpr int outer_step(int it) {
        return ROWS_PER_ITER ? it * ROWS_PER_ITER : it / ITERS_PER_ROW;
    }
    static __device__ __forceinline__ constexpr int inner_step(int it) {
        return ROWS_PER_ITER ? 0 : (it % ITERS_PER_ROW) * THREADS * UNIT;
    }

    const float* src;  // this thread's unit of iteration 0, in the current K tile
    int64 row_jump;    // elements from one iteration's row to the next (ROWS_PER_ITER rows, or 1)
    int64 inner_jump;  // elements between iterations within a row (when a row spans iterations)
    int64 tile_step;   // elements per K tile
    int outer0, inner0;

    // origin: global address of the block's tile (outer 0, inner 0) at k = 0; strides in elements
    // (the inner one is 1 when VEC: the host checked).
    __device__ __forceinline__ TileCopier(const float* origin, int64 outer_stride, int64 inner_stride) {
        if (VEC) inner_stride = 1;
        outer0 = ROWS_PER_ITER ? static_cast<int>(threadIdx.x) / UNITS_PER_ROW : 0;
        inner0 = (ROWS_PER_ITER ? static_cast<int>(threadIdx.x) % UNITS_PER_ROW : static_cast<int>(threadIdx.x)) * UNIT;
        src = origin + outer0 * outer_stride + inner0 * inner_stride;
        row_jump = (ROWS_PER_ITER ? ROWS_PER_ITER : 1) * outer_stride;
        inner_jump = static_cast<int64>(THREADS * UNIT) * inner_stride;
        tile_step = (INNER_IS_K ? inner_stride : outer_stride) * (Core::K_GROUPS * 4);
    }

    // Copy the current K tile into the tile at shared address `tile`, then step to the next.
    // k_left = K - k0 (> 0), fixed_left = rows (M) or columns (N) left from the block's origin;
    // both are clamped to 2^30 by the caller, so the edge tests are 32-bit.
    __device__ __forceinline__ void copy_and_advance(unsigned tile, int k_left, int fixed_left,
                                                     const float* any_valid) {
        const int outer_left = INNER_IS_K ? fixed_left : k_left;
        const int inner_left = INNER_IS_K ? k_left : fixed_left;
        const float* row = src;  // walked with adds: no per-iteration 64-bit products to keep live
#pragma unroll
        for (int it = 0; it < ITERS; ++it) {
            const int outer = outer0 + outer_step(it);
            const int inner = inner0 + inner_step(it);
            int dst_float;
            if constexpr (SWIZZLE) {
                dst_float = outer * INNER + Core::swizzle_chunk(outer, inner / 4) * 4 + inner % 4;
            } else {
                dst_float = outer * INNER + inner;
            }
            int count = inner_left - inner;
            count = count < 0 ? 0 : (count > UNIT ? UNIT : count);
            if (outer >= outer_left) count = 0;
            const float* from = ROWS_PER_ITER ? row : row + (it % ITERS_PER_ROW) * inner_jump;
            from = count > 0 ? from : any_valid;  // a zero-byte copy reads nothing, but keep it in bounds
            if constexpr (VEC) {
                async::copy_16(tile + 4u * dst_float, from, count * 4);
            } else {
                async::copy_4(tile + 4u * dst_float, from, count * 4);
            }
            if (ROWS_PER_ITER || (it + 1) % ITERS_PER_ROW == 0) row += row_jump;
        }
        src += tile_step;
    }
};

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int WARP_M_, int WARP_N_, int K_UNROLL_, bool A_SWIZZLE_,
          int STAGES_, bool VEC_, bool A_K_MAJOR_, bool B_N_MAJOR_>
struct S10CpAsync {
    using Core = WarpTileCore<BLOCK_M_, BLOCK_N_, BLOCK_K_, WARP_M_, WARP_N_, K_UNROLL_, A_SWIZZLE_, A_K_MAJOR_,
                              B_N_MAJOR_>;
    static constexpr int BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_;
    static constexpr int STAGES = STAGES_;
    static constexpr int THREADS = Core::THREADS;
    static_assert(STAGES >= 2 && STAGES <= 8, "stages must be 2..8");
    static constexpr int SMEM_BYTES = STAGES * (Core::A_TILE_FLOATS + Core::B_TILE_FLOATS) * 4;

    // A K-major: As[m][k] swizzled; M-major: As[k][m]. B N-major: Bs[k][n]; K-major: Bs[n][k] swizzled.
    using CopyA = TileCopier<A_K_MAJOR_ ? BLOCK_M : BLOCK_K, A_K_MAJOR_ ? BLOCK_K : BLOCK_M, A_K_MAJOR_,
                             Core::A_ROWS_SWIZZLED, VEC_, THREADS, Core>;
    using CopyB = TileCopier<B_N_MAJOR_ ? BLOCK_K : BLOCK_N, B_N_MAJOR_ ? BLOCK_N : BLOCK_K, !B_N_MAJOR_,
                             !B_N_MAJOR_, VEC_, THREADS, Core>;

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem) {
        float* a_tiles = reinterpret_cast<float*>(smem);
        float* b_tiles = a_tiles + STAGES * Core::A_TILE_FLOATS;
        const unsigned a_smem = async::smem_address(a_tiles), b_smem = async::smem_address(b_tiles);
        const Core core;

        // [outer][inner] shared layouts: A K-major is (m, k), M-major (k, m); B N-major (k, n), K-major (n, k).
        CopyA copy_a(args.A + row0 * args.a_row_stride, A_K_MAJOR_ ? args.a_row_stride : args.a_col_stride,
                     A_K_MAJOR_ ? args.a_col_stride : args.a_row_stride);
        CopyB copy_b(args.B + col0 * args.b_col_stride, B_N_MAJOR_ ? args.b_row_stride : args.b_col_stride,
                     B_N_MAJOR_ ? args.b_col_stride : args.b_row_stride);
        // Rows, columns and K left from the block's origin, clamped to 2^30 (more is "all valid").
        auto clamp_left = [](int64 left) { return static_cast<int>(left < (1 << 30) ? left : (1 << 30)); };
        const int m_left = clamp_left(args.M - row0), n_left = clamp_left(args.N - col0);

        int64 k_left = args.K;  // K - k0 of the next tile to copy
        auto copy_tile = [&](int stage) {
            const int k_left_tile = clamp_left(k_left);
            copy_a.copy_and_advance(a_smem + stage * (Core::A_TILE_FLOATS * 4), k_left_tile, m_left, args.A);
            copy_b.copy_and_advance(b_smem + stage * (Core::B_TILE_FLOATS * 4), k_left_tile, n_left, args.B);
            k_left -= BLOCK_K;
        };

        float acc[Core::THREAD_M][Core::THREAD_N];
#pragma unroll
        for (int i = 0; i < Core::THREAD_M; ++i)
#pragma unroll
            for (int j = 0; j < Core::THREAD_N; ++j) acc[i][j] = 0.0f;

        const int num_tiles = static_cast<int>((args.K + BLOCK_K - 1) / BLOCK_K);
        // Prologue: tiles 0..STAGES-2 in flight, one group each (empty groups keep the count uniform).
#pragma unroll
        for (int s = 0; s < STAGES - 1; ++s) {
            if (s < num_tiles) copy_tile(s);
            async::commit_group();
        }
        int read_stage = 0, write_stage = STAGES - 1;
        for (int tile = 0; tile < num_tiles; ++tile) {
            // Tile `tile` is group number `tile`; STAGES-1+tile groups are committed, so allowing
            // STAGES-2 pending means it has landed (for this thread's copies).
            async::wait_group<STAGES - 2>();
            // Everyone's copies are visible, and everyone has finished reading write_stage (tile-1).
            __syncthreads();
            if (tile + STAGES - 1 < num_tiles) copy_tile(write_stage);
            async::commit_group();
            core.multiply(acc, a_tiles + read_stage * Core::A_TILE_FLOATS, b_tiles + read_stage * Core::B_TILE_FLOATS);
            read_stage = read_stage == STAGES - 1 ? 0 : read_stage + 1;
            write_stage = write_stage == STAGES - 1 ? 0 : write_stage + 1;
        }
        async::wait_group<0>();  // only empty groups can remain; nothing is left in flight on exit
        core.store(args, row0, col0, acc);
    }
};

}  // namespace gemmlab
