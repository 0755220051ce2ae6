// tests/host/ptx/tma.cuh — stands in for gemmlab/kernels/ptx/tma.cuh on the CPU. A tensor map is
// the host's description of what cuTensorMapEncodeTiled is given (gemmlab/stages/s11_tma.py
// operand_maps): a float32 tensor of 3 dimensions, innermost first, its strides in elements, a box
// and a swizzle. tma_load_3d copies the box at (c0, c1, c2) into shared memory, innermost
// dimension fastest, writing zeros where the box hangs off the tensor, and completes the whole
// box's bytes on the barrier (as the TMA unit does, overhang included). Swizzled boxes (32, 64 or
// 128 bytes) move each 16-byte chunk as the hardware's SWIZZLE_xB modes do: bits [4, 4+b) of the
// shared byte offset XOR bits [7, 7+b), b = 1, 2, 3 (the buffers are 1024-byte aligned, so
// offsets and addresses agree). The copy lands when issued (a stage a consumer still reads shows
// the overwrite), or, with host_tma_land_at_wait set, when a wait on its barrier would block (a
// stage read before its full barrier's wait holds the poison or an older tile).
// What the hardware refuses, the stand-in refuses too (it stops the run, saying why): a base
// address or a stride that is not a multiple of 16 bytes (the driver's encode fails), and a box
// whose first element is not 16-byte aligned, which the H100 measured faulting with an illegal
// instruction (scripts/tma_start_probe.py, results/h100/logs/tma-start-probe.txt: dim-0 starts 1,
// 2 and 3 floats past a 16-byte boundary fault, 0 and 4 load). A design that moves a box's start
// off 16 bytes (the row groups of docs/stages/s10-s11.md) then fails here, on the CPU.
#pragma once
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ptx/mbarrier.cuh"
#include "ptx/smem.cuh"

namespace gemmlab {
namespace async {

struct TmaDescriptor {
    const float* base = nullptr;
    long dims[3] = {1, 1, 1};     // innermost first
    long strides[3] = {1, 1, 1};  // elements; strides[0] is 1
    int box[3] = {1, 1, 1};
    int swizzle_bytes = 0;        // 0, 32, 64 or 128
};

inline long host_tma_loads = 0;
inline bool host_tma_land_at_wait = false;  // the harness's choice, run by run

inline void prefetch_descriptor(const TmaDescriptor*) {}

inline void host_tma_land(unsigned dst, TmaDescriptor map, int c0, int c1, int c2) {
    const int bits = map.swizzle_bytes == 128 ? 3 : map.swizzle_bytes == 64 ? 2 : map.swizzle_bytes == 32 ? 1 : 0;
    const unsigned mask = (1u << bits) - 1u;
    unsigned off = 0;
    for (int z = 0; z < map.box[2]; ++z)
        for (int y = 0; y < map.box[1]; ++y)
            for (int x = 0; x < map.box[0]; ++x, off += 4) {
                const long i = c0 + x, j = c1 + y, k = c2 + z;
                float v = 0.0f;
                if (i >= 0 && j >= 0 && k >= 0 && i < map.dims[0] && j < map.dims[1] && k < map.dims[2])
                    v = map.base[i * map.strides[0] + j * map.strides[1] + k * map.strides[2]];
                const unsigned at = off ^ (((off >> 7) & mask) << 4);
                std::memcpy(host_shared + dst + at, &v, 4);
            }
}

// The rules above; 0 when the copy is one the hardware makes.
inline const char* host_tma_refusal(const TmaDescriptor& map, int c0, int c1, int c2) {
    if (reinterpret_cast<std::uintptr_t>(map.base) % 16) return "base address not 16-byte aligned";
    if (map.strides[1] % 4 || map.strides[2] % 4) return "a stride not a multiple of 16 bytes";
    const long first = long(c0) * map.strides[0] + long(c1) * map.strides[1] + long(c2) * map.strides[2];
    if (((first % 4) + 4) % 4) return "box start not 16-byte aligned (the hardware faults: illegal instruction)";
    return nullptr;
}

inline void tma_load_3d(unsigned dst, const TmaDescriptor* map, unsigned bar, int c0, int c1, int c2) {
    if (const char* why = host_tma_refusal(*map, c0, c1, c2)) {
        std::fprintf(stderr, "cp.async.bulk.tensor at (%d, %d, %d): %s\n", c0, c1, c2, why);
        std::abort();
    }
    const long bytes = 4L * map->box[0] * map->box[1] * map->box[2];
    std::lock_guard<std::mutex> lock(host_mbar_mutex);
    ++host_tma_loads;
    HostMbarrier& b = host_mbar(bar);
    const TmaDescriptor m = *map;
    if (host_tma_land_at_wait) {
        b.queued.push_back([=] {
            host_tma_land(dst, m, c0, c1, c2);
            host_mbar_complete_tx(host_mbar(bar), bytes);
        });
        host_mbar_cv.notify_all();  // a thread already waiting on bar lands it
    } else {
        host_tma_land(dst, m, c0, c1, c2);
        host_mbar_complete_tx(b, bytes);
    }
}

}  // namespace async
}  // namespace gemmlab
