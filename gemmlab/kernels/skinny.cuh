// gemmlab/kernels/skinny.cuh — the memory-bound kernel for skinny GEMMs (M <= 16 or N <= 16,
// GEMV-like). Not a rung of the ladder: the dispatcher's kernel for shapes where the ladder's
// 128x256 tiles would leave almost every thread idle. Design and predictions: docs/stages/skinny.md.
//
// One of the two output dimensions is small (SMALL = 1, 2, 4, 8 or 16 rows of the block tile), so
// the work is reading the *big* operand once from DRAM; FLOPs per byte are at most SMALL/2. The
// kernel renames the operands so that one code path serves both orientations:
//   S[s][k]  the small operand (A when SMALL_DIM == 1, i.e. M is small; B^T when N is small),
//   G[k][g]  the big one       (B when M is small;                      A^T when N is small),
//   out(s, g) = D[s][g] (M small) or D[g][s] (N small).
// The block tile is SMALL x BLOCK_BIG of out; a problem wider than SMALL along the small dimension
// simply has several tiles there (correct for every M, N; it re-reads G once per tile row).
//
// Two algorithms, by which dimension of G has the unit stride:
//   ALGO 1 "stream": G contiguous along g (B row-major with M small; A column-major with N small).
//     A thread owns 4 consecutive g and K_GROUPS = THREADS / (BLOCK_BIG/4) groups of threads take
//     interleaved k rows; acc[SMALL][4] in registers; S for a chunk of k is in shared memory,
//     read as broadcasts (a warp reads one row k, or a few).
//   ALGO 2 "dot": G contiguous along k (B column-major with M small; A row-major with N small).
//     A warp owns RL rows g and one of K_GROUPS shares of k; each lane takes 4 consecutive k of
//     every 128; acc[RL][SMALL] partial dot products in registers, S from shared memory (one
//     LDS.128 of 4 k serves the RL rows); at the end a butterfly reduce-scatter over the warp
//     (shuffles halving the live values each step) leaves each lane whole sums of its warp's share.
//   Both add their K_GROUPS partial sums in shared memory in a fixed order (deterministic):
//   split-K inside the block, with no second kernel.
//
// Bytes in flight. G never waits in registers: each thread copies its own part of the next
// G_STAGES-1 iterations with cp.async (16 bytes per copy when VEC, 4 otherwise) into a ring of
// G_STAGES private shared-memory slots, and reads back only what it copied itself, so the ring
// needs cp.async.wait_group and no barrier. Copies of bytes past the matrix or the slice are
// zero-filled (src-size 0), never read. S is staged K_CHUNK k at a time into two buffers by the
// same copies (4 bytes, any strides); one __syncthreads per chunk publishes it. Split-K across
// blocks comes from the wrapper (gridDim.y slices, args.K is the slice).
// VEC: 16-byte copies of G (the host checked pointer, strides, batch stride, and that the vector
// dimension's extent is a multiple of 4); else 4-byte copies through the full strides (any
// layout). Iteration and stage counts are 32-bit (K < 2^36, checked on the host). G rows/columns
// past the matrix are clamped to the last one (results dropped); stores are guarded.
#pragma once
#include "common.cuh"
#include "ptx/cp_async.cuh"

