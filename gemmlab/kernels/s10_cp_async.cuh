// s10 cp_async (notes 000 §10.1–10.4): the register- and warp-tiled SIMT FFMA kernel fed by an
// Ampere cp.async pipeline. What it adds over double buffering (s09):
//   - global -> shared copies go straight into shared memory (LDGSTS), no register staging;
//   - STAGES shared buffers (3–4), one cp.async group committed per K tile, and
//     cp.async.wait_group(STAGES-2) + one __syncthreads per K tile;
//   - edges are zero-filled by the copy itself (the src-size operand), not by branches;
//   - 16-byte cp.async.cg for an operand whose row starts are all 16-byte aligned (A_VEC, B_VEC:
//     each operand on its own), 4-byte cp.async.ca for the other.
// With 16-byte copies each operand is kept in shared memory in its global layout (a copy cannot
// transpose 16 bytes):
//   A K-major (row-major) -> As[m][k], XOR-swizzled (a_swizzle=1);  A M-major -> As[k][m];
//   B N-major (row-major) -> Bs[k][n];  B K-major (transposed view) -> Bs[n][k], XOR-swizzled.
// The swizzle of the [x][k] tiles is TMA's SWIZZLE_{32,64,128}B, so s11's boxes land the same way.
// TRANSPOSE_IN turns a K-major operand on 4-byte copies: in nn A is written as As[k][m] instead,
// in tt B as Bs[k][n], rows padded by 4 floats (copy/cp_async_tile.cuh, TransposingCopier), so
// the core runs the outer-product layout (A M-major, B N-major), whose fragments keep clear of
// register-bank conflicts; nt keeps both as they are.
// EDGE_SHIFT: a block whose tile hangs over the M (N) edge of an operand on 4-byte copies starts at
// M - BLOCK_M (N - BLOCK_N) instead, where M >= BLOCK_M, so its tile lies inside the operand and
// its copies test only the last K tile, as an interior block's do (4-byte copies land anywhere,
// so any origin will do); its epilogue skips the rows (columns) the block before it owns
// (common.cuh edge_origin / skipped). Without it such a block takes the fully tested copy on
// every K tile: 7-8 instructions an element against 3 (docs/stages/s10-s11.md).
// CLUSTER_K > 1 (split-K in a cluster, sm_90): the gridDim.y = CLUSTER_K slices of K of a tile are
// one thread block cluster and add their partials through distributed shared memory in the stage
// buffers (epilogue/cluster_reduce.cuh, as in s11): no workspace and no reduce kernel.
// FRAG_CARRY (the outer-product layout only: A M-major, B N-major, after TRANSPOSE_IN): the K
// tile's barrier moves from before its first k to before the last k of the tile before, whose
// fragments are then already in registers. After the barrier a warp loads the next tile's first
// k, issues the copies and multiplies the carried k while those loads land, so no warp leaves the
// barrier with only loads to wait on (cuBLAS's FFMA kernels cross their barrier that way). The
// barrier after tile t's reads frees tile t's own stage, so the prologue fills all STAGES buffers
// and tile t + STAGES lands where tile t was: as many tiles in flight as without it.
// CARRY_COPY_K >= 0 (with FRAG_CARRY): those copies wait until after the FFMAs of k CARRY_COPY_K
// of the next tile (as cuBLAS issues its copies late in a tile, between FFMAs, not at the barrier);
// each tile's group is still committed in the trip that issues it, so the waits are the same.
// CARRY_CHUNK > 0 (with FRAG_CARRY, copies at the barrier): the carried loop runs CARRY_CHUNK k's a
// trip, a tile's last trip crossing the barrier, instead of a whole tile a trip (ptxas unrolls a
// trip fully: at 128 accumulators and block_k 32, 4096 FFMAs, about 79 KB of code in the loop,
// as k_unroll 8 without the carry, which the H200 ran 5-30% slower than k_unroll 4; the carried
// 128-accumulator stand-ins ran 0.815 of the uncarried ones on an H100). One uniform branch a
// trip says whether it is a tile's last.
// FFMA_SERPENTINE: the core's FFMA runs in serpentine order (mma/warp_tile.cuh FFMA_ROTATE 2) where
// it reads the outer-product layout.
// WarpTileCore (mma/warp_tile.cuh: fragment loads, FFMAs, epilogue) is shared with s11, which
// replaces only the copies; TileCopier (copy/cp_async_tile.cuh) is this stage's copy.
#pragma once
#include "common.cuh"
#include "ptx/cp_async.cuh"
#include "mma/warp_tile.cuh"
#include "copy/cp_async_tile.cuh"
#include "epilogue/cluster_reduce.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int WARP_M_, int WARP_N_, int K_UNROLL_, bool A_SWIZZLE_,
          int STAGES_, bool A_VEC_, bool B_VEC_, bool A_K_MAJOR_, bool B_N_MAJOR_, bool TRANSPOSE_IN_ = false,
          bool FRAG_PREFETCH_ = false, int CLUSTER_K_ = 1, bool EDGE_SHIFT_ = false, bool FRAG_CARRY_ = false,
          int CARRY_COPY_K_ = -1, bool FFMA_SERPENTINE_ = false, int CARRY_CHUNK_ = 0>
