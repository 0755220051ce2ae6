// gemmlab/kernels/ptx/smem.cuh — the shared-memory address space: generic pointer -> 32-bit shared address
// (what every PTX instruction on shared memory takes).
#pragma once

namespace gemmlab {
namespace async {

__device__ __forceinline__ unsigned smem_address(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}

}  // namespace async
}  // namespace gemmlab
