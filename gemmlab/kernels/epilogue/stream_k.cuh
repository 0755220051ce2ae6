// gemmlab/kernels/epilogue/stream_k.cuh — how a stage's block finishes a tile (StoreTile: alpha *
// acc + beta * C into D; StreamKStore: into D or into a stream-K partial slot), which tiles a block
// runs (OneTile; PersistentTiles, a grid the size of the GPU), stream-K's schedule (StreamKSegment,
// run by the generated wrapper in jit/source.py) and its fixup kernel.
//
// The schedule: data-parallel waves, then stream-K over the rest (the "DP + SK" hybrid). With T
// tiles and G blocks (as many as the GPU holds at once), the last T % G tiles plus one full wave
// (all T where T < 2G; none where G divides T) are shared as K iterations (one K tile of one
// output tile each). Every block first takes whole tiles b, b + G, ... of the others, as the
// data-parallel grid would run them at once (neighbouring tiles in the group_m order: their
// operands are shared in L2), then its even, contiguous run of the shared iterations, at least
// a tile's worth. A run cuts at most two tiles: the one it starts in (its first segment, when it
// does not start on a tile) and the one it ends in (its last). A segment that holds a whole
// tile stores it like the data-parallel kernel; a cut one stores its partial product (alpha 1,
// beta 0) into slot 2b (first segment) or 2b + 1 (last) of the workspace, and the fixup kernel
// then adds, for every cut tile, the slots of the blocks that computed it in K order (the same
// bits on every run) and applies the epilogue once. No block waits for another.
#pragma once
#include "common.cuh"

namespace gemmlab {

struct StoreTile {
    template <class Core, int TM, int TN>
    __device__ __forceinline__ void operator()(const Core& core, const GemmArgs& args, int64 row0, int64 col0,
                                               const float (&acc)[TM][TN]) const {
        core.store(args, row0, col0, acc);
    }
};

// Tile pid's row and column of tiles in the grouped order of the data-parallel grid: group_m tile
// rows at a time, so that blocks running together share rows of A and columns of B in L2.
template <class I>
__device__ __forceinline__ void tile_coords(I pid, I tiles_m, I tiles_n, int group_m, I& tile_m, I& tile_n) {
    const I group_size = static_cast<I>(group_m) * tiles_n;
    const I first_m = (pid / group_size) * group_m;
    const I rows_in_group = (tiles_m - first_m) < group_m ? (tiles_m - first_m) : static_cast<I>(group_m);
    tile_m = first_m + (pid % group_size) % rows_in_group;
    tile_n = (pid % group_size) / rows_in_group;
}

// Tile pid's first row and column.
__device__ __forceinline__ void tile_corner(int64 pid, int64 M, int64 N, int bm, int bn, int group_m, int64& row0,
                                            int64& col0) {
    int64 tile_m, tile_n;
    tile_coords<int64>(pid, (M + bm - 1) / bm, (N + bn - 1) / bn, group_m, tile_m, tile_n);
    row0 = tile_m * bm;
    col0 = tile_n * bn;
}

// The tiles a block runs (a stage's run_tiles, s11_tma.cuh), each as a TileAt: its first row and
// column and its batch. OneTile: its own, at (row0, col0) of batch blockIdx.z (the data-parallel
// grid, split-K, a stream-K segment).
struct TileAt {
    int64 row0, col0;
    int batch;
};

struct OneTile {
    static constexpr bool ONE = true;
    GemmArgs whole;
    int64 row0, col0;
    __device__ __forceinline__ const GemmArgs& args() const { return whole; }
    __device__ __forceinline__ int count() const { return 1; }
    __device__ __forceinline__ TileAt at(int) const { return TileAt{row0, col0, static_cast<int>(blockIdx.z)}; }
    __device__ __forceinline__ const GemmArgs& args_of(const TileAt&) const { return whole; }
};

// PersistentTiles: a grid of as many blocks as the GPU holds at once (the host's choice, at most
// one a tile); block b runs tiles b, b + G, b + 2G, ... of all batches (G blocks), in the grouped
// order within a batch (the order the data-parallel grid's blocks start in, so that blocks running
// together share A and B in L2). int32 tile counts (s11 sends dimensions >= 2^31 to s10), so the
// producer warp's few registers hold the arithmetic.
template <int BM, int BN, int GROUP_M>
struct PersistentTiles {
    static constexpr bool ONE = false;
    GemmArgs whole;  // batch 0's D and C
    int64 d_bs, c_bs;       // a batch's step in D and C
    int tiles_m, tiles_n, total;
    __device__ __forceinline__ PersistentTiles(const GemmArgs& args, int64 batch, int64 d_bs_, int64 c_bs_)
        : whole(args), d_bs(d_bs_), c_bs(c_bs_), tiles_m(static_cast<int>((args.M + BM - 1) / BM)),
          tiles_n(static_cast<int>((args.N + BN - 1) / BN)), total(tiles_m * tiles_n * static_cast<int>(batch)) {}
    __device__ __forceinline__ const GemmArgs& args() const { return whole; }
    __device__ __forceinline__ int count() const {
        const int b = static_cast<int>(blockIdx.x), g = static_cast<int>(gridDim.x);
        return b < total ? (total - 1 - b) / g + 1 : 0;
    }
    // The block's u-th tile: pid b + u*G, its batch and its place in the batch's grouped order.
    __device__ __forceinline__ TileAt at(int u) const {
        const int pid = static_cast<int>(blockIdx.x) + u * static_cast<int>(gridDim.x);
        const int per_batch = tiles_m * tiles_n;
        const int z = pid / per_batch;
        int tm, tn;
        tile_coords<int>(pid - z * per_batch, tiles_m, tiles_n, GROUP_M, tm, tn);
        return TileAt{static_cast<int64>(tm) * BM, static_cast<int64>(tn) * BN, z};
    }
    __device__ __forceinline__ GemmArgs args_of(const TileAt& t) const {
        GemmArgs a = whole;
        a.D += t.batch * d_bs;
        a.C += t.batch * c_bs;
        return a;
    }
};

// The shared tiles and the block whose run holds shared iteration `it`.
__device__ __forceinline__ int64 stream_k_shared_tiles(int64 tiles, int64 blocks) {
    const int64 rest = tiles % blocks;
    return tiles < 2 * blocks ? tiles : rest == 0 ? 0 : blocks + rest;
}
__device__ __forceinline__ int64 stream_k_block_of(int64 it, int64 total, int64 blocks) {
    return ((it + 1) * blocks + total - 1) / total - 1;
}

// One segment of a block's work, decoded by thread 0 into shared memory (every thread reads it
// there: no schedule state stays in registers through the main loop).
struct StreamKSegment {
    int64 k_tiles, dp_tiles, dp_next;  // K tiles per output tile; tiles run whole; this block's next one
    int64 sk_total, next, end;         // the shared K iterations, and this block's run of them [next, end)
    int64 row0, col0, k0, k_len;       // the segment: its tile and K range
    float* d;                          // where it stores: D, or a slot shifted so that the tile's
    int64 ldd;                         // corner lands on the slot's first element (ldd = BLOCK_N)
    float alpha, beta;                 // the caller's, or 1 and 0 for a partial
    int valid;                         // 0: the block is done

