// gemmlab/kernels/ptx/tma.cuh — Hopper Tensor Memory Accelerator bulk tensor copies (sm_90).
// NVRTC has no cuda.h, so the 128-byte tensor map type is declared here.
#pragma once

namespace gemmlab {
namespace async {

// ---- TMA (sm_90) -----------------------------------------------------------------------------
// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned. Passed as a
// `const __grid_constant__` kernel parameter so the TMA unit reads it from parameter space.
struct alignas(64) TmaDescriptor {
    unsigned long long opaque[16];
};

__device__ __forceinline__ void prefetch_descriptor(const TmaDescriptor* map) {
    asm volatile("prefetch.tensormap [%0];\n" ::"l"(reinterpret_cast<unsigned long long>(map)) : "memory");
}

// One box of a 3-D tensor map (c0 innermost) into shared memory at dst; completes tx bytes on bar.
// Parts of the box outside the tensor are written as zeros.
__device__ __forceinline__ void tma_load_3d(unsigned dst, const TmaDescriptor* map, unsigned bar, int c0, int c1,
                                            int c2) {
    asm volatile(
        "cp.async.bulk.tensor.3d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
        " [%0], [%1, {%2, %3, %4}], [%5];\n" ::"r"(dst),
        "l"(reinterpret_cast<unsigned long long>(map)), "r"(c0), "r"(c1), "r"(c2), "r"(bar)
        : "memory");
}

}  // namespace async
}  // namespace gemmlab