namespace gemmlab {
namespace skinny {

__host__ __device__ constexpr int imin(int a, int b) { return a < b ? a : b; }
__host__ __device__ constexpr int imax(int a, int b) { return a > b ? a : b; }
__host__ __device__ constexpr bool pow2(int x) { return x > 0 && (x & (x - 1)) == 0; }
__host__ __device__ constexpr int floor_pow2(int x) { return x >= 2 ? 2 * floor_pow2(x / 2) : 1; }
__host__ __device__ constexpr int log2i(int x) { return x >= 2 ? 1 + log2i(x / 2) : 0; }

// One tile's operands in the renamed form (see the file comment).
struct Operands {
    const float* s;
    int64 s_ss, s_ks;  // S[s][k] = s[s*s_ss + k*s_ks]
    const float* g;
    int64 g_ks, g_gs;  // G[k][g] = g[k*g_ks + g*g_gs]
    int64 ns, ng, k;   // extents: small dimension, big dimension, K of this slice
    int64 s0, g0;      // the tile's first s and first g
};

// Butterfly reduce-scatter of V values per lane over the warp (offsets O, O/2, ..., 1). While more
// than one value is live, a step exchanges half of them: the lane whose offset bit is set keeps
// the upper half, its partner the lower half, each adding what the other sends, so after the
// steps value j of lane L stands for index j + sum over steps of (lane bit ? half : 0). Once one
// value is left, the remaining offsets are a plain xor reduction. Result (V a power of two):
//   V >= 32: lane L holds indices L*(V/32) + j, j < V/32, fully summed;
//   V <  32: every lane holds index L >> (5 - log2 V), fully summed.
template <int O, int N, int V>
__device__ __forceinline__ void reduce_scatter(float (&v)[V], int lane) {
    if constexpr (O >= 1) {
        if constexpr (N > 1) {
            constexpr int H = N / 2;
            const bool upper = (lane & O) != 0;
#pragma unroll
            for (int i = 0; i < H; ++i) {
                const float send = upper ? v[i] : v[i + H];
                const float keep = upper ? v[i + H] : v[i];
                v[i] = keep + __shfl_xor_sync(0xffffffffu, send, O);
            }
            reduce_scatter<O / 2, H, V>(v, lane);
        } else {
            v[0] += __shfl_xor_sync(0xffffffffu, v[0], O);
            reduce_scatter<O / 2, 1, V>(v, lane);
        }
    }
}

}  // namespace skinny

template <int SMALL, int SMALL_DIM, int ALGO, int BLOCK_BIG, int THREADS_, int K_GROUPS_, int UNROLL, int G_STAGES,
          int K_CHUNK, bool VEC, int EVICT_FIRST, int G_PREFETCH, int SMEM_BYTES_CHECK>
struct Skinny {
    static constexpr bool SMALL_IS_M = SMALL_DIM == 1;
    static constexpr int BLOCK_M = SMALL_IS_M ? SMALL : BLOCK_BIG;
    static constexpr int BLOCK_N = SMALL_IS_M ? BLOCK_BIG : SMALL;
    static constexpr int THREADS = THREADS_;
    static constexpr int WARPS = THREADS / 32;
    // Groups of threads (algo 1) or warps (algo 2) that split the slice's k inside the block;
    // their partial sums are added in shared memory at the end, in a fixed order.
    static constexpr int K_GROUPS = K_GROUPS_;

    // ---- ALGO 1 (stream) geometry ----
    static constexpr int TC = BLOCK_BIG / 4;                  // threads along g (4 columns each)
    static constexpr int ROWS_IT1 = K_GROUPS * UNROLL;       // k rows per block iteration
    static constexpr int P1 = SMALL >= 8 ? SMALL + 4 : SMALL;  // Ss[k][P1] (padded from small 8: conflict-free staging)
    static constexpr int LS1 = skinny::imin(SMALL, 4);       // staging: lanes along s, then k
    // ---- ALGO 2 (dot) geometry ----
    static constexpr int ROW_WARPS = ALGO == 2 ? WARPS / K_GROUPS : 1;  // warps along g
    static constexpr int RL = ALGO == 2 ? BLOCK_BIG / ROW_WARPS : 1;    // rows g per warp
    static constexpr int STEP_K = 128;                       // 32 lanes x 4 k
    static constexpr int WARP_K = STEP_K * UNROLL;           // k per warp iteration
    static constexpr int ROWS_IT2 = WARP_K * K_GROUPS;       // k per block iteration
    static constexpr int LS2 = skinny::imin(SMALL, 8);       // staging of an s-contiguous S: lanes along s
    static constexpr int PAD2 = SMALL == 1 ? 0 : 32 / LS2;   // Ss[s][K_CHUNK + PAD2]: conflict-free staging
    static constexpr int LD2 = K_CHUNK + PAD2;

