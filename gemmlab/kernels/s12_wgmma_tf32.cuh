// s12 wgmma_tf32 (notes 000 §10.5, the ladder's last rung): s11's TMA + mbarrier pipeline, with the
// SIMT FFMA core replaced by Hopper's warpgroup tensor-core MMA. What it adds over s11:
//   - wgmma.mma_async m64nNk8 TF32 (mma/wgmma_core.cuh): each consumer warpgroup multiplies its
//     64 rows of the A tile by the whole B tile straight from shared memory (matrix descriptors),
//     accumulating FP32 in registers; no LDS, no FFMA in the main loop;
//   - both tiles K-major with the 128-byte swizzle (TF32 wgmma cannot transpose): A as [m][k], B as
//     [n][k], one {32, rows} TMA box each; the host hands this stage K-major operands (a transposing
//     copy where the caller's are not: plan.py);
//   - the consumers keep one wgmma group in flight (wait_group 1) and release a stage only when
//     the group that read it has completed;
//   - always warp-specialized: warpgroups 0..C-1 consume, the last warpgroup produces (one thread
//     issues the copies), setmaxnreg moves registers from the producer to the consumers.
// Precision: tf32 (inputs keep 10 mantissa bits: the TMA copy rounds them, tma_tf32=1), FP32
// accumulation. Edges: TMA zero-fills, the epilogue is predicated.
//
// S12WgmmaTf32Rs, the same step for a row-major (N-major) B without a transposing pre-pass: the
// tensor cores compute the transposed tile D^T = B^T A^T, with B^T as wgmma's A operand taken from
// registers (the RS form, which has no layout restriction) and A, K-major, as its B operand.
#pragma once
#include "common.cuh"
#include "copy/tma_pipeline.cuh"
#include "ptx/cvt.cuh"
#include "ptx/wgmma.cuh"
#include "mma/wgmma_core.cuh"
#include "mma/wgmma_rs_fragment.cuh"
#include "epilogue/wgmma_store.cuh"

namespace gemmlab {

template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int STAGES_>
struct S12WgmmaTf32 {
    static constexpr int BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_, STAGES = STAGES_;
    using Core = WgmmaCoreTf32<BLOCK_N, BLOCK_K>;
    using Pipe = TmaPipeline<128 * (BLOCK_M / 64), STAGES>;  // one consumer warpgroup per 64 rows
    static_assert(BLOCK_M % 64 == 0 && BLOCK_M >= 64 && BLOCK_M <= 256, "block_m: 64..256, one consumer warpgroup per 64 rows");
    static_assert(BLOCK_N <= 256, "a TMA box is at most 256 rows");
    static constexpr int THREADS = Pipe::THREADS;
    static_assert(Core::ACC + 40 <= Pipe::CONSUMER_REGS, "accumulators (block_n/2) + 40 must fit a consumer's registers");