struct S10CpAsync {
    // One operand at most, and only one on 4-byte copies (a 16-byte copy cannot transpose): A
    // K-major with B N-major (nn) into As[k][m], B K-major with A M-major (tt) into Bs[k][n]. In nt
    // neither: turning both around made every copy a transposing one and 64x128 x2 ran slower than
    // with neither (257x4001x999 nt 119 against 104 us); turning B alone gained nothing at 64x64
    // (777x555x333 nt 22.8 against 22.6; docs/stages/s10-s11.md).
    static constexpr bool A_T = TRANSPOSE_IN_ && !A_VEC_ && A_K_MAJOR_ && B_N_MAJOR_;
    static constexpr bool B_T = TRANSPOSE_IN_ && !B_VEC_ && !B_N_MAJOR_ && !A_K_MAJOR_;
    using Core = WarpTileCore<BLOCK_M_, BLOCK_N_, BLOCK_K_, WARP_M_, WARP_N_, K_UNROLL_, A_SWIZZLE_, A_K_MAJOR_ && !A_T,
                              B_N_MAJOR_ || B_T, FFMA_SERPENTINE_ ? 2 : 0, false, A_T ? BLOCK_M_ + 4 : 0, B_T ? BLOCK_N_ + 4 : 0,
                              FRAG_PREFETCH_>;
    static constexpr int BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_;
    static constexpr int STAGES = STAGES_;
    static constexpr int THREADS = Core::THREADS;
    static_assert(STAGES >= 2 && STAGES <= 8, "stages must be 2..8");
    static constexpr int SMEM_BYTES = STAGES * (Core::A_TILE_FLOATS + Core::B_TILE_FLOATS) * 4;
    // Split-K in a cluster: the partial tile reuses the stage buffers.
    static constexpr int CLUSTER_K = CLUSTER_K_;
    using Reduce = ClusterReduce<BLOCK_M, BLOCK_N, CLUSTER_K < 2 ? 2 : CLUSTER_K, THREADS>;
    static_assert(CLUSTER_K == 1 || (CLUSTER_K >= 2 && CLUSTER_K <= 8), "cluster_k: 1 (none) or 2..8 slices");
    static_assert(CLUSTER_K == 1 || Reduce::BYTES <= SMEM_BYTES, "cluster_k: the partial tile must fit in the stage buffers");
    // The edges moved inside: only an operand on 4-byte copies (A's rows for M, B's columns for N).
    static constexpr bool SHIFT_M = EDGE_SHIFT_ && !A_VEC_, SHIFT_N = EDGE_SHIFT_ && !B_VEC_;
    // The last k carried over the barrier: where the core reads the outer-product layout.
    static constexpr bool CARRY = FRAG_CARRY_ && Core::OUTER_PRODUCT;
    static constexpr int COPY_K = CARRY ? CARRY_COPY_K_ : -1;
    static_assert(CARRY_COPY_K_ >= -1 && CARRY_COPY_K_ < BLOCK_K - 1, "carry_copy_k: -1 or a k of 0 .. block_k-2");
    // The carried loop's trip: CHUNK k's of one tile (the whole tile where CARRY_CHUNK is 0).
    static constexpr int CHUNK = CARRY_CHUNK_ ? CARRY_CHUNK_ : BLOCK_K;
    static constexpr int CHUNKS_PER_TILE = BLOCK_K / CHUNK;
    static_assert(CARRY_CHUNK_ == 0 || (CARRY_CHUNK_ >= 2 && CARRY_CHUNK_ < BLOCK_K && BLOCK_K % CARRY_CHUNK_ == 0),
                  "carry_chunk: 0 (the whole tile) or 2 .. block_k/2 k's that divide block_k");
    static_assert(CARRY_CHUNK_ == 0 || CARRY_COPY_K_ == -1, "carry_chunk: the copies right after the barrier only");

