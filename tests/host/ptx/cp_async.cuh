// tests/host/ptx/cp_async.cuh — stands in for gemmlab/kernels/ptx/cp_async.cuh on the CPU. A copy
// reads its source when it is issued (src_bytes from src, zeros after them, up to the copy's size)
// and lands in shared memory either at once (the default: a copy into a stage that another thread
// still reads then shows, what the block's barriers must prevent) or, with host_cp_async_land_at_wait
// set (the harness's choice, run by run), as late as the PTX allows: a thread's copies join its open group,
// commit_group closes it, and wait_group<N> lands the thread's oldest committed groups until N are
// left, so a stage read before the wait and barrier that cover it holds what was there before
// (the poison, or an older tile).
#pragma once
#include <cstring>
#include <deque>
#include <vector>

#include "ptx/smem.cuh"

namespace gemmlab {
namespace async {

inline bool host_cp_async_land_at_wait = false;
struct HostPendingCopy {
    unsigned dst;
    int size;
    unsigned char bytes[16];
};
// This thread's groups, oldest first; the last one is open (not yet committed).
inline thread_local std::deque<std::vector<HostPendingCopy>> host_groups(1);

inline void host_copy(unsigned dst, const void* src, int src_bytes, int size) {
    if (!host_cp_async_land_at_wait) {
        std::memcpy(host_shared + dst, src, src_bytes);
        std::memset(host_shared + dst + src_bytes, 0, size - src_bytes);
        return;
    }
    HostPendingCopy c{dst, size, {}};
    std::memcpy(c.bytes, src, src_bytes);
    std::memset(c.bytes + src_bytes, 0, size - src_bytes);
    host_groups.back().push_back(c);
}
inline void commit_group() {
    if (host_cp_async_land_at_wait) host_groups.emplace_back();
}
template <int PENDING>
inline void wait_group() {
    while (host_cp_async_land_at_wait && host_groups.size() - 1 > static_cast<size_t>(PENDING)) {
        for (const HostPendingCopy& c : host_groups.front()) std::memcpy(host_shared + c.dst, c.bytes, c.size);
        host_groups.pop_front();
    }
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

}  // namespace async
}  // namespace gemmlab
