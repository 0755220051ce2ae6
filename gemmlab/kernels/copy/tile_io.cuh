// gemmlab/kernels/tile_io.cuh — what stages s07-s09 share: moving an operand tile global ->
// registers -> shared memory (float4 in either layout, or scalar with any strides), and the
// float4 epilogue. The stages differ only in where a tile lands in shared memory (their
// a_index/b_index), which lane owns which outputs, and how the main loop is pipelined.
//
// An operand tile is BLOCK_MN x BLOCK_K: for A, BLOCK_M rows (m) by BLOCK_K (k); for B, the
// transpose view BLOCK_N (n) by BLOCK_K (k). Either way it is stored in shared memory k-major,
// As[k][m] / Bs[k][n], so that a thread's fragment along m (n) is contiguous for LDS.128.
// Elements outside the matrix are read as zeros (zero-filled edges: any M, N, K >= 0).
#pragma once
#include "common.cuh"

namespace gemmlab {
namespace tile_io {

// Hides a value from the optimizer. The generated kernel calls Stage::run inside a loop over the
// batch, and everything run() derives from threadIdx and the tile origin is the same in every
// batch: hoisted out of that loop, it all stays live through the main loop and, at 128
// registers, spills. Made opaque, the per-thread setup is recomputed for every batch instead.
__device__ __forceinline__ void opaque(int& x) { asm volatile("" : "+r"(x)); }
__device__ __forceinline__ void opaque(int64& x) { asm volatile("" : "+l"(x)); }

__device__ __forceinline__ float4 load_global4(const float* p) {
    return __ldg(reinterpret_cast<const float4*>(p));
}

// Up to 4 consecutive floats from p, zeros past the first n (n <= 0: all zeros). p is 16-byte
// aligned, so a whole float4 is one LDG.E.128.
__device__ __forceinline__ float4 load_global_upto4(const float* p, int64 n) {
    float4 v = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    if (n >= 4) {
        v = load_global4(p);
    } else if (n > 0) {  // the matrix edge cuts this float4: read only what is inside
        v.x = p[0];
        if (n > 1) v.y = p[1];
        if (n > 2) v.z = p[2];
    }
    return v;
}

// ROWS x COLS floats of a matrix whose COLS dimension has unit stride and whose rows start
// 16-byte aligned, read as float4s. Thread t takes the float4 at column 4*(t % COL_VECS) of
// rows t / COL_VECS + r*ROW_STEP (r < COUNT): a warp reads whole 16-byte runs of consecutive
// columns, coalesced. K runs along the rows (K_ALONG_ROWS: M-major A, N-major B, the float4
// holds 4 consecutive m or n) or along the columns (K-major A, K-major B: 4 consecutive k).
// k is checked only in the last tile when K is not a multiple of BLOCK_K (load_tail, which the
// stages run first), m (n) only in blocks on the M (N) edge: the other tiles load with no checks.
template <int ROWS, int COLS, int THREADS, int BLOCK_K, bool K_ALONG_ROWS>
struct Float4Tile {
    static constexpr int COL_VECS = COLS / 4;
    static constexpr int ROW_STEP = THREADS / COL_VECS;
    static constexpr int COUNT = ROWS / ROW_STEP;
    static_assert(COLS % 4 == 0 && THREADS % COL_VECS == 0 && ROWS % ROW_STEP == 0,
                  "float4 tile: threads must cover the tile in whole rows of float4s");

    float4 v[COUNT];
    const float* ptr;  // this thread's first float4 at k = 0
    int64 ld;          // elements between rows
    int mn_left;       // m (n) of the matrix from this thread's first m (n) on, clamped to the tile
    int row, col;      // this thread's first element within the tile

    // tile: element (0, 0) at k = 0; mn_in: the matrix's m (n) extent from there.
    __device__ __forceinline__ void init(const float* tile, int64 ld_, int64 mn_in, int tid) {
        row = tid / COL_VECS;
        col = tid % COL_VECS * 4;
        ld = ld_;
        ptr = tile + row * ld + col;
        const int64 left = mn_in - (K_ALONG_ROWS ? col : row);
        mn_left = (int)(left < COLS + ROWS ? left : COLS + ROWS);
    }

    // This thread's first float4 of the tile starting at k0. Addressed from k0 rather than by
    // stepping a pointer: the main loop then carries one k0 for both operands, not a pointer and
    // a 64-bit stride each (the stage makes k0 opaque so the compiler does not step it back).
    __device__ __forceinline__ const float* at(int64 k0) const { return ptr + k0 * (K_ALONG_ROWS ? ld : 1); }

