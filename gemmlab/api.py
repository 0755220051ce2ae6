"""gemm, matmul, gemm_batched: argument checking, layouts, streams, devices -> a cached plan.

The call path (docs/architecture.md) is dispatch -> plan cache -> launch:

1. ``_signature`` reads what decides the work of a call: shapes, strides, the pointers'
   alignment (address mod 16), devices, dtypes, the stage and config, whether alpha or beta is
   0 and whether c is out. For torch tensors this is a few attribute reads.
2. A hit in the plan cache skips every check that the signature decides (they passed when the
   plan was built); only what depends on this call's addresses is checked again (out must not
   overlap a or b, or overlap c without being c). Then the plan's slots get this call's
   pointers, alpha and beta and its kernels are launched (gemmlab/plan.py).
3. A miss runs every check (nothing is written before they all pass), chooses the kernel
   (``dispatch.choose`` for stage="auto") and builds the plan: compile (disk-cached), load,
   prebuild the parameter buffers. Under CUDA graph capture a miss may only use kernels that are
   already loaded (``plan.NotReady`` says to warm up first).
"""
from __future__ import annotations

import os
import sys
import threading
from dataclasses import dataclass, replace

from . import arrays, device as _device, env as _envmod
from .errors import ArgumentError, ArgumentTypeError, ConfigError
from .plan import Choice, Plan, build as _build_plan, kernel_for  # noqa: F401  (kernel_for: public helper)
from . import precision as _precision
from .problem import Problem, matrix_layout
from .stages import get as _get_stage

INT32_MAX = 2**31 - 1
PLAN_CACHE_SIZE = 4096
PLAN_KEYS = ("split_k", "repack", "a_transpose", "cluster_reduce", "stream_k")  # config keys the plan layer takes (not the stage's)


def matmul(a, b, out=None, *, stage="auto", config=None, stream=None, precision=None):
    """``a @ b`` like torch.mm (2-D) or torch.bmm (3-D). ``precision``: "ieee", "tf32" or
    "tf32x3" (None: the process default, gemmlab.set_precision / GEMMLAB_PRECISION)."""
    try:
        rank = len(a.shape)
    except (AttributeError, TypeError):  # e.g. only __cuda_array_interface__; else the error names a
        rank = arrays.view(a, "a").ndim
    if rank == 3:
        return _gemm(a, b, None, 1.0, 0.0, out, stage, config, stream, True, precision)
    return _gemm(a, b, None, 1.0, 0.0, out, stage, config, stream, False, precision)


def gemm(a, b, c=None, alpha=1.0, beta=0.0, out=None, *, stage="auto", config=None, stream=None,
         precision=None):
    """``out = alpha * a @ b + beta * c`` for 2-D float32 GPU arrays; returns ``out``.

    ``config`` may also hold ``split_k`` (slices of K, reduced by a second kernel), ``repack``
    (1: copy operands whose rows are not 16-byte aligned into aligned workspace first, and a
    K-major B into row-major), ``a_transpose`` (1: a row-major A into a column-major copy) and
    ``stream_k`` (1: s11's stream-K schedule, a grid the size of the GPU sharing the K iterations
    of all tiles evenly, in place of split-K; where the problem has none, as if not asked).
    ``precision``: "ieee" (FP32 FFMA), "tf32" (tensor cores, 10-bit inputs) or "tf32x3"
    (FP32-accurate tensor cores); None: the process default (gemmlab.set_precision)."""
    return _gemm(a, b, c, alpha, beta, out, stage, config, stream, False, precision)


def gemm_batched(a, b, c=None, alpha=1.0, beta=0.0, out=None, *, stage="auto", config=None, stream=None,
                 precision=None):
    """Strided batched GEMM on 3-D arrays (batch, rows, cols); a batch of 1 in a or b broadcasts."""
    return _gemm(a, b, c, alpha, beta, out, stage, config, stream, True, precision)


