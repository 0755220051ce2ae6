"""gemm, matmul, gemm_batched: argument checking, layout detection, stream/device handling, launch.

Every check runs before anything is written: a bad call raises and leaves ``out`` untouched.
"""
from __future__ import annotations

import math
import os
import sys
from dataclasses import replace

import numpy as np

from . import arrays, device as _device
from .stages import get as _get_stage
from .errors import ConfigError
from .jit import compile_cubin, launch as _launch
from .jit.source import COMMON_PARAMS, generate
from .stages.base import Problem

INT32_MAX = 2**31 - 1


def matmul(a, b, out=None, *, stage="auto", config=None, stream=None):
    """``a @ b`` like torch.mm (2-D) or torch.bmm (3-D)."""
    if getattr(a, "ndim", None) == 3 or (hasattr(a, "shape") and len(a.shape) == 3):
        return gemm_batched(a, b, out=out, stage=stage, config=config, stream=stream)
    return gemm(a, b, out=out, stage=stage, config=config, stream=stream)


def gemm(a, b, c=None, alpha=1.0, beta=0.0, out=None, *, stage="auto", config=None, stream=None):
    """``out = alpha * a @ b + beta * c`` for 2-D float32 GPU arrays; returns ``out``."""
    return _gemm(a, b, c, alpha, beta, out, stage, config, stream, batched=False)


def gemm_batched(a, b, c=None, alpha=1.0, beta=0.0, out=None, *, stage="auto", config=None, stream=None):
    """Strided batched GEMM on 3-D arrays (batch, rows, cols); a batch of 1 in a or b broadcasts."""
    return _gemm(a, b, c, alpha, beta, out, stage, config, stream, batched=True)


# ---------------------------------------------------------------------------------------------

def _as3(v: arrays.View, arg: str, batched: bool):
    want = 3 if batched else 2
    if v.ndim != want:
        fn = "gemm_batched" if batched else "gemm"
        raise ValueError(f"{arg}: rank {v.ndim} (shape {v.shape}); {fn} takes {want}-D arrays")
    if batched:
        return v.shape, v.strides
    return (1,) + v.shape, (0,) + v.strides


def _layout(shape2, strides2):
    """'row' (unit column stride), 'col' (unit row stride) or None, for a rows x cols matrix."""
    rows, cols = shape2
    rs, cs = strides2
    if cols <= 1 or cs == 1:
        if rows <= 1 or rs >= max(cols, 1):
            return "row"
    if rows <= 1 or rs == 1:
        if cols <= 1 or cs >= max(rows, 1):
            return "col"
    return None


