"""Load cubins into a device's context (cuda.core) and launch them on a caller's stream with
one cuda.bindings ``cuLaunchKernel`` (the plans of gemmlab/plan.py, and :func:`launch` for one-off
micro-kernels)."""
from __future__ import annotations

import ctypes
import threading

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


# ---- the fast path: one driver call per launch ----------------------------------------------
#
# A call of gemmlab.gemm that hits the plan cache (gemmlab/plan.py) costs: fill the pointer and
# scalar slots of prebuilt parameter buffers, then cuLaunchKernel (cuda.bindings). The driver reads
# the parameters' sizes from the kernel image, so a buffer is just an array of pointers to the
# values. Nothing here allocates device memory, synchronizes or compiles: it is safe under CUDA
# graph capture.

_libcuda = None


def libcuda():
    """The driver library with the few entry points the fast path uses (argtypes set once)."""
    global _libcuda
    if _libcuda is None:
        lib = ctypes.CDLL("libcuda.so.1")
        vp, u32, u64 = ctypes.c_void_p, ctypes.c_uint, ctypes.c_uint64
        lib.cuLaunchKernel.argtypes = [vp, u32, u32, u32, u32, u32, u32, u32, vp, vp, vp]
        lib.cuLaunchKernel.restype = ctypes.c_int
        lib.cuCtxGetCurrent.argtypes = [ctypes.POINTER(vp)]
        lib.cuCtxGetCurrent.restype = ctypes.c_int
        lib.cuCtxSetCurrent.argtypes = [vp]
        lib.cuCtxSetCurrent.restype = ctypes.c_int
        lib.cuStreamIsCapturing.argtypes = [vp, ctypes.POINTER(ctypes.c_int)]
        lib.cuStreamIsCapturing.restype = ctypes.c_int
        lib.cuTensorMapEncodeTiled.argtypes = [vp, ctypes.c_int, u32, vp, ctypes.POINTER(u64), ctypes.POINTER(u64),
                                               ctypes.POINTER(u32), ctypes.POINTER(u32), ctypes.c_int, ctypes.c_int,
                                               ctypes.c_int, ctypes.c_int]
        lib.cuTensorMapEncodeTiled.restype = ctypes.c_int
        _libcuda = lib
    return _libcuda


def check_result(err: int, what: str) -> None:
    if err:
        from cuda.bindings import driver

        try:
            name = driver.CUresult(err).name
        except ValueError:
            name = str(err)
        raise RuntimeError(f"gemmlab: {what} failed: {name}")


def current_context() -> int:
    ctx = ctypes.c_void_p()
    check_result(libcuda().cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
    return ctx.value or 0


def stream_capturing(stream: int) -> bool:
    """Whether ``stream`` is being captured into a CUDA graph (the legacy stream 0 never is)."""
    status = ctypes.c_int(0)
    check_result(libcuda().cuStreamIsCapturing(ctypes.c_void_p(stream or None), ctypes.byref(status)),
           "cuStreamIsCapturing")
    return status.value != 0


_functions: dict = {}


def function(ck: CompiledKernel, device_id: int, smem: int) -> tuple[int, int]:
    """(CUfunction, CUcontext) of ``ck`` in ``device_id``'s primary context, loaded once, with its
    dynamic shared-memory limit raised to ``smem``."""
    key = (ck.key, device_id)
    hit = _functions.get(key)
    if hit is not None and hit[2] >= smem:
        return hit[0], hit[1]
    from cuda.bindings import driver

    kernel, _ = load(ck, device_id)
    _raise_dynamic_smem(kernel, device_id, smem, key)  # the CUkernel's limit: cuda.core's occupancy queries
    ctx = current_context()
    h = kernel.handle
    if isinstance(h, driver.CUkernel):
        err, fn = driver.cuKernelGetFunction(h)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"gemmlab: cuKernelGetFunction({ck.name}) failed: {err}")
    else:
        fn = h
    if smem > _MAX_STATIC_DYNAMIC:  # and the CUfunction's: what cuLaunchKernel launches
        attr = driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES
        (err,) = driver.cuFuncSetAttribute(fn, attr, smem)
        if err != driver.CUresult.CUDA_SUCCESS:
            raise RuntimeError(f"gemmlab: could not allow {smem} bytes of dynamic shared memory: {err}")
    fn_int = int(fn)
    with _lock:
        _functions[key] = (fn_int, ctx, max(smem, hit[2] if hit else 0))
    return fn_int, ctx


def is_loaded(ck_key: str, device_id: int) -> bool:
    return (ck_key, device_id) in _functions


class ParamBuffer:
    """Host storage for one launch's kernel parameters and the void*[] the driver reads.

    ``kinds`` per parameter: "ptr" (u64), "i64", "f32", "i32", or an object with an ``addr``
    (a stages.tensor_map.TensorMapDescriptor: its own 128-byte storage)."""

    _CT = {"ptr": ctypes.c_uint64, "i64": ctypes.c_int64, "f32": ctypes.c_float, "i32": ctypes.c_int32}

    def __init__(self, kinds, values):
        self.values = []
        addrs = []
        for kind, v in zip(kinds, values):
            if not isinstance(kind, str):
                self.values.append(kind)
                addrs.append(kind.addr)
            else:
                c = self._CT[kind](v)
                self.values.append(c)
                addrs.append(ctypes.addressof(c))
        self.array = (ctypes.c_void_p * max(len(addrs), 1))(*addrs)
        self.address = ctypes.addressof(self.array)


_cu_launch = None
_cu_launch_ex = None
_SUCCESS = None
_fn_objects: dict = {}      # CUfunction handle (int) -> driver.CUfunction
_stream_objects: dict = {}  # CUstream handle (int) -> driver.CUstream (a wrapper of the int: no lifetime)