def product(a, b, precision=None, batched: bool = False):
    """``a @ b`` of torch tensors into a new tensor, on torch's current stream: what
    ``gemm(a, b)`` / ``gemm_batched(a, b)`` do at stage="auto", reached with a cheaper key (the
    torch operators and ``gemmlab.torch.enable()`` call this for every product without c or
    out). The first call of a signature goes through ``gemm``'s full path and remembers its
    plan-cache entry under this key; later calls read shapes, strides, dtypes, devices and the
    pointers' alignment, allocate the result and launch."""
    if precision is None:
        precision = _precision.get_precision()
    pa, pb = a.data_ptr(), b.data_ptr()
    key = (batched, a.shape, a.stride(), b.shape, b.stride(), a.dtype, b.dtype, a.get_device(), b.get_device(),
           pa & 15, pb & 15, precision)
    e = _products.get(key)
    if e is None or _stamp is not None or _env("GEMMLAB_PRINT_CONFIG"):
        out = _gemm(a, b, None, 1.0, 0.0, None, "auto", None, None, batched, precision)
        full, _ = _signature(a, b, None, None, 1.0, 0.0, "auto", None, batched, precision)
        entry = _plans.get(full) if full is not None else None
        if entry is not None and entry.kind == "torch" and _stamp is None:
            with _plans_lock:
                if len(_products) >= PLAN_CACHE_SIZE:
                    _products.clear()
                _products[key] = entry
        return out
    out = a.new_empty(e.out_shape)
    plan = e.plan
    if plan is None:
        return out
    ptrs = {"a": pa, "b": pb, "c": None, "out": out.data_ptr()}
    stream_h = _current_stream("torch", e.device, a)
    if plan.ws_floats:
        ptrs["ws"] = _workspace(e, plan.ws_floats, stream_h, a, False).data_ptr()
    plan.run(ptrs, 1.0, 0.0, stream_h)
    return out


# ---- the plan cache --------------------------------------------------------------------------

@dataclass
class _Entry:
    """A cached call signature: its plan (None when there is nothing to compute) and what the
    per-call work needs: the output to allocate, the overlap spans, whether beta is used."""

    plan: Plan | None
    kind: str
    device: int
    out_shape: tuple
    spans: dict              # source -> (first byte, one past the last) relative to its pointer
    check_c_overlap: bool    # c given and not out itself
    beta_used: bool          # False: no c, beta has nothing to scale


_plans: dict = {}
_products: dict = {}   # product()'s key -> the same _Entry as in _plans
_plans_lock = threading.Lock()
_stamp = None
_torch_tensor = None


def clear_plan_cache() -> None:
    """Drop every cached plan and the kept workspaces."""
    with _plans_lock:
        _plans.clear()
        _products.clear()
        kept = list(_workspaces.values())
        _workspaces.clear()
    for ws in kept:
        ws.free()


def plan_cache_info() -> dict:
    with _plans_lock:
        return {"entries": len(_plans), "capacity": PLAN_CACHE_SIZE}


def _dev_check() -> None:
    """GEMMLAB_DEV: an edited kernel header drops every plan (the compile key then sees the edit)."""
    global _stamp
    from .jit.compiler import kernel_dir_stamp

    stamp = kernel_dir_stamp()
    if stamp != _stamp:
        _stamp = stamp
        clear_plan_cache()


def _is_tensor(x) -> bool:
    global _torch_tensor
    if _torch_tensor is not None:
        return isinstance(x, _torch_tensor)
    if arrays._is_torch(x):
        import torch

        _torch_tensor = torch.Tensor
        return True
    return False


def _arg_sig(x):
    """(what of one array decides the plan, its pointer); (None, None) for an absent argument."""
    if x is None:
        return None, None
    if _is_tensor(x):
        p = x.data_ptr()
        return ("torch", x.shape, x.stride(), x.get_device(), x.dtype, p & 15), p
    v = arrays.view(x, "?")
    return (v.kind, v.shape, v.strides, v.device, v.ptr & 15, v.readonly), v.ptr


def _signature(a, b, c, out, alpha, beta, stage, config, batched, precision=None):
    """(plan-cache key, {source: pointer}); the key is None when something is too odd to key
    (the full checks then say what is wrong)."""
    try:
        ka, pa = _arg_sig(a)
        kb, pb = _arg_sig(b)
        kc, pc = _arg_sig(c)
        ko, po = _arg_sig(out)
        cfg = None if config is None else tuple(sorted(config.items()))
        c_is_out = c is not None and out is not None and (c is out or (pc == po and kc == ko))
        key = (batched, ka, kb, kc, ko, c_is_out, alpha == 0.0, beta == 0.0, stage, cfg, precision)
        hash(key)
    except Exception:
        return None, None
    return key, {"a": pa, "b": pb, "c": pc, "out": po}