    // Each tile row is 128 bytes; every stage buffer starts on a 1024-byte boundary (an atom).
    static constexpr int A_STAGE_BYTES = BLOCK_M * BLOCK_K * 4;
    static constexpr int B_STAGE_BYTES = BLOCK_N * BLOCK_K * 4;
    static_assert(A_STAGE_BYTES % 1024 == 0 && B_STAGE_BYTES % 1024 == 0, "tiles are whole 8-row atoms");
    static constexpr unsigned TX_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
    static constexpr int SMEM_BYTES = 1024 + STAGES * (A_STAGE_BYTES + B_STAGE_BYTES) + 2 * STAGES * 8;

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem,
                                               const async::TmaDescriptor& a_map, const async::TmaDescriptor& b_map,
                                               int batch_mask) {
        const unsigned raw = async::smem_address(smem);
        const unsigned base = (raw + 1023u) & ~1023u;
        const unsigned a_stages = base;
        const unsigned b_stages = base + STAGES * A_STAGE_BYTES;
        const Pipe pipe(b_stages + STAGES * B_STAGE_BYTES, &a_map, &b_map);
        const int num_tiles = static_cast<int>((args.K + BLOCK_K - 1) / BLOCK_K);
        StageRing<STAGES> ring;

        if (Pipe::is_producer_group()) {  // one thread streams an A and a B box per tile
            const int m0 = static_cast<int>(row0), n0 = static_cast<int>(col0);
            pipe.template produce<BLOCK_K>(num_tiles, args.k_begin, batch_mask, TX_BYTES,
                                           [&](int s, int k0, unsigned bar, int a_batch, int b_batch) {
                async::tma_load_3d(a_stages + s * A_STAGE_BYTES, &a_map, bar, k0, m0, a_batch);
                async::tma_load_3d(b_stages + s * B_STAGE_BYTES, &b_map, bar, k0, n0, b_batch);
            });
            return;
        }

        // ---- consumer warpgroups ------------------------------------------------------------
        Pipe::consumer_enter();
        const int wg = threadIdx.x / 128;
        const unsigned a_rows = wg * 64 * (BLOCK_K * 4);  // this warpgroup's 64 rows of the A tile
        float acc[Core::ACC];
#pragma unroll
        for (int i = 0; i < Core::ACC; ++i) acc[i] = 0.0f;

        int prev_stage = 0;
        for (int t = 0; t < num_tiles; ++t, ring.advance()) {
            const int s = ring.stage;
            pipe.wait_full(ring);
            wgmma::fence_operands(acc);
            wgmma::fence();
            Core::multiply(acc, a_stages + s * A_STAGE_BYTES + a_rows, b_stages + s * B_STAGE_BYTES);
            wgmma::commit();
            // At most this tile's group still runs: the previous tile's stage has been read.
            wgmma::wait<1>();
            wgmma::fence_operands(acc);
            if (t > 0) pipe.release(prev_stage);
            prev_stage = s;
        }
        wgmma::wait<0>();
        wgmma::fence_operands(acc);
        store_wgmma_tile<BLOCK_N>(args, row0 + 64 * wg, col0, threadIdx.x % 128, acc);
        Pipe::consumer_exit();
    }
};

// D^T tile = B^T (registers) x A^T (shared, K-major). The block covers BLOCK_M rows of D (the
// wgmma N) and BLOCK_N columns (64 per consumer warpgroup, the wgmma M).
//   - B arrives as its row-major [k][n] tile and reaches wgmma's register fragment as
//     mma/wgmma_rs_fragment.cuh lays it out (adjacent column pairs, conflict-free 8-byte loads);
//   - the words are rounded to tf32 in registers (cvt.rna), as the TMA rounds A;
//   - each tile's wgmma group is waited for before its registers are reused (the two consumer
//     warpgroups take turns on the tensor cores meanwhile).
template <int BLOCK_M_, int BLOCK_N_, int BLOCK_K_, int STAGES_, int A_ORDER_>
struct S12WgmmaTf32Rs {
    static constexpr int BLOCK_M = BLOCK_M_, BLOCK_N = BLOCK_N_, BLOCK_K = BLOCK_K_, STAGES = STAGES_;
    using Core = WgmmaCoreTf32<BLOCK_M, BLOCK_K>;  // the wgmma N is the block's M
    using Frag = RsFragmentNMajor<BLOCK_N, BLOCK_K>;
    using Pipe = TmaPipeline<128 * (BLOCK_N / 64), STAGES>;  // one consumer warpgroup per 64 columns
    static_assert(BLOCK_N % 64 == 0 && BLOCK_N >= 64 && BLOCK_N <= 256, "block_n: 64..256, one consumer warpgroup per 64 columns");
    static_assert(BLOCK_M <= 256, "a TMA box is at most 256 rows");
    static constexpr int THREADS = Pipe::THREADS;
    static_assert(Core::ACC + 56 <= Pipe::CONSUMER_REGS, "accumulators (block_m/2) + 56 must fit a consumer's registers");

    static constexpr int A_STAGE_BYTES = BLOCK_M * BLOCK_K * 4;  // [m][k], K-major, swizzled
    static constexpr int B_BOX_BYTES = Frag::BOX_BYTES;
    static constexpr int B_STAGE_BYTES = Frag::STAGE_BYTES;
    static_assert(A_STAGE_BYTES % 1024 == 0, "tiles are whole 8-row atoms");
    static constexpr unsigned TX_BYTES = A_STAGE_BYTES + B_STAGE_BYTES;
    static constexpr int SMEM_BYTES = 1024 + STAGES * (A_STAGE_BYTES + B_STAGE_BYTES) + 2 * STAGES * 8;