    // The tile at k0 whose BLOCK_K values of k are all inside K. CHECK_MN = false: the block tile
    // is inside M (N) as well (most blocks), so nothing is checked.
    template <bool CHECK_MN>
    __device__ __forceinline__ void load_full(int64 k0) {
        const float* base = at(k0);
#pragma unroll
        for (int r = 0; r < COUNT; ++r) {
            const float* p = base + r * ROW_STEP * ld;
            if (!CHECK_MN) v[r] = load_global4(p);
            else if (K_ALONG_ROWS) v[r] = load_global_upto4(p, mn_left);
            else v[r] = r * ROW_STEP < mn_left ? load_global4(p) : make_float4(0.0f, 0.0f, 0.0f, 0.0f);
        }
    }

    // The last tile, at k0, cut by K: only k_count < BLOCK_K values of k are inside K. Zeros past K.
    __device__ __forceinline__ void load_tail(int64 k0, int k_count) {
        const float* base = at(k0);
#pragma unroll
        for (int r = 0; r < COUNT; ++r) {
            const float* p = base + r * ROW_STEP * ld;
            v[r] = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
            if (K_ALONG_ROWS) {
                if (row + r * ROW_STEP < k_count) v[r] = load_global_upto4(p, mn_left);
            } else {
                if (r * ROW_STEP < mn_left) v[r] = load_global_upto4(p, k_count - col);
            }
        }
    }

    // Registers -> shared memory; index(k, mn) is the float offset of operand element (k, mn), and
    // for k % 4 == 0 the layout promises index(k + j, mn) == index(k, mn) + j * K_STEP (j < 4), so
    // the transposed store needs one address.
    template <int K_STEP, class Index>
    __device__ __forceinline__ void store(float* smem, Index index) const {
#pragma unroll
        for (int r = 0; r < COUNT; ++r) {
            const int first_row = row + r * ROW_STEP;
            if (K_ALONG_ROWS) {  // 4 consecutive m (n) of one k: one 128-bit store
                *reinterpret_cast<float4*>(&smem[index(first_row, col)]) = v[r];
            } else {             // 4 consecutive k of one m (n): the transposed store, 4 x 32 bit
                float* dst = &smem[index(col, first_row)];
                dst[0] = v[r].x;
                dst[K_STEP] = v[r].y;
                dst[2 * K_STEP] = v[r].z;
                dst[3 * K_STEP] = v[r].w;
            }
        }
    }
};

// The float4 operand tile in the operand's own layout. K_CONTIGUOUS: k has unit stride
// (K-major A, K-major B), so the matrix rows are m (n) and the float4 runs along k.
template <int BLOCK_MN, int BLOCK_K, int THREADS, bool K_CONTIGUOUS>
struct VecOperand : Float4Tile<K_CONTIGUOUS ? BLOCK_MN : BLOCK_K, K_CONTIGUOUS ? BLOCK_K : BLOCK_MN,
                               THREADS, BLOCK_K, !K_CONTIGUOUS> {
    typedef Float4Tile<K_CONTIGUOUS ? BLOCK_MN : BLOCK_K, K_CONTIGUOUS ? BLOCK_K : BLOCK_MN, THREADS, BLOCK_K,
                       !K_CONTIGUOUS> Base;
    // tile: element (mn0, k = 0); mn_in: rows of A (columns of B) from there.
    __device__ __forceinline__ void init(const float* tile, int64 mn_stride, int64 k_stride, int64 mn_in, int tid) {
        Base::init(tile, K_CONTIGUOUS ? mn_stride : k_stride, mn_in, tid);
    }
};

// The scalar fallback: any strides, one float at a time. Consecutive threads walk k when k has
// unit stride, else m (n), so global reads stay coalesced in both layouts; which one is decided
// once per block at run time.
template <int BLOCK_MN, int BLOCK_K, int THREADS>
struct ScalarOperand {
    static constexpr int COUNT = BLOCK_MN * BLOCK_K / THREADS;
    static_assert(THREADS % BLOCK_K == 0 && THREADS % BLOCK_MN == 0 && BLOCK_MN * BLOCK_K % THREADS == 0,
                  "scalar tile: threads must be a multiple of block_k, block_m and block_n");

    float v[COUNT];
    const float* ptr;  // this thread's first element at k = 0
    int64 step;        // elements between this thread's consecutive loads
    int64 k_stride;
    int mn_left;       // the matrix's m (n) extent from the tile's first m (n), clamped to the tile
    int mn, k, mn_step, k_step;

