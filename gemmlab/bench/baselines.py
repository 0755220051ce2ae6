"""Baselines measured in the same process and run as the stages.

- ``cublas``: cuBLAS SGEMM through ``torch.mm`` with TF32 off (the new ``fp32_precision = "ieee"``
  switch where torch has it, ``allow_tf32 = False`` and ``set_float32_matmul_precision("highest")``).
- ``cupy``: cuBLAS through ``cupy.matmul``; CuPy uses TF32 only when ``CUPY_TF32`` is set to
  non-zero, so a non-zero value is removed from the environment before CuPy is imported.
- ``triton``: gemmlab/bench/triton_gemm.py, ``tl.dot(..., input_precision="ieee")``.

Strided-batched problems (3-D operands): cuBLAS through ``torch.bmm`` (``torch.baddbmm`` for the
alpha/beta check) on the same batch-strided tensors, which torch hands to cuBLAS's strided-batched
GEMM as they are (transposed matrices included, no copies); CuPy through ``cupy.matmul`` on 3-D
views of them. The Triton kernel is 2-D: on a batched problem its row is recorded as skipped,
with the reason, not run.

A baseline whose library is missing is reported as skipped, with the reason. TF32 cannot slip
through unnoticed: every candidate is checked against float64 first, and TF32's ~1e-3 relative
error is a hundred times the tolerance.
"""
from __future__ import annotations

import os
import sys
import warnings

from .candidates import Candidate, Operands, Prepared, check_callable

NAMES = ("cublas", "cublas_tf32", "cupy", "triton", "triton_tf32x3")


class Unavailable(Exception):
    """A baseline that cannot run here (library not installed); the message says why."""


def disable_tf32() -> dict:
    """Turn TF32 off for torch's float32 matmuls; return the settings as read back."""
    import torch

    # All three switches say the same thing (no TF32), so torch never sees the legacy and the
    # new API disagree (it raises when they do).
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            torch.set_float32_matmul_precision("highest")
        except Exception:
            pass
        try:
            torch.backends.cuda.matmul.allow_tf32 = False
        except Exception:
            pass
        try:  # the new switch (torch >= 2.9); older torch refuses the unknown name
            torch.backends.cuda.matmul.fp32_precision = "ieee"
        except Exception:
            pass
        got = {}
        for key, read in (("fp32_precision", lambda: torch.backends.cuda.matmul.fp32_precision),
                          ("allow_tf32", lambda: torch.backends.cuda.matmul.allow_tf32),
                          ("float32_matmul_precision", torch.get_float32_matmul_precision)):
            try:
                got[key] = read()
            except Exception:
                pass
    return got


def cuda_kernel_names(fn) -> list[str]:
    """Names of the CUDA kernels ``fn()`` launches, longest first (torch profiler; [] if it fails).

    The ladder calls this only after every candidate is timed, so the profiler (CUPTI) is never
    active, or freshly torn down, while anything is being timed."""
    try:
        import torch
        from torch.profiler import ProfilerActivity, profile

        torch.cuda.synchronize()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                fn()
                torch.cuda.synchronize()
        found = {}
        for e in prof.events():
            if not str(getattr(e, "device_type", "")).endswith("CUDA"):
                continue
            try:
                t = e.time_range.elapsed_us()
            except Exception:
                t = getattr(e, "device_time_total", 0) or 0
            found[e.name] = found.get(e.name, 0) + t
        return [n for n, _ in sorted(found.items(), key=lambda kv: -kv[1]) if not n.startswith("Memset")]
    except Exception:
        return []


# ---- cuBLAS through torch -------------------------------------------------------------------