    static __device__ __forceinline__ unsigned tf32_bits(unsigned word) {
        return __float_as_uint(tf32_round(__uint_as_float(word)));
    }

    static __device__ __forceinline__ void run(const GemmArgs& args, int64 row0, int64 col0, unsigned char* smem,
                                               const async::TmaDescriptor& a_map, const async::TmaDescriptor& b_map,
                                               int batch_mask) {
        const unsigned raw = async::smem_address(smem);
        const unsigned base = (raw + 1023u) & ~1023u;
        const unsigned a_stages = base;
        const unsigned b_stages = base + STAGES * A_STAGE_BYTES;
        const Pipe pipe(b_stages + STAGES * B_STAGE_BYTES, &a_map, &b_map);
        const int num_tiles = static_cast<int>((args.K + BLOCK_K - 1) / BLOCK_K);
        StageRing<STAGES> ring;

        if (Pipe::is_producer_group()) {  // A as in s12; B row-major in BLOCK_N/32 boxes at (n, k)
            const int m0 = static_cast<int>(row0), n0 = static_cast<int>(col0);
            pipe.template produce<BLOCK_K>(num_tiles, args.k_begin, batch_mask, TX_BYTES,
                                           [&](int s, int k0, unsigned bar, int a_batch, int b_batch) {
                async::tma_load_3d(a_stages + s * A_STAGE_BYTES, &a_map, bar, k0, m0, a_batch);
#pragma unroll
                for (int j = 0; j < BLOCK_N / 32; ++j)
                    async::tma_load_3d(b_stages + s * B_STAGE_BYTES + j * B_BOX_BYTES, &b_map, bar, n0 + 32 * j,
                                       k0, b_batch);
            });
            return;
        }

        Pipe::consumer_enter();
        const int n_pair = Frag::n_pair(threadIdx.x);  // this thread's two columns of the block
        const int k_lane = Frag::k_lane(threadIdx.x);
        float acc[Core::ACC];
#pragma unroll
        for (int i = 0; i < Core::ACC; ++i) acc[i] = 0.0f;
        wgmma::fence_operands(acc);

        for (int t = 0; t < num_tiles; ++t, ring.advance()) {
            const int s = ring.stage;
            pipe.wait_full(ring);
            const unsigned b_stage = b_stages + s * B_STAGE_BYTES;
            unsigned frag[Core::K_STEPS][4];
#pragma unroll
            for (int ks = 0; ks < Core::K_STEPS; ++ks) {
                unsigned w[4];
                Frag::load(b_stage, ks, n_pair, k_lane, w);
                if constexpr (A_ORDER_ == 0) {
                    frag[ks][0] = tf32_bits(w[0]); frag[ks][1] = tf32_bits(w[1]);
                    frag[ks][2] = tf32_bits(w[2]); frag[ks][3] = tf32_bits(w[3]);
                } else {
                    frag[ks][0] = tf32_bits(w[0]); frag[ks][1] = tf32_bits(w[2]);
                    frag[ks][2] = tf32_bits(w[1]); frag[ks][3] = tf32_bits(w[3]);
                }
            }
            wgmma::fence();
            const unsigned long long a_desc = wgmma::desc_k_major_sw128(a_stages + s * A_STAGE_BYTES);
#pragma unroll
            for (int ks = 0; ks < Core::K_STEPS; ++ks)
                wgmma::mma_tf32_rs<BLOCK_M>(acc, frag[ks], a_desc + ks * wgmma::DESC_K8_STEP, 1);
            wgmma::commit();
            wgmma::wait<0>();
            wgmma::fence_operands(acc);
            pipe.release(s);
        }
        store_wgmma_tile_transposed<BLOCK_M>(args, row0, col0 + n_pair, k_lane, acc);
        Pipe::consumer_exit();
    }
};

}  // namespace gemmlab
