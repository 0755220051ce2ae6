"""Device memory of gemmlab's own, from the driver, for the workspaces the API keeps between calls
(gemmlab/api.py ``_workspace``).

Why not a tensor of the caller's framework: torch's caching allocator can route every
allocation of a thread into a CUDA-graph pool without any capture under way (torch.compile's
CUDA-graph trees do so while they warm a graph up, mode="reduce-overhead"). A workspace tensor
kept from such a call stays a live allocation of that pool that no graph output accounts for,
and the trees then refuse to record ("tensor(s) in the cudagraph pool not tracked as outputs").
Memory from cuMemAlloc belongs to no framework pool, so nothing can route it anywhere.

Allocating and freeing happen rarely (a kept workspace only grows, up to the API's limit), so
this module uses cuda.bindings and makes the device's primary context current around each call
(pushed and popped: the caller's current context is left as it was)."""
from __future__ import annotations

import threading

from .launch import check_result

_primary: dict[int, object] = {}
_lock = threading.Lock()


def _check(err, what: str) -> None:
    check_result(int(err), what)


def _in_primary_context(device_id: int, fn):
    from cuda.bindings import driver

    with _lock:
        ctx = _primary.get(device_id)
        if ctx is None:
            err, dev = driver.cuDeviceGet(device_id)
            _check(err, "cuDeviceGet")
            err, ctx = driver.cuDevicePrimaryCtxRetain(dev)  # kept for the process's life
            _check(err, "cuDevicePrimaryCtxRetain")
            _primary[device_id] = ctx
    (err,) = driver.cuCtxPushCurrent(ctx)
    _check(err, "cuCtxPushCurrent")
    try:
        return fn(driver)
    finally:
        driver.cuCtxPopCurrent()


class DeviceMemory:
    """``floats`` float32 of device memory on ``device_id``. ``data_ptr()`` and ``numel()`` as a
    tensor has them; ``free()`` waits for the device's work (a kernel enqueued on any stream may
    still be reading it) and returns the memory. Never freed by the garbage collector: at
    interpreter exit the driver may be gone, and the process's end returns the memory anyway."""

    __slots__ = ("device_id", "floats", "_ptr")

    def __init__(self, device_id: int, floats: int):
        if floats <= 0:
            raise ValueError(f"DeviceMemory: floats must be positive, got {floats}")

        def alloc(driver):
            err, ptr = driver.cuMemAlloc(4 * floats)
            _check(err, f"cuMemAlloc of {4 * floats} bytes")
            return int(ptr)

        self.device_id, self.floats = device_id, floats
        self._ptr = _in_primary_context(device_id, alloc)

    def data_ptr(self) -> int:
        return self._ptr

    def numel(self) -> int:
        return self.floats

    def free(self) -> None:
        if not self._ptr:
            return
        ptr, self._ptr = self._ptr, 0

        def release(driver):
            (err,) = driver.cuCtxSynchronize()
            _check(err, "cuCtxSynchronize")
            (err,) = driver.cuMemFree(ptr)
            _check(err, "cuMemFree")

        _in_primary_context(self.device_id, release)


__all__ = ["DeviceMemory"]