class TorchCublas(Candidate):
    def __init__(self, kernel_names: bool = True):
        super().__init__(id="cublas", name="cuBLAS (torch.mm)", kind="baseline",
                         adds="cuBLAS SGEMM, TF32 off", notes="")
        self.kernel_names = kernel_names
        self.settings = disable_tf32()

    def _wrap(self, fn):
        """The math mode around each call: none here (TF32 is off for the whole run)."""
        return fn

    def check(self, M, N, K, layout, batch: int = 1):
        import torch

        def run(a, b, c, alpha, beta, out):
            if a.dim() == 3:
                torch.baddbmm(c, a, b, beta=beta, alpha=alpha, out=out)
            else:
                torch.addmm(c, a, b, beta=beta, alpha=alpha, out=out)
        return check_callable(self._wrap(run), M, N, K, layout, self.precision, batch)

    def prepare(self, ops: Operands) -> Prepared:
        import torch

        a, b, out = ops.a, ops.b, ops.out
        mm = torch.bmm if ops.batched else torch.mm  # bmm: cuBLAS strided-batched, the same tensors
        launch = self._wrap(lambda: mm(a, b, out=out))
        launch()
        return Prepared(launch, None, {"tf32_settings": self.settings},
                        probe=launch if self.kernel_names else None)


class TorchCublasTf32(TorchCublas):
    """cuBLAS with TF32 on (torch.mm with fp32_precision "tf32", else allow_tf32), switched on
    around its own calls only, so every other row keeps TF32 off."""

    def __init__(self, kernel_names: bool = True):
        Candidate.__init__(self, id="cublas_tf32", name="cuBLAS TF32 (torch.mm)", kind="baseline",
                           adds="cuBLAS with TF32 tensor cores", notes="", precision="tf32")
        self.kernel_names = kernel_names
        self.settings = None  # the switch as read back while on (first call)

    def _wrap(self, fn):
        import torch

        def run(*args):
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                try:
                    torch.backends.cuda.matmul.fp32_precision = "tf32"
                    switch = "fp32_precision"
                except Exception:  # torch before the fp32_precision switch
                    torch.backends.cuda.matmul.allow_tf32 = True
                    switch = "allow_tf32"
                if self.settings is None:
                    self.settings = {switch: getattr(torch.backends.cuda.matmul, switch)}
                try:
                    return fn(*args)
                finally:
                    disable_tf32()
        return run


# ---- cuBLAS through CuPy --------------------------------------------------------------------

def _import_cupy():
    if "cupy" not in sys.modules and os.environ.get("CUPY_TF32", "0") not in ("", "0"):
        print(f"gemmlab: CUPY_TF32={os.environ['CUPY_TF32']} would let CuPy use TF32; unsetting it "
              "for this run", file=sys.stderr, flush=True)
        del os.environ["CUPY_TF32"]
    try:
        import cupy
    except Exception as e:  # not installed, or no matching CUDA
        raise Unavailable(f"CuPy is not importable ({type(e).__name__}: {e})") from None
    return cupy


class CupyCublas(Candidate):
    def __init__(self, kernel_names: bool = True):
        super().__init__(id="cupy", name="cuBLAS (cupy.matmul)", kind="baseline",
                         adds="cuBLAS SGEMM through CuPy, TF32 off", notes="")
        self.cupy = _import_cupy()
        self.kernel_names = kernel_names

    def _stream(self, device):
        import torch

        h = int(torch.cuda.current_stream(device).cuda_stream)
        cp = self.cupy
        return cp.cuda.Stream.null if h == 0 else cp.cuda.ExternalStream(h)

    def _view(self, t):
        cp = self.cupy
        try:
            return cp.from_dlpack(t)
        except Exception:
            return cp.asarray(t)

    def check(self, M, N, K, layout, batch: int = 1):
        cp = self.cupy

        def run(a, b, c, alpha, beta, out):
            # cupy.matmul has no alpha/beta: the GEMM writes out, the epilogue is torch's.
            # 3-D views: cupy.matmul's batched path (cuBLAS strided-batched).
            dev = a.device.index or 0
            with cp.cuda.Device(dev), self._stream(dev):
                cp.matmul(self._view(a), self._view(b), out=self._view(out))
            out.mul_(alpha).add_(c, alpha=beta)
        return check_callable(run, M, N, K, layout, batch=batch)

    def prepare(self, ops: Operands) -> Prepared:
        cp = self.cupy
        device = cp.cuda.Device(ops.device)
        stream = self._stream(ops.device)
        a, b, out = self._view(ops.a), self._view(ops.b), self._view(ops.out)
        if out.data.ptr != ops.out.data_ptr():
            raise RuntimeError("cupy: the output view does not share memory with the torch tensor")

        def launch():
            with device, stream:
                cp.matmul(a, b, out=out)
        launch()
        return Prepared(launch, None, {"cupy_tf32_env": os.environ.get("CUPY_TF32")},
                        probe=launch if self.kernel_names else None)


