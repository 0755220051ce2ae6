// tests/host/s11_host.cpp — s11's whole kernel (s11_tma.cuh: the TMA boxes, the full and empty
// mbarriers of every stage, the producer warp or thread, the warp-tile FFMAs, the epilogue)
// compiled from the kernels' own headers and run on the CPU: each CUDA thread a std::thread, the
// mbarriers, named barriers and TMA copies stood in for with their PTX semantics
// (tests/host/ptx/mbarrier.cuh, sync.cuh, tma.cuh), the blocks one after another at the tile
// origins the generated kernel gives them. The tensor maps are built as the host builds them
// (gemmlab/stages/s11_tma.py operand_maps: boxes, swizzles, the batch dimension). Operands of small
// integers, so every sum is exact: D = A B + 2 C (C the output itself, read in place) must match an
// integer reference at every output, for every layout, batched with a broadcast operand, with the
// producer a warpgroup of its own or thread 0, stages fewer and more than the K tiles. Run twice:
// copies landing when issued show a stage overwritten while a consumer warp still reads it (the
// empty barrier's wait or arrival wrong), copies landing at the wait that needs them show a stage
// read before its full barrier's wait.
#include "cuda_host.h"

#include <array>
#include <cstdio>
#include <random>
#include <thread>
#include <vector>

#include "s11_tma.cuh"

using gemmlab::GemmArgs;
using gemmlab::async::TmaDescriptor;

static int failures = 0, cases = 0;

// A map over a (batch, outer, inner) operand, as operand_maps describes it (outermost first there,
// innermost first here); batch_stride 0 keeps one batch (a broadcast operand: dims[2] 1).
static TmaDescriptor map_of(const float* base, long inner, long outer, long ld, long batches, long batch_stride,
                            int box_inner, int box_outer, int swizzle) {
    TmaDescriptor m;
    m.base = base;
    m.dims[0] = inner, m.dims[1] = outer, m.dims[2] = batch_stride ? batches : 1;
    m.strides[0] = 1, m.strides[1] = ld, m.strides[2] = batch_stride ? batch_stride : 0;
    m.box[0] = box_inner, m.box[1] = box_outer, m.box[2] = 1;
    m.swizzle_bytes = swizzle;
    return m;
}

