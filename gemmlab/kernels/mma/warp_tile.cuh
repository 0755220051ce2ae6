// gemmlab/kernels/mma/warp_tile.cuh — the SIMT warp-tile core of s10 and s11 (notes 000 §6–§8):
// fragment loads from shared memory (LDS.128 in every layout), the FFMA outer products, and the
// predicated epilogue of a thread's THREAD_M x THREAD_N outputs. s10 feeds it with cp.async, s11
// with TMA; the shared layouts it reads are the ones both copies write.
#pragma once
#include "common.cuh"

namespace gemmlab {

// Block -> warp -> thread tiling with lanes as 4 (M) x 8 (N). A thread owns THREAD_M x THREAD_N
// outputs. Rows: in groups of 4 consecutive rows, 16 apart (A M-major: one LDS.128 reads 4 rows),
// or single rows 4 apart (A K-major: the 4 quarter-warps then read 4 consecutive swizzled rows of
// As[m][k], in 4 different banks). Columns: chunks of 4 consecutive columns 32 apart (B N-major),
// or single columns 8 apart (B K-major: a quarter-warp reads 8 consecutive swizzled rows of Bs[n][k]).
// The k loop runs in groups of 4 k: one LDS.128 then yields 4 k of one row of a [x][k] tile or
// 4 rows/columns of one k of a [k][x] tile, so every fragment load is an LDS.128 in all layouts.
//
// FFMA_ROTATE (B N-major only): where each run of THREAD_N FFMAs that share one value of A starts.
// The run's first FFMA reads all three operands from the register file (later ones take A's
// value from the reuse cache); A's value is component c of an LDS.128 quad, and B's value j is
// component j mod 4 of its quad. With 4 register banks (register mod 4: `gemmlab sass`'s count),
// starting the run at column (c + 2) mod 4 keeps A, B and (with ptxas's usual accumulator
// choice) the accumulator in three banks. With the 2 banks of the issue model
// (analysis/issue_model.py) it cannot help: three reads always share a bank. Which of the two
// holds on Hopper is for the H200 to say (docs/stages/s10-s11.md); 0: columns in order.
// FFMA_ROTATE 2 (serpentine; the outer-product layout only, in order elsewhere): the runs of odd
// rows go right to left, so each run starts on the B value the run before ended on. ptxas then
// keeps two B values (one per register bank) in the reuse cache where it can, as in cuBLAS's FFMA
// kernels, and fewer FFMAs read two registers of one bank (docs/stages/s10-s11.md, "Serpentine").
//
// B_SCALAR (B K-major only): B's fragments are read one k at a time (LDS.32) instead of 4 k of a
// column per LDS.128, and with A M-major (tt) each run of FFMAs shares one value of B (the A
// values, 4 rows per LDS.128, alternate register banks, so the accumulators can take the other
// bank). With 4 k per load, the 4 k of a column land in 4 consecutive registers: every value of
// one k sits in the same one of Hopper's 2 register banks, so whichever operand is read from the
// register file meets each accumulator in its own bank in 2 of its 4 k: half the FFMAs lose an
// issue slot to a bank conflict (`gemmlab sass`, issue model; docs/stages/s10-s11.md).
//
// A_LD / B_LD (0: BLOCK_M / BLOCK_N): the row stride in floats of a [k][m] / [k][n] tile. s10's
// transposing 4-byte copies pad the rows they write by 4 floats (copy/cp_async_tile.cuh).
//
// FRAG_PREFETCH: B's fragments of the next group of 4 k are loaded before this group's FFMAs, into
// a second set of registers (the two alternate), so that a group's first FFMAs do not wait out the
// LDS latency; without it ptxas hoists loads only within one trip of the loop (K_UNROLL groups).
//
// KFrag / load_k / ffma_k / multiply_run (the outer-product layout only: A M-major, B N-major): one
// k at a time, the next k's fragments loaded before this k's FFMAs, and the k after a run left in
// registers for the caller, which may cross its barrier and load the next tile's first k before
// that k's FFMAs (s10's FRAG_CARRY: runs of a tile's k's but its last, or of CARRY_CHUNK k's).
template <int BLOCK_M, int BLOCK_N, int BLOCK_K, int WARP_M, int WARP_N, int K_UNROLL, bool A_SWIZZLE,
          bool A_K_MAJOR, bool B_N_MAJOR, int FFMA_ROTATE = 0, bool B_SCALAR = false, int A_LD_ = 0, int B_LD_ = 0,
          bool FRAG_PREFETCH = false>
struct WarpTileCore {
    // As[m][k] swizzled, with single rows 4 apart (else plain, with groups of 4 rows): a config choice.
    static constexpr bool A_ROWS_SWIZZLED = A_K_MAJOR && A_SWIZZLE;
    static constexpr bool COLS_IN_FOURS = B_N_MAJOR;  // col_of: runs of 4 consecutive columns
    static constexpr bool OUTER_PRODUCT = !A_K_MAJOR && B_N_MAJOR;  // As[k][m] and Bs[k][n]: load_k
    static constexpr int LANES_M = 4, LANES_N = 8;
    static constexpr int THREAD_M = WARP_M / LANES_M, THREAD_N = WARP_N / LANES_N;
    static constexpr int WARPS_M = BLOCK_M / WARP_M, WARPS_N = BLOCK_N / WARP_N;
    static constexpr int THREADS = WARPS_M * WARPS_N * 32;
    static constexpr int A_LD = A_LD_ ? A_LD_ : BLOCK_M;  // [k][m] rows (A M-major)
    static constexpr int B_LD = B_LD_ ? B_LD_ : BLOCK_N;  // [k][n] rows (B N-major)
    static constexpr int A_TILE_FLOATS = A_K_MAJOR ? BLOCK_M * BLOCK_K : BLOCK_K * A_LD;
    static constexpr int B_TILE_FLOATS = B_N_MAJOR ? BLOCK_K * B_LD : BLOCK_N * BLOCK_K;
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
    static_assert(FFMA_ROTATE >= 0 && FFMA_ROTATE <= 2, "ffma order: 0 in order, 1 rotated, 2 serpentine");
    static_assert(!B_SCALAR || !B_N_MAJOR, "b_scalar: B's fragments one k at a time only where B is K-major");
    static_assert(A_LD >= BLOCK_M && A_LD % 4 == 0 && B_LD >= BLOCK_N && B_LD % 4 == 0,
                  "a [k][x] tile's rows hold the tile's x and stay 16-byte aligned");