    static constexpr int K_ROWS_IT = ALGO == 1 ? ROWS_IT1 : ROWS_IT2;
    // Loop unrolling that keeps registers in budget: the 4-byte copies of the scalar kernel are
    // issued one row at a time, and the steps of an iteration are a loop (unrolled by 2 at small
    // 2 and 4, not at all from small 8), else ptxas hoists every step's shared-memory reads.
    static constexpr int ISSUE_UNROLL = VEC ? 8 : 1;
    static constexpr int CONSUME_UNROLL = SMALL >= 8 ? 1 : SMALL >= 2 ? 2 : 8;
    static constexpr int IT_PER_CHUNK = K_CHUNK / K_ROWS_IT;
    // Shared memory: the G ring (G_STAGES stages of SLOTS 16-byte slots per thread, slot j of
    // thread t at j*THREADS + t: conflict-free), then two S buffers. After the main loop the k
    // groups' partial sums reuse it from the start: ALGO 1 red[kg][r][BLOCK_BIG], RED_ROWS rows
    // of s per pass; ALGO 2 red[kg][row warp][RL*SMALL], all at once.
    static constexpr int SLOTS = ALGO == 1 ? UNROLL : UNROLL * RL;
    static constexpr int RING_FLOATS = G_STAGES * SLOTS * THREADS * 4;
    static constexpr int BUF_FLOATS = ALGO == 1 ? K_CHUNK * P1 : SMALL * LD2;  // one S stage
    static constexpr int MAIN_FLOATS = RING_FLOATS + 2 * BUF_FLOATS;
    static constexpr int RED_ROWS =
        skinny::imin(SMALL, skinny::floor_pow2(skinny::imax(MAIN_FLOATS / (4 * THREADS), 1)));
    static constexpr int RED_FLOATS = K_GROUPS == 1 ? 0 : ALGO == 1 ? RED_ROWS * 4 * THREADS : K_GROUPS * BLOCK_BIG * SMALL;
    static constexpr int SMEM_BYTES = 4 * skinny::imax(MAIN_FLOATS, RED_FLOATS);

    // The spec's constraints (stages/skinny.py), repeated.
    static_assert(SMALL == 1 || SMALL == 2 || SMALL == 4 || SMALL == 8 || SMALL == 16, "small must be 1, 2, 4, 8 or 16");
    static_assert(SMALL_DIM == 1 || SMALL_DIM == 2, "small_dim must be 1 (M) or 2 (N)");
    static_assert(ALGO == 1 || ALGO == 2, "algo must be 1 (stream) or 2 (dot)");
    static_assert(THREADS % 32 == 0 && THREADS >= 64 && THREADS <= 1024, "threads must be a multiple of 32 in 64..1024");
    static_assert(UNROLL >= 1 && UNROLL <= 8, "unroll must be 1..8");
    static_assert(G_STAGES >= 2 && G_STAGES <= 8, "g_stages must be 2..8");
    static_assert(K_CHUNK % 32 == 0 && K_CHUNK > 0, "k_chunk must be a positive multiple of 32");
    static_assert(K_CHUNK % K_ROWS_IT == 0, "k_chunk must be a multiple of the k rows of one iteration");
    static_assert(IT_PER_CHUNK >= G_STAGES - 1, "k_chunk must hold at least g_stages-1 iterations");
    static_assert(ALGO != 1 || (BLOCK_BIG % 4 == 0 && TC <= THREADS && THREADS % TC == 0),
                  "algo 1: block_big/4 threads along g must divide threads");
    static_assert(ALGO != 1 || K_GROUPS == THREADS / TC, "algo 1: k_groups is threads/(block_big/4)");
    static_assert(ALGO != 1 || SMALL * UNROLL <= 64, "algo 1: small*unroll must be at most 64 (registers)");
    static_assert(ALGO != 2 || (K_GROUPS >= 1 && WARPS % K_GROUPS == 0), "algo 2: k_groups must divide the warps");
    static_assert(ALGO != 2 || (BLOCK_BIG % ROW_WARPS == 0 && skinny::pow2(RL) && RL <= 8),
                  "algo 2: rows per warp, block_big/(warps/k_groups), must be a power of two, at most 8");
    static_assert(ALGO != 2 || RL * SMALL <= 64, "algo 2: rows per warp * small accumulators must be at most 64");
    static_assert(ALGO != 2 || RL * UNROLL <= 8, "algo 2: rows per warp * unroll copies per iteration must be at most 8");
    static_assert(G_PREFETCH == 0 || G_PREFETCH == 64 || G_PREFETCH == 128 || G_PREFETCH == 256,
                  "g_prefetch must be 0, 64, 128 or 256");
    static_assert(SMEM_BYTES <= 227 * 1024, "shared memory over 227 KB");
    static_assert(SMEM_BYTES == SMEM_BYTES_CHECK, "gemmlab: stages/skinny.py and skinny.cuh disagree on shared memory");