def _bind_driver():
    global _cu_launch, _cu_launch_ex, _SUCCESS
    from cuda.bindings import driver

    _SUCCESS = driver.CUresult.CUDA_SUCCESS
    _cu_launch = driver.cuLaunchKernel
    _cu_launch_ex = driver.cuLaunchKernelEx


def _objects(fn: int, stream: int):
    """The cached CUfunction / CUstream wrappers of ``fn`` / ``stream`` (made on first use; every
    launch asks, so a hit is two dict lookups and nothing more)."""
    f = _fn_objects.get(fn)
    s = _stream_objects.get(stream)
    if f is not None and s is not None:
        return f, s
    from cuda.bindings import driver

    if f is None:
        f = _fn_objects[fn] = driver.CUfunction(fn)
    if s is None:
        if len(_stream_objects) > 1024:
            _stream_objects.clear()
        s = _stream_objects[stream] = driver.CUstream(stream)
    return f, s


def launch_raw(fn: int, ctx: int, grid, block: int, smem: int, stream: int, params: ParamBuffer) -> None:
    """cuLaunchKernel through cuda.bindings, with the function and stream wrappers cached (on
    the H200's host an empty kernel's launch takes 4.4 us this way against 7.1 us through ctypes
    with its 11 argument conversions: scripts/launch_cost.py). The calling thread normally has
    the kernel's context current already (the framework that made the arrays set it); when it
    has not (another device's context, or a new thread with none), the launch is refused, so ours
    is made current for one retry and the caller's context is restored after it."""
    if _cu_launch is None:
        _bind_driver()
    f = _fn_objects.get(fn)
    s = _stream_objects.get(stream)
    if f is None or s is None:
        f, s = _objects(fn, stream)
    err = _cu_launch(f, grid[0], grid[1], grid[2], block, 1, 1, smem, s, params.address, 0)[0]
    if err != _SUCCESS:
        _retry_in_context(err, ctx, "cuLaunchKernel",
                          lambda: _cu_launch(f, grid[0], grid[1], grid[2], block, 1, 1, smem, s, params.address, 0)[0])


def _retry_in_context(err, ctx: int, what: str, again) -> None:
    """A refused launch: if the calling thread's current context is not the kernel's ``ctx``,
    make it current for one more try (``again()`` -> its error) and restore the caller's."""
    lib = _libcuda or libcuda()
    prev = ctypes.c_void_p()
    lib.cuCtxGetCurrent(ctypes.byref(prev))
    if (prev.value or 0) == ctx:
        check_result(int(err), what)
    check_result(lib.cuCtxSetCurrent(ctypes.c_void_p(ctx)), "cuCtxSetCurrent")
    try:
        err = again()
    finally:
        if prev.value:
            lib.cuCtxSetCurrent(prev)
    check_result(int(err), what)


class DependentLaunch:
    """One kernel's launch with the PROGRAMMATIC_STREAM_SERIALIZATION attribute (cuLaunchKernelEx):
    the grid may be launched before the previous kernel in the stream has finished, as that
    kernel's blocks exit (kernels/ptx/grid_dependency.cuh; the kernel itself waits for the previous
    one's results before touching memory). Only for kernels compiled for sm_90 or later, which all
    call grid_dependency_wait() first. The config object is built once and reused; only its stream
    changes."""

    __slots__ = ("config", "stream", "attrs")

    def __init__(self, grid, block: int, smem: int):
        from cuda.bindings import driver

        attr = driver.CUlaunchAttribute()
        attr.id = driver.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION
        attr.value.programmaticStreamSerializationAllowed = 1
        cfg = driver.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = (int(g) for g in grid)
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = int(block), 1, 1
        cfg.sharedMemBytes = int(smem)
        cfg.attrs = [attr]
        cfg.numAttrs = 1
        self.config, self.stream, self.attrs = cfg, None, [attr]

    def launch(self, fn: int, ctx: int, stream: int, params: "ParamBuffer") -> None:
        """As :func:`launch_raw`, with the attribute."""
        if _cu_launch_ex is None:
            _bind_driver()
        f, s = _objects(fn, stream)
        if self.stream is not s:
            self.config.hStream = s
            self.stream = s
        err = _cu_launch_ex(self.config, f, params.address, 0)[0]
        if err != _SUCCESS:
            _retry_in_context(err, ctx, "cuLaunchKernelEx", lambda: _cu_launch_ex(self.config, f, params.address, 0)[0])


_NUMPY_KINDS = {"uint64": "ptr", "int64": "i64", "float32": "f32", "int32": "i32"}


def kind_of(value) -> str:
    """The ParamBuffer kind of a numpy-typed kernel argument (np.uint64 pointers, np.int64,
    np.float32, np.int32)."""
    kind = _NUMPY_KINDS.get(getattr(getattr(value, "dtype", None), "name", None))
    if kind is None:
        raise TypeError(f"kernel argument {value!r}: pass np.uint64 (pointer), np.int64, np.float32 or np.int32")
    return kind


def launch(ck: CompiledKernel, device_id: int, stream_handle: int, grid, block, smem: int, args) -> None:
    """Launch ``ck`` once with numpy-typed ``args`` (the same ctypes path as the plans; used by
    tools that launch their own micro-kernels, e.g. the bank probe)."""
    fn, ctx = function(ck, device_id, int(smem))
    kinds = [kind_of(a) for a in args]
    params = ParamBuffer(kinds, [float(a) if k == "f32" else int(a) for k, a in zip(kinds, args)])
    launch_raw(fn, ctx, tuple(int(g) for g in grid), int(block), int(smem), int(stream_handle), params)