def _gemm(a, b, c, alpha, beta, out, stage, config, stream, batched, precision=None):
    try:
        alpha, beta = float(alpha), float(beta)
    except (TypeError, ValueError):
        raise ArgumentTypeError(f"alpha, beta: numbers expected, got {alpha!r}, {beta!r}") from None
    if _stamp is not None or _env("GEMMLAB_DEV"):
        _dev_check()
    entry, ptrs = _lookup(a, b, c, alpha, beta, out, stage, config, stream, batched, precision)
    return _execute(entry, a, out, ptrs, alpha, beta, stream)


def _lookup(a, b, c, alpha, beta, out, stage, config, stream, batched, precision=None):
    """(cache entry, {source: pointer}) for this call: a plan-cache hit, else every check and a
    new plan (remembered when the call can be keyed). For stage="auto" a precision of None is
    resolved here (the process default can change between calls); an explicit stage with no
    precision runs at its own."""
    if precision is not None:
        _precision.check(precision)
    elif stage in (None, "auto"):
        precision = _precision.get_precision()
    key, ptrs = _signature(a, b, c, out, alpha, beta, stage, config, batched, precision)
    entry = _plans.get(key) if key is not None else None  # a dict read: safe without the lock
    if entry is None:
        entry = _build_entry(a, b, c, alpha, beta, out, stage, config, stream, batched, precision)
        if key is not None:
            _remember(key, entry)
    if ptrs is None:
        ptrs = {"a": _ptr(a), "b": _ptr(b), "c": _ptr(c) if c is not None else None,
                "out": _ptr(out) if out is not None else None}
    return entry, ptrs


def _stream_of(e: "_Entry", stream, like) -> int:
    return arrays.stream_handle(stream) if stream is not None else _current_stream(e.kind, e.device, like)


def _remember(key, entry) -> None:
    with _plans_lock:
        if len(_plans) >= PLAN_CACHE_SIZE:  # a full cache starts over (plans are cheap to rebuild)
            _plans.clear()
            _products.clear()
        _plans[key] = entry


def _ptr(x) -> int:
    if _is_tensor(x):
        return x.data_ptr()
    return arrays.view(x, "?").ptr


def _execute(e: _Entry, a, out, ptrs, alpha, beta, stream):
    if out is None:
        out = _allocate(e.kind, e.out_shape, e.device, a)
        ptrs["out"] = _ptr(out)
    else:
        po = ptrs["out"]
        o0, o1 = po + e.spans["out"][0], po + e.spans["out"][1]
        for name in ("a", "b", "c") if e.check_c_overlap else ("a", "b"):
            lo, hi = ptrs[name] + e.spans[name][0], ptrs[name] + e.spans[name][1]
            if o0 < hi and lo < o1:
                if name == "c":
                    raise ArgumentError("out overlaps c without being c; pass out=c (in place) or separate memory")
                raise ArgumentError(f"out overlaps {name}; gemmlab never writes over its inputs, pass another out")
    plan = e.plan
    if plan is None:
        return out
    stream_h = _stream_of(e, stream, a)
    ws = None
    if plan.ws_floats:
        ws = _workspace(e, plan.ws_floats, stream_h, a, stream is not None)
        ptrs["ws"] = ws.data_ptr() if e.kind == "torch" else _ptr(ws)  # a tensor, or kept DeviceMemory
    if _env("GEMMLAB_PRINT_CONFIG") and _print_config():
        print(plan.summary, file=sys.stderr)
    plan.run(ptrs, alpha, beta if e.beta_used else 0.0, stream_h)
    if ws is not None and stream is not None and e.kind == "torch":
        _record_stream(ws, stream_h, e.device)
    return out


_ENV_KEYS = {name: _envmod.key(name) for name in ("GEMMLAB_DEV", "GEMMLAB_PRINT_CONFIG")}


def _env(name: str) -> bool:
    """Whether ``name`` is set, at a dict lookup's cost (this runs on every call)."""
    return _envmod.is_set(_ENV_KEYS[name])


def _print_config() -> bool:
    return bool(os.environ.get("GEMMLAB_PRINT_CONFIG"))