    // A copy of the big operand G: with EVICT_FIRST, under the L2 evict-first policy (G is read
    // once; ptx/cp_async.cuh says why that matters after a kernel that left L2 dirty); with
    // G_PREFETCH, its 16-byte copies widen the L2 fill to that many bytes (copy_16_prefetch).
    static __device__ __forceinline__ void copy_g16(unsigned dst, const float* src, int bytes, unsigned long long policy) {
        if constexpr (G_PREFETCH != 0) async::copy_16_prefetch<G_PREFETCH>(dst, src, bytes, policy);
        else if constexpr (EVICT_FIRST) async::copy_16(dst, src, bytes, policy);
        else async::copy_16(dst, src, bytes);
    }
    static __device__ __forceinline__ void copy_g4(unsigned dst, const float* src, int bytes, unsigned long long policy) {
        if constexpr (EVICT_FIRST) async::copy_4(dst, src, bytes, policy);
        else async::copy_4(dst, src, bytes);
    }
    static __device__ __forceinline__ unsigned long long g_policy() {
        if constexpr (EVICT_FIRST) return async::l2_evict_first_policy();
        else if constexpr (G_PREFETCH != 0) return async::l2_evict_normal_policy();
        else return 0ull;
    }

    static __device__ __forceinline__ void store(const GemmArgs& args, int64 s, int64 g, float v) {
        if constexpr (SMALL_IS_M) store_output(args, s, g, v);
        else store_output(args, g, s, v);
    }

    // S[s0 .. s0+SMALL)[kc0 .. kc0+K_CHUNK) -> buf, zero past the matrix and past the slice.
    // ALGO 1: buf[k][P1], lanes LS1 along s then along k (a warp covers 32/LS1 rows k: 32-byte
    //   runs of a K-contiguous S; P1 puts the 32 lanes in 32 banks).
    // ALGO 2: buf[s][LD2]; lanes along k when S is K-contiguous (128-byte runs), along s first
    //   (LS2 of them, 32-byte runs) when S is s-contiguous; PAD2 keeps both conflict-free.
    static __device__ __forceinline__ void stage(const skinny::Operands& op, float* buf, int64 kc0, bool s_along) {
        if constexpr (ALGO == 1) stage_lanes<LS1>(op, buf, kc0);
        else if (s_along) stage_lanes<LS2>(op, buf, kc0);
        else stage_lanes<1>(op, buf, kc0);
    }

    // The copy with LS lanes along s: thread t copies s = o*LS + t%LS for its groups o and
    // k = t/LS (+ multiples of THREADS/LS); its addresses advance by constant strides, so each
    // 4-byte cp.async costs a few instructions and no registers live past the copy.
    template <int LS>
    static __device__ __forceinline__ void stage_lanes(const skinny::Operands& op, float* buf, int64 kc0) {
        constexpr int TP = THREADS / LS;                     // threads over the (k, s group) plane
        constexpr int NO = SMALL / LS;                       // s groups
        constexpr bool K_WIDE = TP <= K_CHUNK;               // then a thread has K_CHUNK/TP k and every group
        constexpr int NR = K_WIDE ? K_CHUNK / TP : 1;        // k per thread
        constexpr int O_STEP = K_WIDE ? 1 : TP / K_CHUNK;    // else one k and every O_STEP-th group
        constexpr int NQ = K_WIDE ? NO : (NO + O_STEP - 1) / O_STEP;
        static_assert(K_WIDE ? K_CHUNK % TP == 0 : TP % K_CHUNK == 0, "the staging copy must tile the chunk");
        const int s_lo = threadIdx.x % LS, tp = threadIdx.x / LS;
        const int k_first = K_WIDE ? tp : tp % K_CHUNK;
        const int o_first = K_WIDE ? 0 : tp / K_CHUNK;
        // Rows and k left from the chunk's origin (clamped: more than the chunk is all valid).
        const int64 s_left64 = op.ns - op.s0, k_left64 = op.k - kc0;
        const int s_left = static_cast<int>(s_left64 < SMALL ? s_left64 : SMALL);
        const int k_left = static_cast<int>(k_left64 < K_CHUNK ? k_left64 : K_CHUNK);
        const int64 k_step = (int64)TP * op.s_ks, o_step = (int64)(O_STEP * LS) * op.s_ss;
        const float* p = op.s + (op.s0 + o_first * LS + s_lo) * op.s_ss + (kc0 + k_first) * op.s_ks;
        const unsigned base = async::smem_address(buf);
#pragma unroll 1
        for (int q = 0; q < NQ; ++q, p += o_step) {
            const int s = (o_first + q * O_STEP) * LS + s_lo;
            if (!K_WIDE && s >= SMALL) break;
            const bool s_ok = s < s_left;
#pragma unroll 2
            for (int r = 0; r < NR; ++r) {
                const int k = k_first + r * TP;
                const bool ok = s_ok && k < k_left;
                const int dst = ALGO == 1 ? k * P1 + s : s * LD2 + k;
                async::copy_4(base + 4u * static_cast<unsigned>(dst), ok ? p + r * k_step : op.s, ok ? 4 : 0);
            }
        }
    }