    __device__ __forceinline__ void init(const float* tile, int64 mn_stride, int64 k_stride_, int64 mn_in, int tid) {
        if (k_stride_ == 1) {
            mn = tid / BLOCK_K; k = tid % BLOCK_K; mn_step = THREADS / BLOCK_K; k_step = 0;
        } else {
            k = tid / BLOCK_MN; mn = tid % BLOCK_MN; k_step = THREADS / BLOCK_MN; mn_step = 0;
        }
        k_stride = k_stride_;
        ptr = tile + mn * mn_stride + k * k_stride;
        step = mn_step * mn_stride + k_step * k_stride;
        mn_left = (int)(mn_in < BLOCK_MN ? mn_in : BLOCK_MN);
    }

    template <bool CHECK_MN>
    __device__ __forceinline__ void load_full(int64 k0) {
        const float* base = ptr + k0 * k_stride;
#pragma unroll
        for (int r = 0; r < COUNT; ++r) v[r] = !CHECK_MN || mn + r * mn_step < mn_left ? base[r * step] : 0.0f;
    }

    __device__ __forceinline__ void load_tail(int64 k0, int k_count) {
        const float* base = ptr + k0 * k_stride;
#pragma unroll
        for (int r = 0; r < COUNT; ++r) {
            const bool inside = mn + r * mn_step < mn_left && k + r * k_step < k_count;
            v[r] = inside ? base[r * step] : 0.0f;
        }
    }