# A workspace of up to WORKSPACE_KEEP_FLOATS floats (split-K partial sums, repacked operands) of
# a call on torch's current stream is kept per (device, stream) and reused by the next call on
# that stream (calls with stream= allocate, as before): work on one stream runs
# in order, so a call's kernels never overlap the previous call's use of it, and the caller
# skips an allocation (3.5 us of host time through torch on the H200's host). Not under CUDA
# graph capture (a graph keeps the address it captured, and may be replayed on another stream
# while eager calls use the buffer): there, and for larger workspaces, every call allocates.
# A kept workspace is gemmlab's own driver memory (jit/memory.py), not a torch tensor: torch
# routes a thread's allocations into a CUDA-graph pool while torch.compile's graph trees warm up,
# and a tensor kept from there is a pool allocation no graph accounts for, which they refuse.
# 16M floats (64 MB): stream-K's partial slots at 128x256 on 132 SMs take 8.65M.
WORKSPACE_KEEP_FLOATS = 16 << 20
_workspaces: dict = {}
_capturing = None


def _workspace(e: "_Entry", floats: int, stream_h: int, like, explicit_stream: bool):
    global _capturing
    if e.kind != "torch" or explicit_stream or floats > WORKSPACE_KEEP_FLOATS:
        return _allocate(e.kind, (floats,), e.device, like)
    if _capturing is None:
        import torch

        _capturing = getattr(torch._C, "_cuda_isCurrentStreamCapturing", None) or torch.cuda.is_current_stream_capturing
    if _capturing():
        return _allocate(e.kind, (floats,), e.device, like)
    key = (e.device, stream_h)
    ws = _workspaces.get(key)
    if ws is None or ws.numel() < floats:
        from .jit.memory import DeviceMemory

        grown = DeviceMemory(e.device, max(floats, 1 << 16))
        with _plans_lock:
            ws, _workspaces[key] = _workspaces.get(key), grown
        if ws is not None:
            ws.free()  # waits for the kernels that may still read it
        ws = grown
    return ws


def _allocate(kind, shape, dev, like):
    if kind == "torch":
        return like.new_empty(shape)
    return arrays.empty_like_kind(arrays.view(like, "a"), shape, dev)


_raw_stream = None


def _current_stream(kind, dev, like) -> int:
    global _raw_stream
    if kind == "torch":
        if _raw_stream is None:
            import torch

            _raw_stream = getattr(torch._C, "_cuda_getCurrentRawStream", None) or (
                lambda d: torch.cuda.current_stream(d).cuda_stream)
        return int(_raw_stream(dev))
    return arrays.current_stream(arrays.view(like, "a"), dev)


def _record_stream(t, stream_h, dev) -> None:
    """A workspace used on a stream that is not torch's current one: tell the caching allocator."""
    import torch

    if int(torch.cuda.current_stream(dev).cuda_stream) != int(stream_h):
        t.record_stream(torch.cuda.ExternalStream(int(stream_h), device=dev))


# ---- a miss: every check, then the plan ------------------------------------------------------

def _as3(v: arrays.View, arg: str, batched: bool):
    want = 3 if batched else 2
    if v.ndim != want:
        fn = "gemm_batched" if batched else "gemm"
        raise ArgumentError(f"{arg}: rank {v.ndim} (shape {v.shape}); {fn} takes {want}-D arrays")
    if batched:
        return v.shape, v.strides
    return (1,) + v.shape, (0,) + v.strides


def _split_config(config):
    """(the stage's config, the plan layer's keys) from a caller's config."""
    if not config:
        return config, {}
    if not isinstance(config, dict):
        raise ConfigError(f"config: {config!r} is not a dict of KEY: integer")
    stage_cfg = {k: v for k, v in config.items() if k not in PLAN_KEYS}
    plan_cfg = {}
    for k in PLAN_KEYS:
        if k in config:
            try:
                v = int(config[k])
            except (TypeError, ValueError):
                raise ConfigError(f"config {k}={config[k]!r} is not an integer") from None
            if k == "split_k" and not 1 <= v <= 65535:
                raise ConfigError(f"config split_k={v}: slices of K, 1..65535")
            if k in ("repack", "a_transpose", "cluster_reduce", "stream_k") and v not in (0, 1):
                raise ConfigError(f"config {k}={v} must be 0 or 1")
            plan_cfg[k] = v
    return stage_cfg, plan_cfg