    // The main loop both algorithms share: iteration `it` (K_ROWS_IT k of the block) is issued
    // G_STAGES-1 iterations ahead into ring stage it % G_STAGES by issue(), one cp.async group
    // per iteration; S chunk c+1 is staged at the first iteration of chunk c, in that
    // iteration's group, and is complete G_STAGES-1 <= IT_PER_CHUNK iterations later.
    // consume(ring_stage, ss, it_in_chunk) does the FFMAs of one iteration.
    template <class Issue, class Consume>
    static __device__ __forceinline__ void pipeline(const skinny::Operands& op, float* smem, int n_it, bool s_along,
                                                    Issue&& issue, Consume&& consume) {
        float* sbuf = smem + RING_FLOATS;
        const int n_chunks = static_cast<int>((op.k + K_CHUNK - 1) / K_CHUNK);
        if (n_chunks > 0) stage(op, sbuf, 0, s_along);  // in group 0, with iteration 0
#pragma unroll
        for (int i = 0; i < G_STAGES - 1; ++i) {
            if (i < n_it) issue(i, i);
            async::commit_group();
        }
        int st_use = 0, st_issue = G_STAGES - 1;
        for (int c = 0; c < n_chunks; ++c) {
            const int it0 = c * IT_PER_CHUNK;
            const int it1 = it0 + IT_PER_CHUNK < n_it ? it0 + IT_PER_CHUNK : n_it;
            const float* ss = sbuf + (c & 1) * BUF_FLOATS;
            for (int it = it0; it < it1; ++it) {
                async::wait_group<G_STAGES - 2>();  // this thread's copies of iteration `it` (and older) landed
                if (it == it0) {
                    // Everyone's copies of chunk c are in; everyone is done with chunk c-1, whose
                    // buffer is refilled now.
                    __syncthreads();
                    if (c + 1 < n_chunks) stage(op, sbuf + ((c + 1) & 1) * BUF_FLOATS, (int64)(c + 1) * K_CHUNK, s_along);
                }
                // Ring stage st_issue held iteration it-1, which this thread has consumed.
                if (it + G_STAGES - 1 < n_it) issue(it + G_STAGES - 1, st_issue);
                async::commit_group();
                consume(st_use, ss, it - it0);
                st_use = st_use + 1 == G_STAGES ? 0 : st_use + 1;
                st_issue = st_issue + 1 == G_STAGES ? 0 : st_issue + 1;
            }
        }
        async::wait_group<0>();  // only empty groups can be pending; nothing in flight on exit
    }

