// tests/host/ptx/smem.cuh — stands in for gemmlab/kernels/ptx/smem.cuh on the CPU: the running
// block's shared memory is host_shared, and a shared address is the offset into it.
#pragma once

namespace gemmlab {
namespace async {

inline unsigned char* host_shared = nullptr;

inline unsigned smem_address(const void* p) {
    return static_cast<unsigned>(static_cast<const unsigned char*>(p) - host_shared);
}

}  // namespace async
}  // namespace gemmlab