# ---- Triton ---------------------------------------------------------------------------------

class TritonGemm(Candidate):
    def __init__(self, kernel_names: bool = True, input_precision: str = "ieee"):
        try:
            from . import triton_gemm
        except Exception as e:
            raise Unavailable(f"Triton is not importable ({type(e).__name__}: {e})") from None
        ident = "triton" if input_precision == "ieee" else f"triton_{input_precision}"
        super().__init__(id=ident, name=f"Triton ({input_precision})", kind="baseline",
                         adds=f'tl.dot(input_precision="{input_precision}"), autotuned tiles', notes="",
                         precision=input_precision)
        self.tg = triton_gemm
        self.input_precision = input_precision

    BATCHED_REASON = "the Triton baseline (gemmlab/bench/triton_gemm.py) runs 2-D problems only, not strided-batched ones"

    def unsupported(self, ops) -> str | None:
        return self.BATCHED_REASON if ops.batched else None

    def check(self, M, N, K, layout, batch: int = 1):
        if batch > 1:
            raise ValueError(self.BATCHED_REASON)

        def run(a, b, c, alpha, beta, out):
            self.tg.gemm(a, b, out, c, alpha, beta, self.input_precision)
        return check_callable(run, M, N, K, layout, self.precision)

    def prepare(self, ops: Operands) -> Prepared:
        if ops.batched:
            raise ValueError(self.BATCHED_REASON)
        tg = self.tg
        a, b, out = ops.a, ops.b, ops.out
        # The first call autotunes on the timed operands (beta = 0: rerunning rewrites the same
        # output), then launches the best config; later calls only look the config up.
        compiled = tg.gemm(a, b, out, input_precision=self.input_precision)

        def launch():
            tg.gemm(a, b, out, input_precision=self.input_precision)
        info = triton_kernel_info(compiled, ops.device)
        cfg = tg.best_config()
        self.config = _config_dict(getattr(tg._gemm_kernel, "best_config", None))
        name = getattr(compiled, "name", None) or "triton_gemm"
        return Prepared(launch, f"{name} [{cfg}]" if cfg else name, info)


def _config_dict(cfg):
    if cfg is None:
        return None
    return {**{k.lower(): v for k, v in cfg.kwargs.items()}, "num_warps": cfg.num_warps,
            "num_stages": cfg.num_stages}


def triton_kernel_info(compiled, device: int) -> dict:
    info = {"registers": None, "smem_bytes": None, "threads": None, "blocks_per_sm": None}
    if compiled is None:
        return info
    md = getattr(compiled, "metadata", None)
    try:
        info["threads"] = int(md.num_warps) * 32
    except Exception:
        pass
    try:
        info["smem_bytes"] = int(md.shared)
        info["smem_dynamic_bytes"] = int(md.shared)
    except Exception:
        pass
    try:
        if getattr(compiled, "n_regs", None) is None and hasattr(compiled, "_init_handles"):
            compiled._init_handles()
        info["registers"] = int(compiled.n_regs)
        info["spills"] = int(compiled.n_spills)
    except Exception:
        pass
    try:
        from cuda.bindings import driver

        err, n = driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(
            driver.CUfunction(int(compiled.function)), info["threads"], info["smem_bytes"] or 0)
        if err == driver.CUresult.CUDA_SUCCESS:
            info["blocks_per_sm"] = int(n)
    except Exception:
        pass
    return info


def make(name: str, kernel_names: bool = True) -> Candidate:
    """The baseline called ``name``; raises Unavailable where its library is missing."""
    if name == "cublas":
        return TorchCublas(kernel_names)
    if name == "cublas_tf32":
        return TorchCublasTf32(kernel_names)
    if name == "cupy":
        return CupyCublas(kernel_names)
    if name == "triton":
        return TritonGemm(kernel_names)
    if name == "triton_tf32x3":
        return TritonGemm(kernel_names, "tf32x3")
    raise ValueError(f"unknown baseline {name!r}; baselines are {', '.join(NAMES)} (or none)")