    // A K-major: As[m][k] swizzled; M-major: As[k][m]. B N-major: Bs[k][n]; K-major: Bs[n][k] swizzled.
    // (TRANSPOSE_IN: a K-major operand's TransposingCopier takes the same (x, k) strides.)
    using CopyA = Pick<A_T, TransposingCopier<BLOCK_M, BLOCK_K, Core::A_LD, THREADS>,
                       TileCopier<A_K_MAJOR_ ? BLOCK_M : BLOCK_K, A_K_MAJOR_ ? BLOCK_K : BLOCK_M, A_K_MAJOR_,
                                  Core::A_ROWS_SWIZZLED, A_VEC_, THREADS, Core>>;
    using CopyB = Pick<B_T, TransposingCopier<BLOCK_N, BLOCK_K, Core::B_LD, THREADS>,
                       TileCopier<B_N_MAJOR_ ? BLOCK_K : BLOCK_N, B_N_MAJOR_ ? BLOCK_N : BLOCK_K, !B_N_MAJOR_,
                                  !B_N_MAJOR_, B_VEC_, THREADS, Core>>;

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem) {
        float* a_tiles = reinterpret_cast<float*>(smem);
        float* b_tiles = a_tiles + STAGES * Core::A_TILE_FLOATS;
        const unsigned a_smem = async::smem_address(a_tiles), b_smem = async::smem_address(b_tiles);
        const Core core;

        // [outer][inner] shared layouts: A K-major is (m, k), M-major (k, m); B N-major (k, n), K-major (n, k).
        // EDGE_SHIFT: the copies start at the moved origin; row0 and col0 stay the block's own until
        // the epilogue. (Each use works the moved origin out for itself: where it was kept from here
        // through the K loop, the 128x256 and 256x128 ku4 nt kernels in a cluster, at 255
        // registers, spilled 16-40 local ops a K step; scripts/s10_spill_scan.py --edge-shift.)
        const int64 copy_row0 = SHIFT_M ? edge_origin<BLOCK_M>(row0, args.M) : row0;
        const int64 copy_col0 = SHIFT_N ? edge_origin<BLOCK_N>(col0, args.N) : col0;
        CopyA copy_a(args.A + copy_row0 * args.a_row_stride, A_K_MAJOR_ ? args.a_row_stride : args.a_col_stride,
                     A_K_MAJOR_ ? args.a_col_stride : args.a_row_stride);
        CopyB copy_b(args.B + copy_col0 * args.b_col_stride, B_N_MAJOR_ ? args.b_row_stride : args.b_col_stride,
                     B_N_MAJOR_ ? args.b_col_stride : args.b_row_stride);
        // Rows, columns and K left from the block's origin, clamped to 2^30 (more is "all valid").
        auto clamp_left = [](int64 left) { return static_cast<int>(left < (1 << 30) ? left : (1 << 30)); };
        // A moved tile lies inside its operand: every block's rows are all valid where M >= BLOCK_M
        // (the same for every block: no origin is kept for the tests).
        const int m_left = clamp_left(SHIFT_M && args.M >= BLOCK_M ? args.M : args.M - row0);
        const int n_left = clamp_left(SHIFT_N && args.N >= BLOCK_N ? args.N : args.N - col0);

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
        if constexpr (CARRY) {
            // Prologue: tiles 0..STAGES-1 in flight, one group each (empty groups keep the count uniform).
#pragma unroll
            for (int s = 0; s < STAGES; ++s) {
                if (s < num_tiles) copy_tile(s);
                async::commit_group();
            }
            async::wait_group<STAGES - 1>();  // tile 0 (this thread's copies) has landed
            __syncthreads();
            typename Core::KFrag f;
            core.load_k(f, a_tiles, b_tiles, 0);
            // One trip a CHUNK of k's of one tile (the whole tile: CHUNKS_PER_TILE 1): its k's but the
            // last, then the last's FFMAs after the next k's loads; a tile's last chunk crosses the
            // barrier first, so the next k is the next tile's first.
            int stage = 0, chunk = 0, tile = 0;  // the trip's stage, its chunk of its tile, and that tile
#pragma unroll 1
            for (int trip = 0; trip < num_tiles * CHUNKS_PER_TILE; ++trip) {
                const float* a_tile = a_tiles + stage * Core::A_TILE_FLOATS;
                const float* b_tile = b_tiles + stage * Core::B_TILE_FLOATS;
                const int k0 = CHUNKS_PER_TILE == 1 ? 0 : chunk * CHUNK;
                if constexpr (COPY_K >= 0) {
                    // Tile tile - 1 + STAGES into the stage of tile - 1 (freed at the last barrier), from
                    // trip 1 on: group j still holds tile j, so the count below is the same.
                    const int prev = stage == 0 ? STAGES - 1 : stage - 1;
                    core.template multiply_run<CHUNK - 1, COPY_K>(acc, a_tile, b_tile, k0, f, [&] {
                        if (tile > 0) {
                            if (tile - 1 + STAGES < num_tiles) copy_tile(prev);
                            async::commit_group();
                        }
                    });
                } else {
                    core.template multiply_run<CHUNK - 1>(acc, a_tile, b_tile, k0, f);
                }
                typename Core::KFrag g;  // the next k (past the last tile: a stage's stale data, unused)
                if (CHUNKS_PER_TILE == 1 || chunk == CHUNKS_PER_TILE - 1) {
                    // STAGES + tile groups are committed, group j holding tile j; allowing STAGES-2
                    // pending means tile + 1 has landed.
                    async::wait_group<STAGES - 2>();
                    // Everyone's copies of tile + 1 are visible, and everyone has read all of tile `tile`.
                    __syncthreads();
                    const int next = stage == STAGES - 1 ? 0 : stage + 1;
                    core.load_k(g, a_tiles + next * Core::A_TILE_FLOATS, b_tiles + next * Core::B_TILE_FLOATS, 0);
                    if constexpr (COPY_K < 0) {
                        if (tile + STAGES < num_tiles) copy_tile(stage);
                        async::commit_group();
                    }
                    stage = next;
                    chunk = 0;
                    ++tile;
                } else {
                    core.load_k(g, a_tile, b_tile, k0 + CHUNK);
                    ++chunk;
                }
                core.ffma_k(acc, f);
                f = g;
            }
        } else {
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
        }
        async::wait_group<0>();  // only empty groups can remain; nothing is left in flight on exit
        if constexpr (SHIFT_M || SHIFT_N) {
            // The moved origin again, through an opaque read of M and N, so that the compiler does
            // not keep the copies' one through the K loop instead.
            const int64 m = opaque(args.M), n = opaque(args.N);
            if constexpr (SHIFT_M) row0 = edge_origin<BLOCK_M>(row0, m);
            if constexpr (SHIFT_N) col0 = edge_origin<BLOCK_N>(col0, n);
        }
        if constexpr (CLUSTER_K > 1) {
            __syncthreads();  // every warp has read its last stage: the buffers take the partial tile
            Reduce::template finish<SHIFT_M, SHIFT_N>(core, acc, a_tiles, a_smem, args, row0, col0,
                                                      static_cast<int>(threadIdx.x));
        } else {
            core.template store<SHIFT_M, SHIFT_N>(args, row0, col0, acc);
        }
    }
};

}  // namespace gemmlab
