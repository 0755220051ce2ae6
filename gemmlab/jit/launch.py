"""Load cubins into a device's context and launch them on a caller's stream (cuda.core)."""
from __future__ import annotations

import threading
from dataclasses import dataclass

from .compiler import CompiledKernel

_loaded: dict[tuple[str, int], object] = {}
_smem_set: dict[tuple[str, int], int] = {}
_lock = threading.Lock()
_MAX_STATIC_DYNAMIC = 48 * 1024


def load(ck: CompiledKernel, device_id: int):
    """cuda.core Kernel for ``ck`` on device ``device_id`` (loaded once per process and device)."""
    key = (ck.key, device_id)
    with _lock:
        k = _loaded.get(key)
    if k is not None:
        return k
    from cuda.core import Device, ObjectCode

    Device(device_id).set_current()
    obj = ObjectCode.from_cubin(ck.cubin, name=ck.name)
    k = obj.get_kernel(ck.name)
    with _lock:
        _loaded[key] = (k, obj)  # keep the module alive with the kernel
    return _loaded[key]


def _raise_dynamic_smem(kernel, device_id: int, nbytes: int, key) -> None:
    if nbytes <= _MAX_STATIC_DYNAMIC or _smem_set.get(key, 0) >= nbytes:
        return
    from cuda.bindings import driver

    attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
    h = kernel.handle
    if isinstance(h, driver.CUkernel):
        err, dev = driver.cuDeviceGet(device_id)
        (err,) = driver.cuKernelSetAttribute(attr, nbytes, h, dev)
    else:
        (err,) = driver.cuFuncSetAttribute(h, attr, nbytes)
    if err != driver.CUresult.CUDA_SUCCESS:
        raise RuntimeError(f"could not allow {nbytes} bytes of dynamic shared memory: {err}")
    _smem_set[key] = nbytes


def stream_object(handle: int):
    from cuda.core import Stream

    return Stream.from_handle(int(handle))


@dataclass
class Launch:
    """One kernel launch, fully resolved: what ``gemmlab.gemm`` enqueues and the benchmark repeats.
    ``args`` are already converted (pointers as np.uint64, int64 as np.int64, float as np.float32)."""

    ck: CompiledKernel
    device: int
    stream: int
    grid: tuple
    block: int
    smem: int
    args: list

    def bind(self):
        """A no-argument callable that enqueues this launch; the kernel is loaded, its shared-memory
        limit raised and the launch config built once, so repeating it costs only the launch."""
        from cuda.core import LaunchConfig, launch as cc_launch

        kernel, _ = load(self.ck, self.device)
        _raise_dynamic_smem(kernel, self.device, self.smem, (self.ck.key, self.device))
        cfg = LaunchConfig(grid=tuple(int(g) for g in self.grid), block=int(self.block), shmem_size=int(self.smem))
        stream, args = stream_object(self.stream), tuple(self.args)

        def enqueue():
            cc_launch(stream, cfg, kernel, *args)

        return enqueue


def launch(ck: CompiledKernel, device_id: int, stream_handle: int, grid, block, smem: int, args) -> None:
    """Launch once (see :class:`Launch`)."""
    Launch(ck, device_id, stream_handle, tuple(grid), int(block), int(smem), list(args)).bind()()
