// tests/host/tma_rules_host.cpp — the TMA stand-in (tests/host/ptx/tma.cuh) refuses what the
// hardware refuses. One 8x32 box of a 64x64 float32 tensor, as argv[1] says: "ok" (dim-0 start 4:
// lands, its values checked), "start1" / "start2" / "start3" (dim-0 start that many floats past a
// 16-byte boundary: the H100 faults, results/h100/logs/tma-start-probe.txt), "row" (a box row
// start off 16 bytes through the second coordinate: a row stride of 65 floats, which the driver's
// encode refuses), "base" (a base 4 bytes off 16). A refused copy stops the run with the reason.
#include "cuda_host.h"

#include <cstdio>
#include <cstring>
#include <vector>

#include "ptx/tma.cuh"

int main(int argc, char** argv) {
    using gemmlab::async::TmaDescriptor;
    const char* what = argc > 1 ? argv[1] : "ok";
    alignas(16) static float data[64 * 68 + 4];
    for (int i = 0; i < 64 * 68 + 4; ++i) data[i] = float(i);
    std::vector<unsigned char> smem(4096 + 64);
    gemmlab::async::host_shared = smem.data();
    TmaDescriptor m;
    m.base = std::strcmp(what, "base") ? data : data + 1;
    m.dims[0] = 64, m.dims[1] = 64, m.dims[2] = 1;
    m.strides[0] = 1, m.strides[1] = std::strcmp(what, "row") ? 68 : 65, m.strides[2] = 0;
    m.box[0] = 32, m.box[1] = 8, m.box[2] = 1;
    const int c0 = !std::strcmp(what, "start1") ? 1 : !std::strcmp(what, "start2") ? 2 : !std::strcmp(what, "start3") ? 3 : 4;
    const unsigned bar = 4096;
    gemmlab::async::mbarrier_init(bar, 1);
    gemmlab::async::mbarrier_arrive_expect_tx(bar, 32 * 8 * 4);
    gemmlab::async::tma_load_3d(0, &m, bar, c0, !std::strcmp(what, "row") ? 1 : 2, 0);
    gemmlab::async::mbarrier_wait(bar, 0);
    int bad = 0;
    for (int y = 0; y < 8; ++y)
        for (int x = 0; x < 32; ++x) {
            float v;
            std::memcpy(&v, smem.data() + 4 * (y * 32 + x), 4);
            bad += v != data[(2 + y) * 68 + c0 + x];
        }
    std::printf("box landed, %d of 256 values wrong\n", bad);
    return bad != 0;
}
