// tests/host/copies_host.cpp — the plan's copy kernels run on the CPU from their own sources
// (each CUDA thread a std::thread, __syncthreads the block's barrier, the blocks one after
// another; tests/test_kernels_host.py builds it under the address and undefined-behaviour
// sanitizers, each buffer an allocation of exactly its extent):
// - gemmlab_transpose (transpose.cuh) on the grid the plan gives it (a block per 32x32 tile, at
//   most 16 blocks an SM, the batches on z) and on grids too small for its tiles and batches (the
//   grid-stride loops): dst(r, c) = src(r, c) for every element, the destination's padding
//   columns untouched; tiles inside the matrix and across both edges, one row or column, a
//   broadcast source (batch stride 0);
// - gemmlab_copy (common.cuh) on one and on two operands a launch, on grids too small for their
//   runs (the grid-stride carries), strided sources and destinations: every element in place,
//   nothing else written.
#include "cuda_host.h"

#include <cstdio>
#include <functional>
#include <thread>
#include <vector>

#include "transpose.cuh"

static int failures = 0, cases = 0;
static constexpr float POISON = -7.0f;
static float value(long b, long r, long c) { return float(b * 1000000 + r * 1000 + c); }

// every block of the grid, one after another, its threads at once
static void launch(HostDim3 grid, unsigned threads, const std::function<void()>& kernel) {
    gridDim = grid;
    blockDim.x = threads;
    for (unsigned z = 0; z < grid.z; ++z)
        for (unsigned y = 0; y < grid.y; ++y)
            for (unsigned x = 0; x < grid.x; ++x) {
                blockIdx = {x, y, z};
                std::barrier<> bar(threads);
                host_block_barrier = &bar;
                std::vector<std::thread> block;
                for (unsigned t = 0; t < threads; ++t)
                    block.emplace_back([&, t] {
                        threadIdx.x = t;
                        kernel();
                    });
                for (auto& th : block) th.join();
            }
}

// src(r, c) = src[b * src_bs + r + c * src_cs] -> dst[b * dst_bs + r * dst_ld + c]; grid_x 0: the plan's
static void transpose_case(long rows, long cols, long batch, bool broadcast, unsigned grid_x, unsigned grid_z) {
    ++cases;
    const long src_cs = rows + 3, src_bs = broadcast ? 0 : src_cs * cols, dst_ld = cols + 5, dst_bs = rows * dst_ld;
    std::vector<float> src(size_t((broadcast ? 1 : batch) - 1) * src_bs + size_t(cols - 1) * src_cs + rows);
    for (long b = 0; b < (broadcast ? 1 : batch); ++b)
        for (long c = 0; c < cols; ++c)
            for (long r = 0; r < rows; ++r) src[b * src_bs + r + c * src_cs] = value(b, r, c);
    std::vector<float> dst(size_t(batch) * dst_bs, POISON);
    const long tiles = ((rows + 31) / 32) * ((cols + 31) / 32);
    const HostDim3 grid{grid_x ? grid_x : unsigned(tiles < 132 * 16 ? tiles : 132 * 16), 1, grid_z};
    launch(grid, 256, [&] {
        gemmlab_transpose(src.data(), dst.data(), rows, cols, batch, src_bs, src_cs, dst_bs, dst_ld);
    });
    int bad = 0;
    for (long b = 0; b < batch; ++b)
        for (long r = 0; r < rows; ++r)
            for (long c = 0; c < dst_ld; ++c) {
                const float want = c < cols ? value(broadcast ? 0 : b, r, c) : POISON;
                const float got = dst[b * dst_bs + r * dst_ld + c];
                if (got != want && bad++ < 3)
                    std::printf("FAIL transpose %ldx%ld batch %ld grid %u%s: dst[%ld][%ld][%ld] = %g, want %g\n", rows,
                                cols, batch, grid.x, broadcast ? " broadcast" : "", b, r, c, got, want);
            }
    failures += bad != 0;
}