def _resolve_stage(stage, config, precision=None):
    """(spec, config, plan keys) for an explicit stage, or (None, None, plan keys) for auto. An
    explicit stage with an explicit precision it does not compute at is an error."""
    stage_cfg, plan_cfg = _split_config(config)
    if stage in (None, "auto"):
        return None, stage_cfg, plan_cfg
    if not isinstance(stage, str):
        raise ConfigError(f"stage: {stage!r} is not a stage id; use one of gemmlab.stages() or 'auto'")
    spec = _get_stage(stage)
    if precision is not None and spec.precision != precision:
        raise _precision.PrecisionError(
            f"stage={spec.id!r} computes at precision {spec.precision!r}, not precision={precision!r}; "
            f"drop one of them (stage='auto' picks a stage of the precision asked for)")
    return spec, spec.config(stage_cfg), plan_cfg


def _overlaps(x: arrays.View, y: arrays.View) -> bool:
    x0, x1 = x.span_bytes()
    y0, y1 = y.span_bytes()
    return x0 < y1 and y0 < x1


def _same(x: arrays.View, y: arrays.View) -> bool:
    return x.ptr == y.ptr and x.shape == y.shape and x.strides == y.strides


def _rel_span(v: arrays.View) -> tuple[int, int]:
    lo, hi = v.span_bytes()
    return lo - v.ptr, hi - v.ptr