    // The COUNT addresses differ by amounts fixed only at run time (which dimension is unit
    // stride) and, in general layouts, not linearly: recomputed per tile rather than kept in
    // COUNT registers through the main loop.
    template <int K_STEP, class Index>
    __device__ __forceinline__ void store(float* smem, Index index) const {
        int k_first = k, mn_first = mn;
        opaque(k_first);
        opaque(mn_first);
#pragma unroll
        for (int r = 0; r < COUNT; ++r) smem[index(k_first + r * k_step, mn_first + r * mn_step)] = v[r];
    }
};

// Selects the loader of an instantiation (no <type_traits> under NVRTC).
template <bool VEC, int BLOCK_MN, int BLOCK_K, int THREADS, bool K_CONTIGUOUS>
struct OperandSelect { typedef VecOperand<BLOCK_MN, BLOCK_K, THREADS, K_CONTIGUOUS> type; };
template <int BLOCK_MN, int BLOCK_K, int THREADS, bool K_CONTIGUOUS>
struct OperandSelect<false, BLOCK_MN, BLOCK_K, THREADS, K_CONTIGUOUS> { typedef ScalarOperand<BLOCK_MN, BLOCK_K, THREADS> type; };

// A's tile loader: rows row0.. of A, all of K. VEC && A_K_MAJOR: float4 along k; VEC && !A_K_MAJOR:
// float4 along m; !VEC: scalar, any strides.
template <bool VEC, bool A_K_MAJOR, int BLOCK_M, int BLOCK_K, int THREADS>
struct ATile : OperandSelect<VEC, BLOCK_M, BLOCK_K, THREADS, A_K_MAJOR>::type {
    typedef typename OperandSelect<VEC, BLOCK_M, BLOCK_K, THREADS, A_K_MAJOR>::type Base;
    __device__ __forceinline__ void init(const GemmArgs& args, int64 row0, int tid) {
        Base::init(args.A + row0 * args.a_row_stride, args.a_row_stride, args.a_col_stride, args.M - row0, tid);
    }
};

// B's tile loader, seen as the N x K operand: columns col0.. of B. VEC && B_N_MAJOR: float4 along
// n; VEC && !B_N_MAJOR: float4 along k.
template <bool VEC, bool B_N_MAJOR, int BLOCK_N, int BLOCK_K, int THREADS>
struct BTile : OperandSelect<VEC, BLOCK_N, BLOCK_K, THREADS, !B_N_MAJOR>::type {
    typedef typename OperandSelect<VEC, BLOCK_N, BLOCK_K, THREADS, !B_N_MAJOR>::type Base;
    __device__ __forceinline__ void init(const GemmArgs& args, int64 col0, int tid) {
        Base::init(args.B + col0 * args.b_col_stride, args.b_col_stride, args.b_row_stride, args.N - col0, tid);
    }
};

// 128-bit shared load into 4 consecutive registers of a fragment.
__device__ __forceinline__ void load_shared4(float* dst, const float* src) {
    const float4 v = *reinterpret_cast<const float4*>(src);
    dst[0] = v.x;
    dst[1] = v.y;
    dst[2] = v.z;
    dst[3] = v.w;
}

// The register outer product of one k step.
template <int FRAG_M, int FRAG_N>
__device__ __forceinline__ void outer_product(float (&acc)[FRAG_M][FRAG_N], const float (&a_frag)[FRAG_M],
                                              const float (&b_frag)[FRAG_N]) {
#pragma unroll
    for (int i = 0; i < FRAG_M; ++i)
#pragma unroll
        for (int j = 0; j < FRAG_N; ++j) acc[i][j] += a_frag[i] * b_frag[j];
}

// The epilogue rule of common.cuh (store_output / store_output4: beta == 0 never reads C), on
// pointers, so that a thread walks its rows of D (and of C) by pointer increments: per-row 64-bit
// offsets would be invariant across the batch loop and kept live (spilled) through the main loop.
__device__ __forceinline__ void store_at(const GemmArgs& args, float* dst, const float* src, float acc) {
    *dst = (args.beta == 0.0f) ? args.alpha * acc : args.alpha * acc + args.beta * (*src);
}
__device__ __forceinline__ void store4_at(const GemmArgs& args, float* dst, float4 old, float4 acc) {  // old: C, read where beta != 0
    float4 out = make_float4(args.alpha * acc.x, args.alpha * acc.y, args.alpha * acc.z, args.alpha * acc.w);
    if (args.beta != 0.0f) {
        out.x += args.beta * old.x;
        out.y += args.beta * old.y;
        out.z += args.beta * old.z;
        out.w += args.beta * old.w;
    }
    *reinterpret_cast<float4*>(dst) = out;
}
__device__ __forceinline__ void store4_at(const GemmArgs& args, float* dst, float4 acc) {  // C = D
    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
    store4_at(args, dst, args.beta != 0.0f ? *reinterpret_cast<const float4*>(dst) : zero, acc);
}

// Epilogue of one thread: acc[i][j] belongs to D[row_base + Frag::row(i)][col_base + Frag::col(j)]
// where Frag::row/col are compile-time offsets that keep runs of 4 columns contiguous. Float4
// stores (VEC: D rows 16-byte aligned) where the whole float4 is inside N, scalar at the edge.
// C = D walks D's pointer only (the code, and the SASS, of the kernels before C existed); a
// separate C walks its own pointer next to it.
template <class Frag, bool VEC, int FRAG_M, int FRAG_N>
__device__ __forceinline__ void store_fragment(const GemmArgs& args, const float (&acc)[FRAG_M][FRAG_N],
                                               int64 row_base, int64 col_base) {
    static_assert(FRAG_N % 4 == 0, "the epilogue writes runs of 4 columns");
    const int64 rows_left = args.M - row_base, cols_left = args.N - col_base;
    float* d_row = args.D + row_base * args.ldd + col_base;
    if constexpr (!CView::SEPARATE) {
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i) {
            if (i > 0) d_row += (Frag::row(i) - Frag::row(i - 1)) * args.ldd;
            if (Frag::row(i) >= rows_left) continue;
#pragma unroll
            for (int j = 0; j < FRAG_N; j += 4) {
                const int col = Frag::col(j);
                if (VEC && col + 4 <= cols_left) {
                    store4_at(args, d_row + col, make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
                } else {
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        if (col + e < cols_left) store_at(args, d_row + col + e, d_row + col + e, acc[i][j + e]);
                }
            }
        }
    } else {
        const CView c = c_view(args);
        const float* c_row = c.src(d_row, row_base, col_base);
#pragma unroll
        for (int i = 0; i < FRAG_M; ++i) {
            if (i > 0) {
                d_row += (Frag::row(i) - Frag::row(i - 1)) * args.ldd;
                c_row += (Frag::row(i) - Frag::row(i - 1)) * c.rs;
            }
            if (Frag::row(i) >= rows_left) continue;
#pragma unroll
            for (int j = 0; j < FRAG_N; j += 4) {
                const int col = Frag::col(j);
                if (VEC && col + 4 <= cols_left) {
                    const float4 zero = make_float4(0.0f, 0.0f, 0.0f, 0.0f);
                    const float4 old = args.beta != 0.0f ? c.load4(c_row + col * c.cs) : zero;  // beta 0: C unread
                    store4_at(args, d_row + col, old, make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]));
                } else {
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        if (col + e < cols_left)
                            store_at(args, d_row + col + e, c_row + (col + e) * c.cs, acc[i][j + e]);
                }
            }
        }
    }
}

}  // namespace tile_io
}  // namespace gemmlab