    // Column j of the jj-th FFMA in a run whose A value is component c of its quad (FFMA_ROTATE;
    // consecutive runs have c of alternating parity, so c also says which way a serpentine run goes).
    static __device__ __forceinline__ int run_column(int c, int jj) {
        if (FFMA_ROTATE == 2 && OUTER_PRODUCT) return c % 2 ? THREAD_N - 1 - jj : jj;
        return (FFMA_ROTATE == 1 && B_N_MAJOR) ? (jj + (c + 2) % 4) % THREAD_N : jj;
    }

    // dst[at .. at+3] = the 16-byte quad at src (one LDS.128).
    template <int N>
    static __device__ __forceinline__ void load_quad(float (&dst)[N], int at, const float* src) {
        const float4 v = *reinterpret_cast<const float4*>(src);
        dst[at + 0] = v.x;
        dst[at + 1] = v.y;
        dst[at + 2] = v.z;
        dst[at + 3] = v.w;
    }

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

    // B's fragments of group g (4 k): b[kk][j], one LDS.128 per load in every layout.
    __device__ __forceinline__ void load_b(int g, const float* __restrict__ b_tile, float (&b)[4][THREAD_N]) const {
        if constexpr (B_N_MAJOR) {
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
#pragma unroll
                for (int jq = 0; jq < THREAD_N / 4; ++jq)
                    load_quad(b[kk], 4 * jq, b_tile + (4 * g + kk) * B_LD + n_base + jq * (LANES_N * 4));
            }
        } else {
            const int chunk = g ^ b_swizzle;
#pragma unroll
            for (int j = 0; j < THREAD_N; ++j) {
                const float* column = b_tile + (n_base + j * LANES_N) * BLOCK_K + chunk * 4;
                if constexpr (B_SCALAR) {
#pragma unroll
                    for (int kk = 0; kk < 4; ++kk) b[kk][j] = column[kk];
                } else {
                    const float4 v = *reinterpret_cast<const float4*>(column);
                    b[0][j] = v.x;
                    b[1][j] = v.y;
                    b[2][j] = v.z;
                    b[3][j] = v.w;
                }
            }
        }
    }