// grid > 0: a persistent grid of that many blocks (PersistentTiles, grouped 3 tile rows at a time),
// each running its tiles of every batch through one ring of stages; else one block a tile.
template <class Kernel, bool A_K_MAJOR, bool B_N_MAJOR, bool A_SWIZZLE>
static void run_case(const char* name, int M, int N, int K, int batch = 1, bool b_broadcast = false, int grid = 0) {
    ++cases;
    constexpr int BM = Kernel::BLOCK_M, BN = Kernel::BLOCK_N, BK = Kernel::BLOCK_K;
    std::mt19937 rng(M * 131 + N * 17 + K + batch);
    std::uniform_int_distribution<int> small(-3, 3);
    // TMA strides are multiples of 16 bytes: leading dimensions the extent rounded up to 4 floats, plus 4
    auto ld = [](long extent) { return (extent + 3) / 4 * 4 + 4; };
    const long lda = ld(A_K_MAJOR ? K : M), ldb = ld(B_N_MAJOR ? N : K), ldd = N + 2;
    const long a_rows = A_K_MAJOR ? M : K, b_rows = B_N_MAJOR ? K : N;
    const long a_bs = a_rows * lda, b_bs = b_broadcast ? 0 : b_rows * ldb, d_bs = M * ldd;
    std::vector<float> a(size_t(batch) * a_bs), b(size_t(b_broadcast ? 1 : batch) * b_rows * ldb), d(size_t(batch) * d_bs);
    for (auto& x : a) x = float(small(rng));
    for (auto& x : b) x = float(small(rng));
    for (auto& x : d) x = float(small(rng));
    const std::vector<float> c = d;
    const TmaDescriptor a_map = A_K_MAJOR ? map_of(a.data(), K, M, lda, batch, a_bs, BK, BM, A_SWIZZLE ? 4 * BK : 0)
                                          : map_of(a.data(), M, K, lda, batch, a_bs, BM, BK, 0);
    const TmaDescriptor b_map = B_N_MAJOR ? map_of(b.data(), N, K, ldb, batch, b_bs, BN, BK, 0)
                                          : map_of(b.data(), K, N, ldb, batch, b_bs, BK, BN, 4 * BK);
    const int batch_mask = (batch > 1 ? 1 : 0) | (batch > 1 && !b_broadcast ? 2 : 0);
    std::vector<unsigned char> smem(Kernel::SMEM_BYTES + 16);
    gemmlab::async::host_shared = smem.data();
    std::barrier<> block(Kernel::THREADS);
    host_block_barrier = &block;
    host_warp_barriers.clear();
    for (int w = 0; w < Kernel::THREADS / 32; ++w) host_warp_barriers.push_back(std::make_unique<std::barrier<>>(32));
    std::vector<std::thread> threads;
    for (int t = 0; t < Kernel::THREADS; ++t)
        threads.emplace_back([&, t] {
            threadIdx.x = t;
            for (int g = 0; g < grid; ++g) {  // the persistent grid's blocks, one after another
                if (t == 0) {
                    for (auto& x : smem) x = 0xff;
                    gemmlab::async::host_mbarrier_reset();
                    blockIdx.x = g, gridDim.x = grid, blockIdx.z = 0;
                }
                block.arrive_and_wait();
                GemmArgs args{};
                args.D = d.data();
                args.C = args.D;
                args.M = M, args.N = N, args.K = K;
                args.ldd = ldd;
                args.alpha = 1.0f, args.beta = 2.0f;
                const gemmlab::PersistentTiles<BM, BN, 3> tiles(args, batch, d_bs, d_bs);
                Kernel::run_tiles(tiles, smem.data(), a_map, b_map, batch_mask);
                block.arrive_and_wait();
            }
            for (int z = 0; z < (grid ? 0 : batch); ++z)
                for (long row0 = 0; row0 < M; row0 += BM)
                    for (long col0 = 0; col0 < N; col0 += BN) {
                        if (t == 0) {
                            for (auto& x : smem) x = 0xff;  // NaN where nothing was copied
                            gemmlab::async::host_mbarrier_reset();
                            blockIdx.z = z;
                        }
                        block.arrive_and_wait();
                        GemmArgs args{};
                        args.A = a.data() + z * a_bs;
                        args.B = b.data() + z * b_bs;
                        args.D = d.data() + z * d_bs;
                        args.C = args.D;
                        args.M = M, args.N = N, args.K = K;
                        args.a_row_stride = A_K_MAJOR ? lda : 1, args.a_col_stride = A_K_MAJOR ? 1 : lda;
                        args.b_row_stride = B_N_MAJOR ? ldb : 1, args.b_col_stride = B_N_MAJOR ? 1 : ldb;
                        args.ldd = ldd;
                        args.alpha = 1.0f, args.beta = 2.0f;
                        args.k_begin = 0;
                        Kernel::run(args, row0, col0, smem.data(), a_map, b_map, batch_mask);
                        block.arrive_and_wait();  // every thread is done with the block's shared memory
                    }
        });
    for (auto& th : threads) th.join();
    int bad = 0;
    for (int z = 0; z < batch; ++z)
        for (int r = 0; r < M; ++r)
            for (int col = 0; col < ldd; ++col) {
                double want = c[z * d_bs + size_t(r) * ldd + col];
                if (col < N) {
                    double ab = 0;
                    const float* az = a.data() + z * a_bs;
                    const float* bz = b.data() + z * b_bs;
                    for (int k = 0; k < K; ++k)
                        ab += double(az[A_K_MAJOR ? r * lda + k : k * lda + r]) * bz[B_N_MAJOR ? k * ldb + col : col * ldb + k];
                    want = ab + 2.0 * want;
                }
                const float got = d[z * d_bs + size_t(r) * ldd + col];
                if (got != want && bad++ < 3)
                    std::printf("FAIL %s M=%d N=%d K=%d batch %d: D[%d][%d][%d] = %g, want %g\n", name, M, N, K, batch, z, r,
                                col, got, want);
            }
    failures += bad != 0;
}

