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
#pragma once
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

inline void tma_load_3d(unsigned dst, const TmaDescriptor* map, unsigned bar, int c0, int c1, int c2) {
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