    // acc += the outer product of one k's THREAD_M values of A and THREAD_N of B, a run of FFMAs
    // per row in the order run_column gives (FFMA_ROTATE).
    static __device__ __forceinline__ void outer_product(float (&acc)[THREAD_M][THREAD_N], const float (&a)[THREAD_M],
                                                         const float (&b)[THREAD_N]) {
#pragma unroll
        for (int i = 0; i < THREAD_M; ++i) {
#pragma unroll
            for (int jj = 0; jj < THREAD_N; ++jj) {
                const int j = run_column(i % 4, jj);
                acc[i][j] = fmaf(a[i], b[j], acc[i][j]);
            }
        }
    }

    // acc += the group-g slice of A times b (B's fragments of group g).
    __device__ __forceinline__ void multiply_group(float (&acc)[THREAD_M][THREAD_N], int g, const float* __restrict__ a_tile,
                                                   const float (&b)[4][THREAD_N]) const {
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
                    for (int jj = 0; jj < THREAD_N; ++jj) {
                        const int j = run_column(kk, jj);
                        acc[i][j] = fmaf(a[kk], b[kk][j], acc[i][j]);
                    }
                }
            }
        } else {
            // One k at a time: the classic outer product of a THREAD_M column and a THREAD_N row.
#pragma unroll
            for (int kk = 0; kk < 4; ++kk) {
                float a[THREAD_M];
#pragma unroll
                for (int iq = 0; iq < THREAD_M / 4; ++iq)
                    load_quad(a, 4 * iq, a_tile + (4 * g + kk) * A_LD + m_base + iq * (LANES_M * 4));
                if constexpr (B_SCALAR) {
                    // Runs along M sharing B's value: the register-file reads are A's (banks
                    // alternating with the row) and the accumulator's.
#pragma unroll
                    for (int j = 0; j < THREAD_N; ++j) {
#pragma unroll
                        for (int i = 0; i < THREAD_M; ++i) acc[i][j] = fmaf(a[i], b[kk][j], acc[i][j]);
                    }
                } else {
                    outer_product(acc, a, b[kk]);
                }
            }
        }
    }

    // One k of the outer-product layout: the thread's THREAD_M values of A and THREAD_N of B.
    struct KFrag {
        float a[THREAD_M];
        float b[THREAD_N];
    };

    __device__ __forceinline__ void load_k(KFrag& f, const float* __restrict__ a_tile, const float* __restrict__ b_tile,
                                           int k) const {
        static_assert(OUTER_PRODUCT, "one k at a time: the outer-product layout (As[k][m], Bs[k][n])");
#pragma unroll
        for (int iq = 0; iq < THREAD_M / 4; ++iq) load_quad(f.a, 4 * iq, a_tile + k * A_LD + m_base + iq * (LANES_M * 4));
#pragma unroll
        for (int jq = 0; jq < THREAD_N / 4; ++jq) load_quad(f.b, 4 * jq, b_tile + k * B_LD + n_base + jq * (LANES_N * 4));
    }

    // acc += the outer product of one k's fragments (the FFMA order of multiply_group's).
    __device__ __forceinline__ void ffma_k(float (&acc)[THREAD_M][THREAD_N], const KFrag& f) const {
        outer_product(acc, f.a, f.b);
    }

    // acc += the COUNT k's of the stage from k0, f holding k0's fragments on entry; on return f holds
    // those of k0 + COUNT (loaded, not yet multiplied). hook() runs after k HOOK_K's FFMAs (-1: never).
    template <int COUNT, int HOOK_K = -1, class Hook = void (*)()>
    __device__ __forceinline__ void multiply_run(float (&acc)[THREAD_M][THREAD_N], const float* __restrict__ a_tile,
                                                 const float* __restrict__ b_tile, int k0, KFrag& f,
                                                 Hook hook = nullptr) const {
        static_assert(COUNT >= 1 && COUNT < BLOCK_K, "a run of 1 .. BLOCK_K-1 k's, the one after it loaded");
        static_assert(HOOK_K >= -1 && HOOK_K < COUNT, "the hook runs after one of the run's k's");
#pragma unroll
        for (int k = 0; k < COUNT; ++k) {
            KFrag next;
            load_k(next, a_tile, b_tile, k0 + k + 1);
            ffma_k(acc, f);
            if constexpr (HOOK_K >= 0) {
                if (k == HOOK_K) hook();
            }
            f = next;
        }
    }

    // acc += A_tile * B_tile for one BLOCK_K-deep stage, K_UNROLL groups of 4 k per loop trip
    // (full unrolling would let ptxas hoist so many loads that it runs out of registers).
    __device__ __forceinline__ void multiply(float (&acc)[THREAD_M][THREAD_N], const float* __restrict__ a_tile,
                                             const float* __restrict__ b_tile) const {
        if constexpr (FRAG_PREFETCH) {
            static_assert(K_GROUPS % 2 == 0, "frag_prefetch: the groups alternate between two buffers");
            float b0[4][THREAD_N], b1[4][THREAD_N];
            load_b(0, b_tile, b0);
#pragma unroll
            for (int g = 0; g < K_GROUPS; g += 2) {
                load_b(g + 1, b_tile, b1);
                multiply_group(acc, g, a_tile, b0);
                if (g + 2 < K_GROUPS) load_b(g + 2, b_tile, b0);
                multiply_group(acc, g + 1, a_tile, b1);
            }
        } else {
#pragma unroll K_UNROLL
            for (int g = 0; g < K_GROUPS; ++g) {
                float b[4][THREAD_N];
                load_b(g, b_tile, b);
                multiply_group(acc, g, a_tile, b);
            }
        }
    }

    // The addend of the thread's THREAD_N columns in C's row ``row`` (a separate C), zero past
    // the N edge: one 16-byte load per chunk of 4 columns where C's columns allow it.
    __device__ __forceinline__ void load_c_row(const GemmArgs& args, const CView& c, int64 row, int64 col0,
                                               float (&cv)[THREAD_N]) const {
#pragma unroll
        for (int j = 0; j < THREAD_N; j += (COLS_IN_FOURS ? 4 : 1)) {
            const int64 col = col0 + n_base + col_of(j);
            if (COLS_IN_FOURS && col + 3 < args.N) {
                const float4 v = c.load4(c.src(nullptr, row, col));
                cv[j] = v.x;
                cv[j + 1] = v.y;
                cv[j + 2] = v.z;
                cv[j + 3] = v.w;
            } else {
#pragma unroll
                for (int e = 0; e < (COLS_IN_FOURS ? 4 : 1); ++e)
                    cv[j + e] = col + e < args.N ? *c.src(nullptr, row, col + e) : 0.0f;
            }
        }
    }

    // D = alpha * acc + beta * C with a separate C (a bias broadcast, another matrix), beta != 0.
    // C's loads go ahead of the stores: a row of C is loaded while the row before is written
    // (a separate c never overlaps D: the API refuses that), and a stride-0 C (a bias: every row
    // the same) is loaded once. Loading each 4 columns just before storing them, as the plain
    // epilogue does, waits out a global load per 16-byte store (4096x2048x512 with a bias: 222
    // against 188 us without on the H200). SHIFTED_M / SHIFTED_N: as in store.
    template <bool SHIFTED_M, bool SHIFTED_N>
    __device__ __forceinline__ void store_with_c(const GemmArgs& args, const CView& c, int64 row0, int64 col0,
                                                 const float (&acc)[THREAD_M][THREAD_N], bool d_aligned) const {
        const bool same_rows = c.rs == 0;
        const int m_lo = skipped<BLOCK_M>(row0), n_lo = skipped<BLOCK_N>(col0);
        const int64 first = row0 + m_base + row_of(0);
        if (first >= args.M) return;  // rows increase with i: none of the thread's rows is in D
        float cur[THREAD_N], next[THREAD_N];
        load_c_row(args, c, same_rows ? 0 : first, col0, cur);
#pragma unroll
        for (int i = 0; i < THREAD_M; ++i) {
            const int64 row = row0 + m_base + row_of(i);
            if (i + 1 < THREAD_M && !same_rows) {
                const int64 nrow = row0 + m_base + row_of(i + 1);
                if (nrow < args.M) load_c_row(args, c, nrow, col0, next);
            }
            if (row < args.M && (!SHIFTED_M || m_base + row_of(i) >= m_lo)) {
                float* drow = args.D + row * args.ldd;
#pragma unroll
                for (int j = 0; j < THREAD_N; j += (COLS_IN_FOURS ? 4 : 1)) {
                    const int64 col = col0 + n_base + col_of(j);
                    if (COLS_IN_FOURS && d_aligned && col + 3 < args.N && (!SHIFTED_N || n_base + col_of(j) >= n_lo)) {
                        *reinterpret_cast<float4*>(drow + col) = make_float4(
                            args.alpha * acc[i][j] + args.beta * cur[j], args.alpha * acc[i][j + 1] + args.beta * cur[j + 1],
                            args.alpha * acc[i][j + 2] + args.beta * cur[j + 2], args.alpha * acc[i][j + 3] + args.beta * cur[j + 3]);
                    } else {
#pragma unroll
                        for (int e = 0; e < (COLS_IN_FOURS ? 4 : 1); ++e)
                            if (col + e < args.N && (!SHIFTED_N || n_base + col_of(j) + e >= n_lo))
                                drow[col + e] = args.alpha * acc[i][j + e] + args.beta * cur[j + e];
                    }
                }
            }
            if (i + 1 < THREAD_M && !same_rows) {
#pragma unroll
                for (int j = 0; j < THREAD_N; ++j) cur[j] = next[j];
            }
        }
    }

    // D = alpha * acc + beta * C for the thread's outputs, guarded at the M/N edges. Chunks of 4
    // columns use one 16-byte store when D's rows are 16-byte aligned (checked here, at run time).
    // SHIFTED_M / SHIFTED_N: the tile's origin may have been moved back inside the operand
    // (common.cuh edge_origin), so the first skipped(origin) rows (columns) are left alone, and a
    // moved column origin that is not a multiple of 4 takes the scalar stores.
    template <bool SHIFTED_M = false, bool SHIFTED_N = false>
    __device__ __forceinline__ void store(const GemmArgs& args, int64 row0, int64 col0,
                                          const float (&acc)[THREAD_M][THREAD_N]) const {
        const bool d_aligned = d_rows_take_16_bytes<SHIFTED_N>(args, col0);
        const CView c = c_view(args);
        if constexpr (CView::SEPARATE) {
            if (args.beta != 0.0f) {
                store_with_c<SHIFTED_M, SHIFTED_N>(args, c, row0, col0, acc, d_aligned);
                return;
            }
        }
        const int m_lo = skipped<BLOCK_M>(row0), n_lo = skipped<BLOCK_N>(col0);
#pragma unroll
        for (int i = 0; i < THREAD_M; ++i) {
            const int64 row = row0 + m_base + row_of(i);
            if (row >= args.M || (SHIFTED_M && m_base + row_of(i) < m_lo)) continue;
            if constexpr (B_N_MAJOR) {
#pragma unroll
                for (int jq = 0; jq < THREAD_N / 4; ++jq) {
                    const int64 col = col0 + n_base + jq * (LANES_N * 4);
                    if (d_aligned && col + 3 < args.N && (!SHIFTED_N || n_base + jq * (LANES_N * 4) >= n_lo)) {
                        store_output4(args, c, row, col,
                                      make_float4(acc[i][4 * jq], acc[i][4 * jq + 1], acc[i][4 * jq + 2], acc[i][4 * jq + 3]));
                    } else {
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            if (col + e < args.N && (!SHIFTED_N || n_base + jq * (LANES_N * 4) + e >= n_lo))
                                store_output(args, c, row, col + e, acc[i][4 * jq + e]);
                        }
                    }
                }
            } else {
#pragma unroll
                for (int j = 0; j < THREAD_N; ++j) {
                    const int64 col = col0 + n_base + col_of(j);
                    if (col < args.N && (!SHIFTED_N || n_base + col_of(j) >= n_lo)) store_output(args, c, row, col, acc[i][j]);
                }
            }
        }
    }
};

}  // namespace gemmlab