    template <int BM, int BN, int BK>
    __device__ __forceinline__ void start(int64 M, int64 N, int64 K) {
        const int64 tiles = ((M + BM - 1) / BM) * ((N + BN - 1) / BN), blocks = gridDim.x;
        const int64 shared = stream_k_shared_tiles(tiles, blocks);
        k_tiles = (K + BK - 1) / BK;
        dp_tiles = tiles - shared;
        dp_next = blockIdx.x;
        sk_total = shared * k_tiles;
        next = (int64)blockIdx.x * sk_total / blocks;
        end = ((int64)blockIdx.x + 1) * sk_total / blocks;
    }

    template <int BM, int BN, int BK, int GROUP_M>
    __device__ __forceinline__ void advance(const GemmArgs& g, float* slots) {
        int64 pid, kb, ke;
        int slot = -1;
        if (dp_next < dp_tiles) {  // a whole tile
            pid = dp_next;
            kb = 0;
            ke = k_tiles;
            dp_next += gridDim.x;
        } else if (next < end) {   // the part of this block's run in one tile
            const int64 t = next / k_tiles;
            const bool first = next == (int64)blockIdx.x * sk_total / gridDim.x;
            kb = next - t * k_tiles;
            ke = end - t * k_tiles < k_tiles ? end - t * k_tiles : k_tiles;
            pid = dp_tiles + t;
            if (kb > 0 || ke < k_tiles) slot = 2 * static_cast<int>(blockIdx.x) + (first && kb > 0 ? 0 : 1);
            next += ke - kb;
        } else {
            valid = 0;
            return;
        }
        valid = 1;
        tile_corner(pid, g.M, g.N, BM, BN, GROUP_M, row0, col0);
        k0 = kb * BK;
        k_len = (ke * BK < g.K ? ke * BK : g.K) - k0;
        if (slot < 0) {
            d = g.D;
            ldd = g.ldd;
            alpha = g.alpha;
            beta = g.beta;
        } else {
            d = slots + (int64)slot * BM * BN - row0 * BN - col0;
            ldd = BN;
            alpha = 1.0f;
            beta = 0.0f;
        }
    }
};

// The finish of a stream-K segment: the data-parallel store, to where the segment says (read from
// shared memory after the main loop).
struct StreamKStore {
    const StreamKSegment* seg;

    template <class Core, int TM, int TN>
    __device__ __forceinline__ void operator()(const Core& core, const GemmArgs& args, int64, int64,
                                               const float (&acc)[TM][TN]) const {
        GemmArgs a = args;
        a.D = seg->d;
        a.ldd = seg->ldd;
        a.alpha = seg->alpha;
        a.beta = seg->beta;
        core.store(a, seg->row0, seg->col0, acc);
    }
};

}  // namespace gemmlab
