// tests/host/ptx/cp_async.cuh — stands in for gemmlab/kernels/ptx/cp_async.cuh on the CPU: a copy
// lands when it is issued (src_bytes from src, zeros after them, up to the copy's size), so every
// wait is already satisfied; what the block's barriers order is what the kernel orders.
#pragma once
#include <cstring>

#include "ptx/smem.cuh"

namespace gemmlab {
namespace async {

inline void host_copy(unsigned dst, const void* src, int src_bytes, int size) {
    std::memcpy(host_shared + dst, src, src_bytes);
    std::memset(host_shared + dst + src_bytes, 0, size - src_bytes);
}
inline void copy_16(unsigned dst, const void* src, int src_bytes) { host_copy(dst, src, src_bytes, 16); }
inline void copy_4(unsigned dst, const void* src, int src_bytes) { host_copy(dst, src, src_bytes, 4); }
inline unsigned long long l2_evict_first_policy() { return 0; }
inline unsigned long long l2_evict_normal_policy() { return 0; }
inline void copy_16(unsigned dst, const void* src, int src_bytes, unsigned long long) { copy_16(dst, src, src_bytes); }
inline void copy_4(unsigned dst, const void* src, int src_bytes, unsigned long long) { copy_4(dst, src, src_bytes); }
template <int PREFETCH>
inline void copy_16_prefetch(unsigned dst, const void* src, int src_bytes, unsigned long long) {
    copy_16(dst, src, src_bytes);
}
inline void commit_group() {}
template <int PENDING>
inline void wait_group() {}

}  // namespace async
}  // namespace gemmlab
