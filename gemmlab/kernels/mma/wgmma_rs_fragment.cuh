// gemmlab/kernels/mma/wgmma_rs_fragment.cuh — the register operand of the RS-form wgmma, read from
// shared memory: RsFragmentNMajor where it is B^T of a row-major (N-major) B (s12's and s13's RS
// variants: the tensor cores compute the tile of D^T = B^T A^T, B^T being wgmma's A operand), and
// RsFragmentKMajor where it is a K-major A tile as TMA writes it for the SS path (s13's A-split
// variant).
// RsFragmentNMajor:
//   - a stage holds B's [k][n] tile as BLOCK_N/32 TMA boxes of {32 n, 32 k}: 32 rows of 128 bytes
//     each, 128-byte swizzled (16-byte chunk index XOR k % 8);
//   - wgmma's A fragment (warp w, lane l: rows 16w + l/4 and +8, k = l%4 and +4) is mapped to
//     n = 16w + 2(l/4) and +1 of the warpgroup's 64 columns, so each thread's two rows are adjacent:
//     one 8-byte load per k row, conflict-free under the swizzle; the epilogue undoes the mapping
//     (epilogue/wgmma_store.cuh, store_wgmma_tile_transposed).
#pragma once
#include "common.cuh"

namespace gemmlab {

template <int BLOCK_N, int BLOCK_K>
struct RsFragmentNMajor {
    static constexpr int BOX_BYTES = 32 * BLOCK_K * 4;  // {32 n, 32 k}: 32 rows of 128 bytes
    static constexpr int STAGE_BYTES = BLOCK_N / 32 * BOX_BYTES;
    static_assert(BLOCK_K == 32, "a 128-byte swizzled row holds 32 values of k");
    static_assert(BLOCK_N % 64 == 0, "64 columns of D per consumer warpgroup (the wgmma M)");

    // This thread's first column of the block (n_pair, n_pair + 1) and its k lane.
    // (thread is unsigned: threadIdx.x, so the divisions stay shifts)
    static __device__ __forceinline__ int n_pair(unsigned thread) {
        const int wg = thread / 128, warp = (thread % 128) / 32, lane = thread % 32;
        return 64 * wg + 16 * warp + 2 * (lane / 4);
    }
    static __device__ __forceinline__ int k_lane(unsigned thread) { return static_cast<int>(thread % 32) % 4; }

    // The 8 bytes (n, n+1) at row k of the stage's tile (n even).
    static __device__ __forceinline__ uint2 load_pair(unsigned stage, int k, int n) {
        const unsigned box = stage + (n / 32) * BOX_BYTES;
        const unsigned chunk = static_cast<unsigned>(((n % 32) / 4) ^ (k % 8));
        const unsigned addr = box + k * 128 + chunk * 16 + (n % 4) * 4;
        uint2 v;
        asm volatile("ld.shared.v2.u32 {%0, %1}, [%2];\n" : "=r"(v.x), "=r"(v.y) : "r"(addr));
        return v;
    }

    // The four raw FP32 words of k8 step ks in wgmma's fragment order: (row l/4, k), (row l/4 + 8,
    // k), (row l/4, k + 4), (row l/4 + 8, k + 4), rows l/4 and l/4 + 8 being columns n_pair and +1.
    static __device__ __forceinline__ void load(unsigned stage, int ks, int n_first, int k_first,
                                                unsigned (&w)[4]) {
        const uint2 lo_k = load_pair(stage, 8 * ks + k_first, n_first);      // k = l%4
        const uint2 hi_k = load_pair(stage, 8 * ks + k_first + 4, n_first);  // k = l%4 + 4
        w[0] = lo_k.x, w[1] = lo_k.y, w[2] = hi_k.x, w[3] = hi_k.y;
    }
};

// A warpgroup's 64 rows of a K-major [m][k] tile (rows of 128 bytes, 32 values of k, 128-byte
// swizzled: 16-byte chunk index XOR row % 8, as TMA's SWIZZLE_128B writes a {32, rows} box). The
// fragment's rows 16w + l/4 and + 8, k = l%4 and + 4 are four 4-byte loads; in each, the 8 rows of
// a warp fall in 8 different chunks (row % 8 = l/4) and its 4 k lanes in 4 words of one: the 32
// lanes hit 32 banks.
struct RsFragmentKMajor {
    static __device__ __forceinline__ unsigned load_word(unsigned tile, int row, int k) {
        const unsigned addr = tile + row * 128 + (static_cast<unsigned>((k / 4) ^ (row % 8)) * 16) + (k % 4) * 4;
        unsigned v;
        asm volatile("ld.shared.u32 %0, [%1];\n" : "=r"(v) : "r"(addr));
        return v;
    }
    // The four raw words of k8 step ks in wgmma's fragment order, ``tile`` at the warpgroup's row 0.
    static __device__ __forceinline__ void load(unsigned tile, int ks, unsigned thread_in_wg, unsigned (&w)[4]) {
        const int row = static_cast<int>(16 * (thread_in_wg / 32) + (thread_in_wg % 32) / 4);
        const int k = 8 * ks + static_cast<int>(thread_in_wg % 4);
        w[0] = load_word(tile, row, k), w[1] = load_word(tile, row + 8, k);
        w[2] = load_word(tile, row, k + 4), w[3] = load_word(tile, row + 8, k + 4);
    }
};

}  // namespace gemmlab
