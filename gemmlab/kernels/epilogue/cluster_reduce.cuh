// gemmlab/kernels/epilogue/cluster_reduce.cuh — split-K without a workspace or a second kernel
// (s11). The SLICES CTAs that compute the slices of K of one output tile are one thread block
// cluster (cluster dims 1 x SLICES x 1 over gridDim.y = SLICES). After its K loop each CTA writes
// its partial tile into its own shared memory (the pipeline's stage buffers, free by then); after
// a cluster barrier, CTA r adds row band r of the tile from all SLICES partials through
// distributed shared memory, in slice order 0, 1, ..., SLICES-1 (the same bits on every run), and
// applies the epilogue D = alpha * sum + beta * C once; a second cluster barrier keeps every CTA's
// partial alive until the others have read it. Against the workspace path (write SLICES partial
// tiles to global memory, launch kernels/splitk_reduce.cuh, read them back) nothing goes through
// L2 but the output itself.
#pragma once
#include "common.cuh"
#include "ptx/cluster.cuh"

namespace gemmlab {

template <int BLOCK_M, int BLOCK_N, int SLICES, int THREADS>
struct ClusterReduce {
    // A partial row holds BLOCK_N floats and 8 of padding: consecutive rows start 8 banks apart, so
    // a warp's scalar writes of 4 rows x 8 columns (B K-major) hit 32 different banks.
    static constexpr int LD = BLOCK_N + 8;
    static constexpr int BYTES = BLOCK_M * LD * 4;
    static constexpr int BAND = (BLOCK_M + SLICES - 1) / SLICES;  // rows each CTA adds and stores
    static constexpr int CHUNKS = BLOCK_N / 4;                    // 16-byte columns of a row
    static_assert(SLICES >= 2 && SLICES <= 8, "a portable cluster holds at most 8 CTAs");
    static_assert(BLOCK_N % 4 == 0, "rows of whole 16-byte chunks");

    // The thread's THREAD_M x THREAD_N accumulators at their places in the tile (Core's mapping).
    // The base address goes through an opaque move, so that the compiler cannot work out the
    // rows' addresses before the main loop and keep them live through it.
    template <class Core, int TM, int TN>
    static __device__ __forceinline__ void write_partial(const Core& core, const float (&acc)[TM][TN], float* tile) {
        float* first;
        asm volatile("mov.b64 %0, %1;\n" : "=l"(first) : "l"(tile + core.m_base * LD + core.n_base));
#pragma unroll
        for (int i = 0; i < TM; ++i) {
            float* row = first + Core::row_of(i) * LD;
            if constexpr (Core::COLS_IN_FOURS) {
#pragma unroll
                for (int j = 0; j < TN; j += 4)
                    *reinterpret_cast<float4*>(row + Core::col_of(j)) =
                        make_float4(acc[i][j], acc[i][j + 1], acc[i][j + 2], acc[i][j + 3]);
            } else {
#pragma unroll
                for (int j = 0; j < TN; ++j) row[Core::col_of(j)] = acc[i][j];
            }
        }
    }

    // The whole split-K end of a slice, once no thread of the CTA reads the stage buffers any more:
    // the partial into this CTA's buffers (`tile`, at shared address `tile_addr`), a cluster
    // barrier, this CTA's band added from every slice and stored, and a second barrier that keeps
    // every partial alive until the others have read it. SHIFTED_M / SHIFTED_N: as in
    // WarpTileCore::store (a tile moved back inside the operand stores only what it owns).
    template <bool SHIFTED_M = false, bool SHIFTED_N = false, class Core, int TM, int TN>
    static __device__ __forceinline__ void finish(const Core& core, const float (&acc)[TM][TN], float* tile,
                                                  unsigned tile_addr, const GemmArgs& args, int64 row0, int64 col0,
                                                  int tid) {
        write_partial(core, acc, tile);
        async::cluster_sync();  // every slice's partial is written
        reduce_store<SHIFTED_M, SHIFTED_N>(args, row0, col0, tile_addr, tid);
        async::cluster_sync();  // no CTA moves on while another still reads its partial
    }

    // Row band cluster_ctarank() of the tile: the sum of the SLICES partials, then the epilogue.
    // tile_addr: the shared address of this CTA's partial (the same offset in every CTA).
    template <bool SHIFTED_M, bool SHIFTED_N>
    static __device__ __forceinline__ void reduce_store(const GemmArgs& args, int64 row0, int64 col0,
                                                        unsigned tile_addr, int tid) {
        const int first = static_cast<int>(async::cluster_ctarank()) * BAND;
        const int rows = BLOCK_M - first < BAND ? BLOCK_M - first : BAND;
        const bool d_vec = d_rows_take_16_bytes<SHIFTED_N>(args, col0);
        const int m_lo = skipped<BLOCK_M>(row0), n_lo = skipped<BLOCK_N>(col0);
        const CView c = c_view(args);
        for (int idx = tid; idx < rows * CHUNKS; idx += THREADS) {
            const int r = first + idx / CHUNKS, q = idx % CHUNKS;
            const int64 row = row0 + r, col = col0 + 4 * q;
            if (row >= args.M || col >= args.N || (SHIFTED_M && r < m_lo) || (SHIFTED_N && 4 * q + 3 < n_lo)) continue;
            const unsigned addr = tile_addr + static_cast<unsigned>((r * LD + 4 * q) * 4);
            float4 part[SLICES];
#pragma unroll
            for (int s = 0; s < SLICES; ++s) part[s] = async::ld_cluster_v4(async::cluster_map(addr, s));
            float4 sum = part[0];
#pragma unroll
            for (int s = 1; s < SLICES; ++s) {
                sum.x += part[s].x;
                sum.y += part[s].y;
                sum.z += part[s].z;
                sum.w += part[s].w;
            }
            if (d_vec && col + 3 < args.N && (!SHIFTED_N || 4 * q >= n_lo)) {
                store_output4(args, c, row, col, sum);
            } else {
                const float v[4] = {sum.x, sum.y, sum.z, sum.w};
#pragma unroll
                for (int e = 0; e < 4; ++e)
                    if (col + e < args.N && (!SHIFTED_N || 4 * q + e >= n_lo)) store_output(args, c, row, col + e, v[e]);
            }
        }
    }
};

}  // namespace gemmlab