    // ---------------------------------------------------------------------------------------
    // ALGO 1: stream rows of G, 4 consecutive g per thread (column e of the group accumulates in
    // acc[s][(e + 1) & 3], see consume).
    static __device__ __forceinline__ void stream(const GemmArgs& args, const skinny::Operands& op, float* smem) {
        const int tid = threadIdx.x;
        const int tc = tid % TC, kg = tid / TC;
        const int64 g = op.g0 + 4 * tc;
        // Groups past the right edge read the last group (VEC: ng % 4 == 0, so groups are whole)
        // or the last column (scalar: columns gc + min(e, last_e)); their results are dropped.
        const int64 gc = VEC ? (g < op.ng ? g : op.ng - 4) : (g < op.ng ? g : op.ng - 1);
        const int last_e = static_cast<int>(op.ng - 1 - gc < 3 ? op.ng - 1 - gc : 3);
        const int64 row_step = (int64)K_GROUPS * op.g_ks;  // between a thread's rows of one iteration
        // Iteration counts fit 32 bits (K < 2^36: check_problem); k itself may not.
        const int n_it = static_cast<int>((op.k + ROWS_IT1 - 1) / ROWS_IT1);
        const int n_full = static_cast<int>(op.k / ROWS_IT1);  // iterations with every row inside the slice
        const float* g_row = op.g + (int64)kg * op.g_ks + gc * op.g_gs;  // row kg of iteration 0, column gc
        const unsigned ring = async::smem_address(smem) + 16u * tid;       // this thread's slot 0

        // Iteration it is rows it*ROWS_IT1 + u*K_GROUPS + kg, u < UNROLL: slot u of the stage.
        const unsigned long long policy = g_policy();
        auto issue = [&](int it, int st) {
            const float* r = g_row + (int64)it * ROWS_IT1 * op.g_ks;
            const int64 k0 = (int64)it * ROWS_IT1 + kg;
            const bool full = it < n_full;
#pragma unroll ISSUE_UNROLL
            for (int u = 0; u < UNROLL; ++u, r += row_step) {
                const bool ok = full || k0 + u * K_GROUPS < op.k;
                const unsigned dst = ring + 16u * static_cast<unsigned>((st * SLOTS + u) * THREADS);
                if constexpr (VEC) {
                    copy_g16(dst, ok ? r : op.g, ok ? 16 : 0, policy);  // g_gs == 1, 16-byte aligned
                } else {
#pragma unroll
                    for (int e = 0; e < 4; ++e)
                        copy_g4(dst + 4u * e, ok ? r + (e < last_e ? e : last_e) * op.g_gs : op.g, ok ? 4 : 0, policy);
                }
            }
        };

        float acc[SMALL][4];
#pragma unroll
        for (int s = 0; s < SMALL; ++s)
#pragma unroll
            for (int e = 0; e < 4; ++e) acc[s][e] = 0.0f;

        const float4* mine = reinterpret_cast<const float4*>(smem) + tid;
        auto consume = [&](int st, const float* ss, int it_in_chunk) {
            const float* rows = ss + (it_in_chunk * ROWS_IT1 + kg) * P1;
#pragma unroll CONSUME_UNROLL
            for (int u = 0; u < UNROLL; ++u) {
                const float4 gv = mine[(st * SLOTS + u) * THREADS];
                const float* row = rows + u * K_GROUPS * P1;
                float sv[SMALL];
                if constexpr (SMALL >= 4) {
#pragma unroll
                    for (int q = 0; q < SMALL / 4; ++q) {
                        const float4 t = *reinterpret_cast<const float4*>(row + 4 * q);
                        sv[4 * q] = t.x, sv[4 * q + 1] = t.y, sv[4 * q + 2] = t.z, sv[4 * q + 3] = t.w;
                    }
                } else if constexpr (SMALL == 2) {
                    const float2 t = *reinterpret_cast<const float2*>(row);
                    sv[0] = t.x, sv[1] = t.y;
                } else {
                    sv[0] = row[0];
                }
                // Column e accumulates in acc[s][(e + 1) & 3]: ptxas then places the accumulator
                // of column e outside register bank e, where gv's component e is (an LDS.128
                // quad), and the FFMAs read without bank conflicts (sv[s] comes from .reuse).
#pragma unroll
                for (int s = 0; s < SMALL; ++s) {
                    acc[s][1] = fmaf(sv[s], gv.x, acc[s][1]);
                    acc[s][2] = fmaf(sv[s], gv.y, acc[s][2]);
                    acc[s][3] = fmaf(sv[s], gv.z, acc[s][3]);
                    acc[s][0] = fmaf(sv[s], gv.w, acc[s][0]);
                }
            }
        };

        pipeline(op, smem, n_it, true, issue, consume);

        if constexpr (K_GROUPS == 1) {
#pragma unroll
            for (int s = 0; s < SMALL; ++s) {
                if (op.s0 + s >= op.ns) break;
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (g + e < op.ng) store(args, op.s0 + s, g + e, acc[s][(e + 1) & 3]);
            }
        } else {
            // Add the K_GROUPS partial sums: red[kg][r][BLOCK_BIG] (a thread's acc[s][0..3] as one
            // 16-byte store, so column e of its group at 4*tc + ((e + 1) & 3)), RED_ROWS rows of
            // s per pass; then thread t adds one output over kg in a fixed order.
            float* red = smem;
#pragma unroll
            for (int r0 = 0; r0 < SMALL; r0 += RED_ROWS) {
                __syncthreads();  // the main loop's (or the previous pass's) readers are done
#pragma unroll
                for (int r = 0; r < RED_ROWS; ++r)
                    *reinterpret_cast<float4*>(red + (kg * RED_ROWS + r) * BLOCK_BIG + 4 * tc) =
                        make_float4(acc[r0 + r][0], acc[r0 + r][1], acc[r0 + r][2], acc[r0 + r][3]);
                __syncthreads();
                for (int o = tid; o < RED_ROWS * BLOCK_BIG; o += THREADS) {
                    // M small: consecutive threads along g (a row of D); N small: along s.
                    const int r = SMALL_IS_M ? o / BLOCK_BIG : o % RED_ROWS;
                    const int cc = SMALL_IS_M ? o % BLOCK_BIG : o / RED_ROWS;
                    const int at = (cc & ~3) | ((cc + 1) & 3);  // column cc sits at slot (e + 1) & 3
                    float sum = 0.0f;
#pragma unroll 8
                    for (int q = 0; q < K_GROUPS; ++q) sum += red[(q * RED_ROWS + r) * BLOCK_BIG + at];
                    const int64 s = op.s0 + r0 + r, gg = op.g0 + cc;
                    if (s < op.ns && gg < op.ng) store(args, s, gg, sum);
                }
            }
        }
    }