def _build_entry(a, b, c, alpha, beta, out, stage, config, stream, batched, precision=None) -> _Entry:
    va, vb = arrays.view(a, "a"), arrays.view(b, "b")
    (ba, M, K), sa = _as3(va, "a", batched)
    (bb, K2, N), sb = _as3(vb, "b", batched)
    if K != K2:
        raise ArgumentError(f"shape mismatch: a is {M}x{K} but b is {K2}x{N} (a's columns must equal b's rows)")
    if ba != bb and 1 not in (ba, bb):
        raise ArgumentError(f"shape mismatch: a has batch {ba}, b has batch {bb} (equal, or one of them 1)")
    batch = max(ba, bb)
    want = (batch, M, N) if batched else (M, N)
    vc = None
    if c is not None:
        vc = arrays.view(c, "c")
        if vc.shape != want:
            raise ArgumentError(f"c: shape {vc.shape}, expected {want}")
    vo = None
    if out is not None:
        vo = arrays.view(out, "out")
        if vo.shape != want:
            raise ArgumentError(f"out: shape {vo.shape}, expected {want}")
        if vo.readonly:
            raise ArgumentError("out: read-only array")

    spec, cfg, plan_cfg = _resolve_stage(stage, config, precision)

    # out must not overlap a or b; out may be c exactly (in place) but not partly.
    if vo is not None:
        for name, v in (("a", va), ("b", vb)):
            if _overlaps(vo, v):
                raise ArgumentError(f"out overlaps {name}; gemmlab never writes over its inputs, pass another out")
        if vc is not None and _overlaps(vo, vc) and not _same(vo, vc):
            raise ArgumentError("out overlaps c without being c; pass out=c (in place) or separate memory")
        if batch > 1:
            (_, _, _), so = _as3(vo, "out", batched)
            per = 4 * (max(so[1] * (M - 1), 0) + max(so[2] * (N - 1), 0) + 1)
            if abs(so[0]) * 4 < per:
                raise ArgumentError("out: its batches overlap each other (batch stride too small)")
        _, so = _as3(vo, "out", batched)
        if matrix_layout((M, N), so[1:]) is None:
            raise ArgumentError(f"out: strides {vo.strides} are neither row- nor column-major; "
                                "pass a row- or column-major out (a leading dimension wider than the row is fine)")
    if vo is None and va.kind == "cai":
        arrays.empty_like_kind(va, want, 0)  # raises: generic arrays need out=

    # One device for everything (the first check that may ask the driver: after the others).
    views = [("a", va), ("b", vb)] + ([("c", vc)] if vc else []) + ([("out", vo)] if vo else [])
    devs = {}
    for name, v in views:
        d = v.device
        if d is None and v.ptr:
            d = arrays.pointer_device(v.ptr)
        devs[name] = d
    known = {d for d in devs.values() if d is not None}
    if len(known) > 1:
        raise ArgumentError("mixed devices: " + ", ".join(f"{n} on cuda:{d}" for n, d in devs.items()) +
                            "; move them to one GPU")
    dev = known.pop() if known else 0

    spans = {"a": _rel_span(va), "b": _rel_span(vb)}
    if vc is not None:
        spans["c"] = _rel_span(vc)
    if vo is not None:
        spans["out"] = _rel_span(vo)
    c_is_out = vc is not None and vo is not None and _same(vo, vc)
    entry = _Entry(None, va.kind, dev, want, spans, vc is not None and not c_is_out, vc is not None)
    if M == 0 or N == 0 or batch == 0:
        return entry
    if stream is not None:
        arrays.stream_handle(stream)  # a stream= that is not a stream: an argument error, before the GPU

    # The GPU from here on.
    arch = _device.arch(dev)
    if spec is not None and _device.cc_number(arch) < spec.min_cc:
        raise ConfigError(f"stage {spec.id} needs compute capability {spec.min_cc / 10:.1f}; device {dev} is {arch}")
    if vo is None:  # the output gemmlab allocates: row-major, contiguous, 256-byte aligned
        out_ptr, out_strides = 0, (M * N if batched else 0, N, 1)
    else:
        _, out_strides = _as3(vo, "out", batched)
        out_ptr = vo.ptr
    stream_h = arrays.stream_handle(stream) if stream is not None else _current_stream(va.kind, dev, a)
    from .jit import launch as _launch

    capturing = _launch.stream_capturing(stream_h)

    c_strides = None  # a c that is not the output: the epilogue reads it where it lies
    if vc is not None and beta != 0.0 and not c_is_out:
        _, c_strides = _as3(vc, "c", batched)

    # The kernel-level problem (gemmlab/problem.py): a column-major out is computed as
    # out^T = b^T a^T, which is row-major (``swapped``: the problem's A is b, its B is a).
    prob, swapped = Problem.of_call(M, N, K, batch, va.ptr, sa, ba, vb.ptr, sb, bb, out_ptr, out_strides,
                                    alpha=alpha, beta=beta if vc is not None else 0.0, c_strides=c_strides)
    refs = {"a": ("b" if swapped else "a", 0), "b": ("a" if swapped else "b", 0), "d": ("out", 0)}
    if prob.separate_c:
        refs["c"] = ("c", 0)
    allow_ws = va.kind != "cai"  # a workspace is allocated with the arrays' framework
    if spec is None:
        from . import dispatch

        choice = dispatch.choose(prob, dev, allow_workspace=allow_ws, config=cfg or None,
                                 precision=precision or "ieee")
    else:
        choice = Choice(spec, cfg, source="explicit")
    if plan_cfg:
        choice = replace(choice, split_k=plan_cfg.get("split_k", choice.split_k),
                         repack=bool(plan_cfg.get("repack", choice.repack)),
                         a_transpose=bool(plan_cfg.get("a_transpose", choice.a_transpose)),
                         cluster_reduce=(bool(plan_cfg["cluster_reduce"]) if "cluster_reduce" in plan_cfg
                                         else choice.cluster_reduce),
                         stream_k=bool(plan_cfg.get("stream_k", choice.stream_k)))
        if not allow_ws and (choice.split_k > 1 or choice.repack or choice.a_transpose or choice.stream_k):
            raise ConfigError("split_k, repack, a_transpose and stream_k need a workspace, which gemmlab allocates "
                              "with torch or CuPy; these arrays are neither")
    entry.plan = _build_plan(choice, prob, refs, dev, capturing=capturing)
    return entry


# ---- for the benchmark: the same plan, bound to fixed arrays -----------------------------------

def prepare(a, b, c=None, alpha=1.0, beta=0.0, out=None, *, stage="auto", config=None, stream=None,
            batched=False, precision=None):
    """The plan a call would run, and a no-argument callable that enqueues exactly that work on
    these arrays (the workspace, if any, is allocated once and kept by the callable). The
    benchmark times the callable, so the kernels it measures are the ones gemm() runs."""
    alpha, beta = float(alpha), float(beta)
    if out is None:
        raise ArgumentError("prepare: pass out= (the callable writes into it every time)")
    entry, ptrs = _lookup(a, b, c, alpha, beta, out, stage, config, stream, batched, precision)
    plan = entry.plan
    if plan is None:
        return None, (lambda: None)
    ws = None
    if plan.ws_floats:
        ws = _allocate(entry.kind, (plan.ws_floats,), entry.device, a)
        ptrs["ws"] = _ptr(ws)
    stream_h = _stream_of(entry, stream, a)
    enqueue = plan.bind(ptrs, alpha, beta if entry.beta_used else 0.0, stream_h)

    def launch():
        enqueue()
        return ws  # keeps the workspace alive as long as the callable

    return plan, launch