def _gemm(a, b, c, alpha, beta, out, stage, config, stream, batched):
    va, vb = arrays.view(a, "a"), arrays.view(b, "b")
    (ba, M, K), sa = _as3(va, "a", batched)
    (bb, K2, N), sb = _as3(vb, "b", batched)
    if K != K2:
        raise ValueError(f"shape mismatch: a is {M}x{K} but b is {K2}x{N} (a's columns must equal b's rows)")
    if ba != bb and 1 not in (ba, bb):
        raise ValueError(f"shape mismatch: a has batch {ba}, b has batch {bb} (equal, or one of them 1)")
    batch = max(ba, bb)
    want = (batch, M, N) if batched else (M, N)
    vc = None
    if c is not None:
        vc = arrays.view(c, "c")
        if vc.shape != want:
            raise ValueError(f"c: shape {vc.shape}, expected {want}")
    vo = None
    if out is not None:
        vo = arrays.view(out, "out")
        if vo.shape != want:
            raise ValueError(f"out: shape {vo.shape}, expected {want}")
        if vo.readonly:
            raise ValueError("out: read-only array")
    try:
        alpha, beta = float(alpha), float(beta)
    except (TypeError, ValueError):
        raise TypeError(f"alpha, beta: numbers expected, got {alpha!r}, {beta!r}") from None

    # One device for everything.
    views = [("a", va), ("b", vb)] + ([("c", vc)] if vc else []) + ([("out", vo)] if vo else [])
    devs = {}
    for name, v in views:
        d = v.device
        if d is None and v.ptr:
            d = arrays.pointer_device(v.ptr)
        devs[name] = d
    known = {d for d in devs.values() if d is not None}
    if len(known) > 1:
        raise ValueError("mixed devices: " + ", ".join(f"{n} on cuda:{d}" for n, d in devs.items()) +
                         "; move them to one GPU")
    dev = known.pop() if known else 0

    spec, cfg = _resolve_stage(stage, config, M, N, K, batch)

    # out must not overlap a or b; out may be c exactly (in place) but not partly.
    if vo is not None:
        for name, v in (("a", va), ("b", vb)):
            if _overlaps(vo, v):
                raise ValueError(f"out overlaps {name}; gemmlab never writes over its inputs, pass another out")
        if vc is not None and _overlaps(vo, vc) and not _same(vo, vc):
            raise ValueError("out overlaps c without being c; pass out=c (in place) or separate memory")
        if batch > 1:
            (_, _, _), so = _as3(vo, "out", batched)
            per = 4 * (max(so[1] * (M - 1), 0) + max(so[2] * (N - 1), 0) + 1)
            if abs(so[0]) * 4 < per:
                raise ValueError("out: its batches overlap each other (batch stride too small)")
    if vo is not None:
        _, so = _as3(vo, "out", batched)
        if _layout((M, N), so[1:]) is None:
            raise ValueError(f"out: strides {vo.strides} are neither row- nor column-major; "
                             "pass a row- or column-major out (a leading dimension wider than the row is fine)")

    # Nothing has been written yet. Allocate the output if needed.
    if vo is None:
        out = arrays.empty_like_kind(va, want, dev)
        vo = arrays.view(out, "out")
    if M == 0 or N == 0 or batch == 0:
        return out
    stream_h = arrays.stream_handle(stream) if stream is not None else arrays.current_stream(va, dev)
    arch = _device.arch(dev)
    if _device.cc_number(arch) < spec.min_cc:
        raise ConfigError(f"stage {spec.id} needs compute capability {spec.min_cc / 10:.1f}; "
                          f"device {dev} is {arch}")

    _, so = _as3(vo, "out", batched)
    keep = []  # temporaries that must live until the kernels are enqueued
    # c into out first (any layout to any layout), unless it is out or beta == 0 (never read).
    if vc is not None and beta != 0.0 and not _same(vo, vc):
        _, sc = _as3(vc, "c", batched)
        _copy(dev, stream_h, vc.ptr, vo.ptr, M, N, batch, sc, so)
    elif vc is None and beta != 0.0:
        beta = 0.0  # no c: beta has nothing to scale

    # Column-major out: compute out^T = b^T a^T, which is row-major.
    a_bs = sa[0] if ba > 1 else 0
    b_bs = sb[0] if bb > 1 else 0
    if _layout((M, N), so[1:]) == "row":
        m, n, ldd = M, N, so[1]
        pa, a_rs, a_cs, pb, b_rs, b_cs = va.ptr, sa[1], sa[2], vb.ptr, sb[1], sb[2]
    else:
        m, n, ldd = N, M, so[2]
        pa, a_rs, a_cs, pb, b_rs, b_cs = vb.ptr, sb[2], sb[1], va.ptr, sa[2], sa[1]
        a_bs, b_bs = b_bs, a_bs
    if m == 1:
        ldd = -(-n // 4) * 4  # one row: the leading dimension is never used; keep it aligned
    prob = Problem(M=m, N=n, K=K if alpha != 0.0 else 0, a_rs=a_rs, a_cs=a_cs, b_rs=b_rs, b_cs=b_cs,
                   ldd=ldd, batch=batch, a_bs=a_bs, b_bs=b_bs, d_bs=so[0] if batch > 1 else 0,
                   a_ptr=pa, b_ptr=pb, d_ptr=vo.ptr, alpha=alpha, beta=beta)
    # Unusual strides (neither dimension unit): make a contiguous copy so fast paths apply.
    prob, keep = _contiguous_operands(prob, va, dev, stream_h, spec)
    run_problem(spec, cfg, prob, dev, stream_h)
    del keep
    return out


def _resolve_stage(stage, config, M, N, K, batch):
    if stage in (None, "auto"):
        from .dispatch import choose

        spec, cfg = choose(M, N, K, batch, config)
        return spec, cfg
    if not isinstance(stage, str):
        raise ConfigError(f"stage: {stage!r} is not a stage id; use one of gemmlab.stages() or 'auto'")
    spec = _get_stage(stage)
    return spec, spec.config(config)


def _overlaps(x: arrays.View, y: arrays.View) -> bool:
    x0, x1 = x.span_bytes()
    y0, y1 = y.span_bytes()
    return x0 < y1 and y0 < x1


def _same(x: arrays.View, y: arrays.View) -> bool:
    return x.ptr == y.ptr and x.shape == y.shape and x.strides == y.strides


def _contiguous_operands(prob: Problem, va, dev, stream_h, spec):
    keep = []
    if not spec.aligned_path:
        return prob, keep  # scalar stages read any strides directly
    changes = {}
    for which in ("a", "b"):
        rs, cs = getattr(prob, f"{which}_rs"), getattr(prob, f"{which}_cs")
        if rs == 1 or cs == 1:
            continue
        rows, cols = (prob.M, prob.K) if which == "a" else (prob.K, prob.N)
        bs = getattr(prob, f"{which}_bs")
        nb = prob.batch if bs else 1
        try:
            tmp = arrays.empty_like_kind(va, (nb, rows, cols), dev)
        except Exception:
            continue  # cannot allocate with this framework: the scalar path reads it as it is
        keep.append(tmp)
        tv = arrays.view(tmp, "tmp")
        _copy(dev, stream_h, getattr(prob, f"{which}_ptr"), tv.ptr, rows, cols, nb, (bs, rs, cs), tv.strides)
        changes.update({f"{which}_ptr": tv.ptr, f"{which}_rs": cols, f"{which}_cs": 1,
                        f"{which}_bs": rows * cols if bs else 0})
    return (replace(prob, **changes) if changes else prob), keep


def kernel_for(spec, cfg, variant, arch):
    name, src = generate(spec, cfg, variant)
    return compile_cubin(src, name, spec.compile_arch(cfg, arch))


def plan_problem(spec, cfg, prob: Problem, dev: int, stream_h: int, *, variant=None) -> _launch.Launch:
    """Compile (cached) what runs ``prob`` with ``spec`` at ``cfg`` (or the stage it falls back to)
    and return the resolved launch, without enqueuing it."""
    other = spec.fallback(cfg, prob) if variant is None else None
    if other is not None:
        return plan_problem(other[0], other[1], prob, dev, stream_h)
    spec.check_problem(cfg, prob)
    variant = spec.variant(cfg, prob) if variant is None else variant
    ck = kernel_for(spec, cfg, variant, _device.arch(dev))
    grid = spec.grid(cfg, prob)
    if grid[0] > INT32_MAX:
        raise ConfigError(f"stage {spec.id}: {grid[0]} blocks exceed the grid limit; use a larger tile")
    if os.environ.get("GEMMLAB_PRINT_CONFIG"):
        print(f"gemmlab: {prob.M}x{prob.N}x{prob.K} batch {prob.batch} -> {spec.id} {cfg} {variant} "
              f"kernel {ck.name} grid {grid}", file=sys.stderr)
    args = [np.uint64(prob.a_ptr), np.uint64(prob.b_ptr), np.uint64(prob.d_ptr)]
    args += [np.int64(getattr(prob, f)) for f in COMMON_PARAMS]
    args += [np.float32(prob.alpha), np.float32(prob.beta)]
    args += [np.int64(prob.batch), np.int64(prob.a_bs), np.int64(prob.b_bs), np.int64(prob.d_bs)]
    args += spec.extra_args(cfg, variant, prob)
    return _launch.Launch(ck, dev, stream_h, tuple(grid), spec.threads(cfg), spec.smem_bytes(cfg, variant), args)


def run_problem(spec, cfg, prob: Problem, dev: int, stream_h: int, *, variant=None):
    """Compile (cached) and launch ``spec`` at ``cfg`` on ``prob``; returns the CompiledKernel that ran."""
    plan = plan_problem(spec, cfg, prob, dev, stream_h, variant=variant)
    plan.bind()()
    return plan.ck


_COPY_SRC = '#include "common.cuh"\n'


def _copy(dev, stream_h, src, dst, rows, cols, batch, s_src, s_dst):
    ck = compile_cubin(_COPY_SRC, "gemmlab_copy", _device.arch(dev))
    total = rows * cols * batch
    blocks = max(1, min(math.ceil(total / 256), 132 * 16))
    args = [np.uint64(src), np.uint64(dst)] + [np.int64(x) for x in (rows, cols, batch, *s_src, *s_dst)]
    _launch.launch(ck, dev, stream_h, (blocks, 1, 1), 256, 0, args)