// One tile in every layout (A K-major read swizzled or plain; B K-major transposed in shared
// memory with B_TRANSPOSE 1, read as it lands with 0), on edge shapes, K shorter and longer than
// the ring of stages, batched with B broadcast, and on persistent grids.
template <int BM, int BN, int BK, int WM, int WN, int KU, int STAGES, bool PW, bool CS, int BT = 0, bool FP = false>
static void tile(const char* name) {
    // copies landing late: only the last two shapes, whose K goes round the ring of stages at least
    // twice (the run's time under the sanitizers: every case is THREADS std::threads)
    const bool all = !gemmlab::async::host_tma_land_at_wait;
    auto shapes = [&](auto run) {
        int i = 0;
        for (auto [M, N, K] : {std::array<int, 3>{BM + 3, BN + 5, 2 * BK + 1}, {5, 7, 9}, {2 * BM, BN, STAGES * BK},
                               {2 * BM - 1, 2 * BN - 1, (2 * STAGES + 1) * BK + 7}, {BM - 5, BN + 1, 7 * BK + 3}})
            if (all || i++ >= 3) run(M, N, K);
    };
    auto layout = [&](auto akm, auto bnm, auto asw) {
        constexpr bool A = decltype(akm)::value, B = decltype(bnm)::value, AS = decltype(asw)::value;
        using Kernel = gemmlab::S11Tma<BM, BN, BK, WM, WN, KU, AS, STAGES, PW, CS, A, B, 1, 0, false, BT, FP>;
        shapes([&](int M, int N, int K) { run_case<Kernel, A, B, AS>(name, M, N, K); });
        run_case<Kernel, A, B, AS>(name, BM + 1, BN - 3, 3 * BK + 2, 3, true);
        if (all) run_case<Kernel, A, B, AS>(name, 9, BN + 2, BK + 1, 2, false);
        // persistent grids of 5 and 2 blocks over 2 x 3 tiles of 2 batches, K shorter and longer than the ring
        run_case<Kernel, A, B, AS>(name, 2 * BM - 3, 3 * BN - 1, BK + 3, 2, false, 5);
        run_case<Kernel, A, B, AS>(name, 2 * BM, 2 * BN + 7, (STAGES + 1) * BK - 5, 2, true, 2);
    };
    layout(std::true_type{}, std::true_type{}, std::false_type{});
    layout(std::true_type{}, std::true_type{}, std::true_type{});
    layout(std::true_type{}, std::false_type{}, std::true_type{});
    layout(std::false_type{}, std::true_type{}, std::false_type{});
    layout(std::false_type{}, std::false_type{}, std::false_type{});
}

static void every_tile() {
    tile<64, 64, 32, 32, 32, 2, 3, true, false>("64x64 w32x32 x3, producer warp");
    tile<64, 128, 16, 32, 64, 1, 4, true, true, 1>("64x128 w32x64 bk16 4 stages, producer warp, consumer sync, B transposed");
    tile<64, 64, 8, 32, 32, 2, 2, false, false>("64x64 w32x32 bk8 2 stages, thread 0 produces");
    tile<128, 64, 16, 32, 32, 1, 3, true, false, 0, true>("128x64 w32x32 bk16 x3, producer warpgroup, fragment prefetch");
}

int main() {
    every_tile();  // copies land when issued
    gemmlab::async::host_tma_land_at_wait = true;
    every_tile();  // copies land at the wait that needs them
    std::printf("%ld TMA boxes, %ld mbarrier waits that blocked\n", gemmlab::async::host_tma_loads,
                gemmlab::async::host_mbar_waits);
    std::printf("%d of %d cases wrong\n", failures, cases);
    return failures != 0;
}