    // ---------------------------------------------------------------------------------------
    // ALGO 2: dot products along k. Warp w takes RL rows g (row warp w % ROW_WARPS) and, of every
    // block iteration of ROWS_IT2 k, the WARP_K k of its k group (w / ROW_WARPS); each lane takes
    // 4 consecutive k of every 128.
    static __device__ __forceinline__ void dot(const GemmArgs& args, const skinny::Operands& op, float* smem) {
        const int tid = threadIdx.x;
        const int warp = tid / 32, lane = tid % 32;
        const int rw = warp % ROW_WARPS, kgw = warp / ROW_WARPS;
        const int64 g_first = op.g0 + (int64)rw * RL;
        // Rows past the edge read the last row (their sums are not stored): row r of the warp is
        // at (g_gc + min(r, last_r)) * g_gs.
        const int64 g_gc = g_first < op.ng ? g_first : op.ng - 1;
        const int last_r = static_cast<int>(op.ng - 1 - g_gc < RL - 1 ? op.ng - 1 - g_gc : RL - 1);
        const int n_it = static_cast<int>((op.k + ROWS_IT2 - 1) / ROWS_IT2);  // fits: K < 2^36
        const int n_full = static_cast<int>(op.k / ROWS_IT2);
        const bool s_along = op.s_ss == 1 && op.s_ks != 1;  // S contiguous along s: stage it along s
        const int k_lane = kgw * WARP_K + 4 * lane;           // the lane's first k in a block iteration
        const float* g_lane = op.g + g_gc * op.g_gs + (int64)k_lane * op.g_ks;
        const unsigned ring = async::smem_address(smem) + 16u * tid;

        // Iteration it: for step u and row r, k = it*ROWS_IT2 + k_lane + u*128 .. +3: slot u*RL + r.
        const unsigned long long policy = g_policy();
        auto issue = [&](int it, int st) {
            const bool full = it < n_full;
#pragma unroll
            for (int u = 0; u < UNROLL; ++u) {
                const int64 kk = (int64)it * ROWS_IT2 + k_lane + u * STEP_K;
                const float* p = g_lane + ((int64)it * ROWS_IT2 + u * STEP_K) * op.g_ks;
#pragma unroll ISSUE_UNROLL
                for (int r = 0; r < RL; ++r) {
                    const float* q = p + (r < last_r ? r : last_r) * op.g_gs;
                    const unsigned dst = ring + 16u * static_cast<unsigned>((st * SLOTS + u * RL + r) * THREADS);
                    if constexpr (VEC) {  // op.k % 4 == 0: a 4-k group is wholly inside or outside the slice
                        const bool ok = full || kk < op.k;
                        copy_g16(dst, ok ? q : op.g, ok ? 16 : 0, policy);  // g_ks == 1, 16-byte aligned
                    } else {
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            const bool ok = full || kk + e < op.k;
                            copy_g4(dst + 4u * e, ok ? q + e * op.g_ks : op.g, ok ? 4 : 0, policy);
                        }
                    }
                }
            }
        };

        float acc[RL][SMALL];
#pragma unroll
        for (int r = 0; r < RL; ++r)
#pragma unroll
            for (int s = 0; s < SMALL; ++s) acc[r][s] = 0.0f;