struct Copy {  // one operand's copy: rows x cols x batch, source and destination strides (bs, rs, cs)
    long rows, cols, batch, s_bs, s_rs, s_cs, d_bs, d_rs, d_cs;
    std::vector<float> src, dst;
    Copy(long rows, long cols, long batch, long s_bs, long s_rs, long s_cs, long d_bs, long d_rs, long d_cs)
        : rows(rows), cols(cols), batch(batch), s_bs(s_bs), s_rs(s_rs), s_cs(s_cs), d_bs(d_bs), d_rs(d_rs), d_cs(d_cs) {
        src.assign(size_t(batch - 1) * s_bs + size_t(rows - 1) * s_rs + size_t(cols - 1) * s_cs + 1, POISON);
        dst.assign(size_t(batch - 1) * d_bs + size_t(rows - 1) * d_rs + size_t(cols - 1) * d_cs + 1, POISON);
        for (long b = 0; b < batch; ++b)
            for (long r = 0; r < rows; ++r)
                for (long c = 0; c < cols; ++c) src[b * s_bs + r * s_rs + c * s_cs] = value(b, r, c);
    }
    int check(const char* what) const {
        int bad = 0;
        std::vector<char> hit(dst.size(), 0);
        for (long b = 0; b < batch; ++b)
            for (long r = 0; r < rows; ++r)
                for (long c = 0; c < cols; ++c) {
                    const size_t at = b * d_bs + r * d_rs + c * d_cs;
                    hit[at] = 1;
                    if (dst[at] != value(b, r, c) && bad++ < 3)
                        std::printf("FAIL %s %ldx%ldx%ld: dst(%ld, %ld, %ld) = %g, want %g\n", what, rows, cols, batch, b, r,
                                    c, dst[at], value(b, r, c));
                }
        for (size_t i = 0; i < dst.size(); ++i)
            if (!hit[i] && dst[i] != POISON && bad++ < 3) std::printf("FAIL %s: dst[%zu] written outside the copy\n", what, i);
        return bad;
    }
};

static void copy_case(Copy one, Copy two, bool both, unsigned blocks0, unsigned blocks1) {
    ++cases;
    const unsigned blocks = both ? blocks0 + blocks1 : blocks0;
    launch(HostDim3{blocks, 1, 1}, 256, [&] {
        gemmlab_copy(one.src.data(), one.dst.data(), one.rows, one.cols, one.batch, one.s_bs, one.s_rs, one.s_cs, one.d_bs,
                     one.d_rs, one.d_cs, two.src.data(), two.dst.data(), two.rows, two.cols, both ? two.batch : 0, two.s_bs,
                     two.s_rs, two.s_cs, two.d_bs, two.d_rs, two.d_cs, blocks0);
    });
    failures += (one.check("copy") + (both ? two.check("copy") : 0)) != 0;
}

int main() {
    // transposes: whole tiles, edges in both directions, one row / column, batches on z and past it
    for (long rows : {1L, 31L, 32L, 70L})
        for (long cols : {1L, 32L, 33L, 65L}) {
            transpose_case(rows, cols, 1, false, 0, 1);
            transpose_case(rows, cols, 3, false, 2, 2);  // two blocks over the tiles, three batches on a z of two
        }
    transpose_case(100, 70, 2, true, 0, 2);  // one source for every batch
    // copies: row-major lines (unit stride both sides) and strided ones, short of, at and past a run (128)
    for (long cols : {5L, 127L, 128L, 129L, 257L, 700L}) {
        const long rows = 37, batch = 2;
        for (unsigned blocks : {1u, 3u, 11u}) {
            Copy unit(rows, cols, batch, rows * (cols + 3), cols + 3, 1, rows * (cols + 1), cols + 1, 1);
            Copy strided(rows, cols, batch, rows * (2 * cols + 1) + 7, 2 * cols + 1, 2, rows * cols, cols, 1);
            Copy column(rows, cols, batch, rows * cols * 3, 1, 3 * rows, rows * cols, 1, rows);  // dst column-major
            copy_case(unit, unit, false, blocks, 0);
            copy_case(strided, column, true, blocks, 2);
            copy_case(unit, strided, true, blocks, 1);
        }
    }
    std::printf("%d of %d cases wrong\n", failures, cases);
    return failures != 0;
}