        const float4* mine = reinterpret_cast<const float4*>(smem) + tid;
        auto consume = [&](int st, const float* ss, int it_in_chunk) {
#pragma unroll CONSUME_UNROLL
            for (int u = 0; u < UNROLL; ++u) {
                float4 gv[RL];
#pragma unroll
                for (int r = 0; r < RL; ++r) gv[r] = mine[(st * SLOTS + u * RL + r) * THREADS];
                const float* sk = ss + it_in_chunk * ROWS_IT2 + k_lane + u * STEP_K;
                // Per accumulator the 4 k in order; across rows interleaved so that consecutive
                // FFMAs share sv's component (.reuse) and only 1 in 4 meets a register-bank conflict.
#pragma unroll
                for (int s = 0; s < SMALL; ++s) {
                    const float4 sv = *reinterpret_cast<const float4*>(sk + s * LD2);
#pragma unroll
                    for (int r = 0; r < RL; ++r) acc[r][s] = fmaf(gv[r].x, sv.x, acc[r][s]);
#pragma unroll
                    for (int r = 0; r < RL; ++r) acc[r][s] = fmaf(gv[r].y, sv.y, acc[r][s]);
#pragma unroll
                    for (int r = 0; r < RL; ++r) acc[r][s] = fmaf(gv[r].z, sv.z, acc[r][s]);
#pragma unroll
                    for (int r = 0; r < RL; ++r) acc[r][s] = fmaf(gv[r].w, sv.w, acc[r][s]);
                }
            }
        };

        pipeline(op, smem, n_it, s_along, issue, consume);

        // Warp reduce-scatter of the RL*SMALL partial sums (index r*SMALL + s): lane holds index
        // idx(j) for j < PER, every lane whose low SHIFT bits are 0 a distinct one.
        constexpr int V = RL * SMALL;
        constexpr int PER = V >= 32 ? V / 32 : 1;
        constexpr int SHIFT = V >= 32 ? 0 : 5 - skinny::log2i(V);
        float v[V];
#pragma unroll
        for (int r = 0; r < RL; ++r)
#pragma unroll
            for (int s = 0; s < SMALL; ++s) v[r * SMALL + s] = acc[r][s];
        skinny::reduce_scatter<16, V, V>(v, lane);
        const bool holder = (lane & ((1 << SHIFT) - 1)) == 0;
        auto idx_of = [&](int j) { return V >= 32 ? lane * PER + j : lane >> SHIFT; };
        if constexpr (K_GROUPS == 1) {
            if (holder) {
#pragma unroll
                for (int j = 0; j < PER; ++j) {
                    const int idx = idx_of(j);
                    const int64 s = op.s0 + idx % SMALL, gg = g_first + idx / SMALL;
                    if (s < op.ns && gg < op.ng) store(args, s, gg, v[j]);
                }
            }
        } else {
            // red[kg][row warp][V], then thread t adds output t over the k groups in order.
            float* red = smem;
            __syncthreads();  // everyone is done reading the ring and the staged S that red overwrites
            if (holder) {
#pragma unroll
                for (int j = 0; j < PER; ++j) red[(kgw * ROW_WARPS + rw) * V + idx_of(j)] = v[j];
            }
            __syncthreads();
            for (int o = tid; o < ROW_WARPS * V; o += THREADS) {
                float sum = 0.0f;
#pragma unroll
                for (int q = 0; q < K_GROUPS; ++q) sum += red[q * ROW_WARPS * V + o];
                const int orw = o / V, idx = o % V;
                const int64 s = op.s0 + idx % SMALL, gg = op.g0 + (int64)orw * RL + idx / SMALL;
                if (s < op.ns && gg < op.ng) store(args, s, gg, sum);
            }
        }
    }

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem) {
        skinny::Operands op;
        if constexpr (SMALL_IS_M) {
            op = {args.A, args.a_row_stride, args.a_col_stride, args.B, args.b_row_stride, args.b_col_stride,
                  args.M, args.N, args.K, row0, col0};
        } else {  // S = B^T, G = A^T
            op = {args.B, args.b_col_stride, args.b_row_stride, args.A, args.a_col_stride, args.a_row_stride,
                  args.N, args.M, args.K, col0, row0};
        }
        if constexpr (ALGO == 1) stream(args, op, reinterpret_cast<float*>(smem));
        else dot(args, op, reinterpret_cast<float*>(smem));
    }
};

}  // namespace gemmlab
