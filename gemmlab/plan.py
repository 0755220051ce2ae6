"""Plans: everything a call of ``gemmlab.gemm`` enqueues, resolved once per call signature.

The call path is one design: **dispatch -> plan cache -> launch**.

- ``api.py`` checks the arguments and computes the call's signature (shapes, strides, pointer
  alignment, devices, stage/config, whether alpha or beta is 0, how c relates to out);
- on a miss it asks ``dispatch.choose`` (stage="auto") or takes the caller's stage, and
  :func:`build` turns the choice into a :class:`Plan`: the kernels (compiled and loaded now),
  their launch geometry and prebuilt parameter buffers whose pointer and scalar entries are
  *slots*;
- on a hit (and after a miss) :meth:`Plan.run` fills the slots with this call's pointers, alpha
  and beta and enqueues each step with one ``cuLaunchKernel`` (the steps after the first with
  ``cuLaunchKernelEx`` as programmatic dependents: :func:`dependent_launches`).

A plan may hold several steps (a separate ``c`` is no step: the epilogue reads it where it
lies): repack an operand into a workspace
(an operand with no unit stride, or rows that are not 16-byte aligned, for the float4/TMA paths,
both strided copies in one launch;
the K-major or hi/lo copies of the tensor-core stages: which copies and their layouts are
gemmlab/problem.py's, the launches are here);
the GEMM kernel itself; the split-K reduce (none where the stage adds the slices of a tile in a
thread block cluster on sm_90: s10 and s11 with 2 slices, 3..8 for small tiles whose clusters are
all resident (``cluster_slices``), or up to 8 when ``Choice.cluster_reduce`` forces it);
with ``Choice.stream_k`` (s11, an experiment) the stream-K kernel and its fixup instead.
Pointers come from *sources*: ``a``, ``b``, ``c``,
``out`` (the caller's arrays) and ``ws`` (a workspace the API allocates per call with the
caller's framework, so it is stream-ordered and graph-capture safe).
"""
from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field, replace

from . import device as _device
from . import env as _envmod
from .errors import ConfigError, GemmlabError
from .jit import compile_cubin
from .jit import launch as _launch
from .jit.compiler import CompiledKernel
from .jit.source import C_PARAMS, COMMON_PARAMS, generate
from .problem import Copy, Problem, k_slices, round4
from .stages import arch_number
from .stages._stream_k import cut_tiles, shared_tiles
from .stages.base import CLUSTER_MIN_CC
from .stages.tensor_map import TensorMapArg, TensorMapDescriptor

INT32_MAX = 2**31 - 1
WS_ALIGN = 64  # floats (256 bytes) between workspace regions


class NotReady(GemmlabError):
    """A kernel would have to be compiled or loaded while the stream is being captured."""


@dataclass(frozen=True)
class Tail:
    """A second GEMM kernel for D's rows (``axis`` "m") or columns ("n") from ``start`` on, at
    its own stage, config and split-K; the choice's kernel computes the part before ``start``
    (whole waves of its tile: wave quantization answered in the plan, heuristics/choice.py
    ``TAIL_MIN_GAIN``). Both read the same operands (after any copies) through views."""

    axis: str
    start: int
    spec: object
    config: dict
    split_k: int = 1
    # the waves model's times, in seconds, for the cut and for the single plan it replaced, where
    # the choice made the cut (what `gemmlab choose` reports; not part of the plan's identity)
    predicted: tuple | None = field(default=None, compare=False)

    def describe(self) -> dict:
        out = {"axis": self.axis, "start": self.start, "stage": self.spec.id, "config": dict(self.config),
               "split_k": self.split_k}
        if self.predicted is not None:
            out.update(us=round(self.predicted[0] * 1e6, 1), single_us=round(self.predicted[1] * 1e6, 1))
        return out


@dataclass(frozen=True)
class Choice:
    """What runs a problem: a stage at a config, split into ``split_k`` slices of K (1: none),
    with operands repacked when ``repack``: a K-major B transposed into a row-major copy, and
    operands whose rows are not 16-byte aligned copied into aligned workspace."""

    spec: object
    config: dict
    split_k: int = 1
    repack: bool = False
    source: str = "explicit"  # "explicit", "tuned", "heuristic", "skinny"
    a_transpose: bool = False  # a row-major A is first transposed into a column-major copy
    # split-K slices added in a thread block cluster: None where the stage does so by default,
    # True wherever it can, False never (a workspace and the reduce kernel)
    cluster_reduce: bool | None = None
    # stream-K: a grid the size of the GPU runs whole tiles in waves and shares the rest's K
    # iterations evenly; a second kernel adds the cut tiles' partials (kernels/epilogue/stream_k.cuh).
    # Replaces split-K.
    stream_k: bool = False
    # D's rows or columns from tail.start on run as a second GEMM of their own (not with stream_k)
    tail: Tail | None = None

    def describe(self) -> dict:
        out = {"stage": self.spec.id, "config": dict(self.config), "split_k": self.split_k,
               "repack": self.repack, "a_transpose": self.a_transpose, "cluster_reduce": self.cluster_reduce,
               "stream_k": self.stream_k, "source": self.source}
        if self.tail is not None:
            out["tail"] = self.tail.describe()
        return out


class Step:
    """One kernel launch with slots. ``ptr_slots``: (param index, source, byte offset);
    ``scalar_slots``: (param index, "alpha" | "beta"); ``tmaps``: (TensorMapDescriptor, source, offset)."""

    __slots__ = ("label", "ck", "fn", "ctx", "grid", "block", "smem", "params", "ptr_slots", "scalar_slots",
                 "tmaps", "dependent")

    def __init__(self, label, ck, fn, ctx, grid, block, smem, params, ptr_slots, scalar_slots, tmaps):
        self.label, self.ck, self.fn, self.ctx = label, ck, fn, ctx
        self.grid, self.block, self.smem = tuple(int(g) for g in grid), int(block), int(smem)
        self.params, self.ptr_slots, self.scalar_slots, self.tmaps = params, ptr_slots, scalar_slots, tmaps
        self.dependent = None  # a jit.launch.DependentLaunch: see dependent_launches()

    def fill(self, ptrs: dict, alpha: float, beta: float) -> None:
        vals = self.params.values
        for i, src, off in self.ptr_slots:
            vals[i].value = ptrs[src] + off
        for i, which in self.scalar_slots:
            vals[i].value = alpha if which == "alpha" else beta
        for slot, src, off in self.tmaps:
            slot.encode(ptrs[src] + off)

    def launch(self, stream: int) -> None:
        if self.dependent is not None:
            self.dependent.launch(self.fn, self.ctx, stream, self.params)
        else:
            _launch.launch_raw(self.fn, self.ctx, self.grid, self.block, self.smem, stream, self.params)

    @property
    def name(self) -> str:
        return self.ck.name


@dataclass
class Plan:
    """The resolved work of one call signature (see the module docstring)."""

    steps: list
    choice: Choice | None = None
    main: Step | None = None          # the GEMM kernel's step (for reports)
    variant: dict = field(default_factory=dict)
    ws_floats: int = 0
    summary: str = ""                 # what GEMMLAB_PRINT_CONFIG prints for every call
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def kernels(self) -> list[str]:
        return [s.name for s in self.steps]

    @property
    def ck(self) -> CompiledKernel | None:
        return self.main.ck if self.main else None

    def run(self, ptrs: dict, alpha: float, beta: float, stream: int) -> None:
        with self.lock:  # the parameter buffers are shared: fill and launch under one lock
            for s in self.steps:
                s.fill(ptrs, alpha, beta)
                s.launch(stream)

    def bind(self, ptrs: dict, alpha: float, beta: float, stream: int):
        """A no-argument callable that enqueues this plan with these pointers (the benchmark)."""
        ptrs = dict(ptrs)

        def enqueue():
            self.run(ptrs, alpha, beta, stream)

        return enqueue

    def describe(self) -> dict:
        d = self.choice.describe() if self.choice else {}
        d.update(kernels=self.kernels, variant=dict(self.variant), workspace_bytes=4 * self.ws_floats)
        if self.main is not None:
            d.update(grid=list(self.main.grid), block=self.main.block, smem=self.main.smem)
        return d


# ---- building --------------------------------------------------------------------------------

REDUCE_THREADS = 132 * 1024  # threads the split-K reduce aims for: half of what the H200's SMs hold


def reduce_lanes(outputs: int, splits: int) -> int:
    """Threads per output group of 4 in the split-K reduce (kernels/splitk_reduce.cuh): 1, or more
    (a power of two up to 32, at most the slices) where the outputs alone would leave the GPU
    without enough loads in flight (64x64 with 128 slices: 1024 groups -> 32 lanes each)."""
    lanes = 1
    while lanes < 32 and 2 * lanes <= splits and outputs * lanes < REDUCE_THREADS:
        lanes *= 2
    return lanes


def kernel_for(spec, cfg, variant, arch) -> CompiledKernel:
    name, src = generate(spec, cfg, variant)
    return compile_cubin(src, name, spec.compile_arch(cfg, arch))


_COPY_SRC = '#include "common.cuh"\n'
COPY_RUN = 128  # GEMMLAB_COPY_RUN in kernels/common.cuh: elements one warp of gemmlab_copy copies per step


def copy_runs(rows: int, cols: int, batch: int, s_dst) -> int:
    """The runs (warp tasks) of gemmlab_copy for a rows x cols x batch copy into strides ``s_dst``
    (bs, rs, cs): lines along the destination's unit-stride dimension, as the kernel walks them."""
    inner, outer = (cols, rows) if (s_dst[2] == 1 or s_dst[1] != 1) else (rows, cols)
    return -(-inner // COPY_RUN) * outer * batch


_REDUCE_SRC = '#include "splitk_reduce.cuh"\n'
_TRANSPOSE_SRC = '#include "transpose.cuh"\n'
_SPLIT_SRC = '#include "copy/split_tf32.cuh"\n'
_FIXUP_SRC = '#include "stream_k_fixup.cuh"\n'


def _ready_kernel(src: str, name: str, arch: str, dev: int, smem: int, capturing: bool):
    """Compile (cached) and load; under graph capture only what is already loaded may be used."""
    if capturing:
        from .jit import compiler

        ck = compiler.memory_hit(src, arch)
        if ck is None or not _launch.is_loaded(ck.key, dev):
            raise NotReady(f"gemmlab: kernel {name} is not compiled and loaded yet, and the stream is being "
                           "captured into a CUDA graph; call gemmlab once with the same shapes, layouts and "
                           "stage before capturing (a warm-up call), then capture")
    else:
        ck = compile_cubin(src, name, arch)
    fn, ctx = _launch.function(ck, dev, smem)
    return ck, fn, ctx


class _Builder:
    def __init__(self, dev: int, capturing: bool):
        self.dev = dev
        self.arch = _device.arch(dev)
        self.capturing = capturing
        self.steps: list[Step] = []
        self.ws_floats = 0

    def ws_region(self, floats: int) -> int:
        """Reserve ``floats`` of workspace; returns the byte offset."""
        off = self.ws_floats
        self.ws_floats += -(-max(floats, 1) // WS_ALIGN) * WS_ALIGN
        return 4 * off

    def add(self, label, src, name, arch, grid, block, smem, kinds, values, ptr_slots, scalar_slots=(), tmaps=()):
        ck, fn, ctx = _ready_kernel(src, name, arch, self.dev, smem, self.capturing)
        params = _launch.ParamBuffer(kinds, values)
        step = Step(label, ck, fn, ctx, grid, block, smem, params, list(ptr_slots), list(scalar_slots), list(tmaps))
        self.steps.append(step)
        return step

    # -- the strided batched copies (repacking): one or two operands in one launch -------------
    def copy(self, label, jobs):
        """``jobs``: one or two (src_ref, dst_ref, rows, cols, batch, src strides (bs, rs, cs), dst
        strides). One warp per run of COPY_RUN elements along the destination's unit-stride
        dimension (kernels/common.cuh), 8 warps a block; the grid is capped (the kernel strides over
        the rest) and shared between the jobs in proportion to their runs."""
        assert 1 <= len(jobs) <= 2, jobs
        runs = [copy_runs(*j[2:5], j[6]) for j in jobs]
        cap = 132 * 16
        if len(jobs) == 1:
            blocks = [max(1, min(-(-runs[0] // 8), cap))]
        else:
            share = max(1, min(cap - 1, round(cap * runs[0] / max(sum(runs), 1))))
            blocks = [max(1, min(-(-r // 8), c)) for r, c in zip(runs, (share, cap - share))]
        none = (None, None, 0, 0, 0, (0, 0, 0), (0, 0, 0))  # no second copy: batch 0
        kinds = (["ptr", "ptr"] + ["i64"] * 9) * 2 + ["i64"]
        values, ptrs = [], []
        for i, (src_ref, dst_ref, rows, cols, batch, s_src, s_dst) in enumerate([*jobs, none][:2]):
            values += [0, 0, rows, cols, batch, *s_src, *s_dst]
            if src_ref is not None:
                ptrs += [(11 * i, *src_ref), (11 * i + 1, *dst_ref)]
        values.append(blocks[0])
        self.add(label, _COPY_SRC, "gemmlab_copy", self.arch, (sum(blocks), 1, 1), 256, 0, kinds, values, ptrs)

    # -- K-major B into a row-major copy ------------------------------------------------------
    def transpose(self, label, src_ref, dst_ref, rows, cols, batch, src_bs, src_cs, dst_bs, dst_ld):
        tiles = -(-rows // 32) * -(-cols // 32)
        blocks = max(1, min(tiles, 132 * 16))
        kinds = ["ptr", "ptr"] + ["i64"] * 7
        values = [0, 0, rows, cols, batch, src_bs, src_cs, dst_bs, dst_ld]
        self.add(label, _TRANSPOSE_SRC, "gemmlab_transpose", self.arch, (blocks, 1, min(batch, 65535)), 256, 0,
                 kinds, values, [(0, *src_ref), (1, *dst_ref)])

    # -- 3xTF32: an operand into K-major hi and lo copies --------------------------------------
    def split(self, label, src_ref, dst_ref, rows, cols, batch, src_bs, src_xs, src_ks, dst_bs, ld, lo_off):
        tiles = -(-rows // 32) * -(-cols // 32)
        blocks = max(1, min(tiles, 132 * 16))
        kinds = ["ptr", "ptr"] + ["i64"] * 9 + ["i32"]
        x_unit = int(src_xs == 1 and rows > 1)
        values = [0, 0, rows, cols, batch, src_bs, src_xs, src_ks, dst_bs, ld, lo_off, x_unit]
        self.add(label, _SPLIT_SRC, "gemmlab_split_tf32", self.arch, (blocks, 1, min(batch, 65535)), 256, 0,
                 kinds, values, [(0, *src_ref), (1, *dst_ref)])

    # -- the split-K reduce ----------------------------------------------------------------------
    def reduce(self, ws_ref, d_ref, c_ref, M, N, splits, ws_ld, ws_ss, ws_bs, d_rs, d_cs, d_bs, batch, c_strides):
        total = M * (-(-N // 4)) * batch
        lanes = reduce_lanes(total, splits)
        blocks = max(1, min(math.ceil(total * lanes / 256), 132 * 8))
        kinds = ["ptr", "ptr"] + ["i64"] * 10 + ["f32", "f32", "i32", "ptr", "i64", "i64", "i64"]
        values = [0, 0, M, N, splits, ws_ld, ws_ss, ws_bs, d_rs, d_cs, d_bs, batch, 1.0, 0.0, lanes, 0, *c_strides]
        self.add("reduce", _REDUCE_SRC, "gemmlab_splitk_reduce", self.arch, (blocks, 1, 1), 256, 0, kinds, values,
                 [(0, *ws_ref), (1, *d_ref), (15, *c_ref)], [(12, "alpha"), (13, "beta")])

    # -- stream-K's fixup: the cut tiles' partial slots added, the epilogue applied -------------
    def stream_k_fixup(self, slots_ref, d_ref, c_ref, prob: Problem, blocks, bm, bn, bk, group_m):
        kinds = ["ptr", "ptr"] + ["i64"] * 5 + ["i32"] * 3 + ["f32", "f32", "ptr", "i64", "i64"]
        c_rs, c_cs, _ = prob.c_strides()
        values = [0, 0, prob.M, prob.N, prob.ldd, -(-prob.K // bk), blocks, bm, bn, group_m, 1.0, 0.0, 0, c_rs, c_cs]
        tiles = -(-prob.M // bm) * -(-prob.N // bn)
        self.add("stream-K fixup", _FIXUP_SRC, "gemmlab_stream_k_fixup", self.arch, (shared_tiles(tiles, blocks), 1, 1),
                 256, 0, kinds, values, [(0, *slots_ref), (1, *d_ref), (12, *c_ref)], [(10, "alpha"), (11, "beta")])

    # -- a stage kernel ------------------------------------------------------------------------
    def gemm(self, spec, cfg, prob: Problem, refs: dict, scalars: bool, stream_k=None):
        """refs: {"a": (source, offset), "b": ..., "d": ...}; scalars: alpha/beta are slots (else
        the values in ``prob`` are baked in, e.g. 1 and 0 for split-K partials). ``stream_k``:
        (blocks, slots ref): the stream-K grid and its partial slots."""
        other = spec.fallback(cfg, prob)
        if other is not None:
            spec, cfg = other
        spec.check_problem(cfg, prob)
        variant = spec.variant(cfg, prob)
        if prob.separate_c and prob.beta != 0.0:  # the epilogue reads the caller's c where it lies
            variant = {**variant, "sep_c": 1}
        grid = spec.grid(cfg, prob)
        if stream_k is not None:
            variant = {**{k: v for k, v in variant.items() if k != "persistent"}, "stream_k": 1}
            grid = (stream_k[0], 1, 1)
        elif variant.get("persistent"):  # s11: as many blocks as the GPU holds, each running several tiles
            grid = (spec.persistent_blocks(cfg, prob, _device.info(self.dev).sms), 1, 1)
        if grid[0] > INT32_MAX:
            raise ConfigError(f"stage {spec.id}: {grid[0]} blocks exceed the grid limit; use a larger tile")
        if grid[1] > 65535:
            raise ConfigError(f"stage {spec.id}: {grid[1]} split-K slices exceed 65535; use fewer")
        name, src = generate(spec, cfg, variant)
        kinds = ["ptr", "ptr", "ptr"] + ["i64"] * len(COMMON_PARAMS) + ["f32", "f32"] + ["i64"] * 6
        kinds += ["ptr"] + ["i64"] * len(C_PARAMS)
        values = [0, 0, 0] + [getattr(prob, f) for f in COMMON_PARAMS] + [prob.alpha, prob.beta]
        values += [prob.batch, prob.a_bs, prob.b_bs, prob.d_bs, prob.k_split, prob.d_ss]
        c_slot = len(values)
        values += [0, *prob.c_strides()]
        tmaps = []
        for extra in spec.extra_args(cfg, variant, prob):
            if isinstance(extra, TensorMapArg):
                slot = TensorMapDescriptor(extra.shape, extra.strides, extra.box, extra.swizzle, extra.data_type)
                kinds.append(slot)
                values.append(None)
                tmaps.append((slot, *refs[extra.operand]))
            else:  # numpy-typed scalars
                kind = _launch.kind_of(extra)
                kinds.append(kind)
                values.append(float(extra) if kind == "f32" else int(extra))
        ptr_slots = [(0, *refs["a"]), (1, *refs["b"]), (2, *refs["d"]), (c_slot, *refs.get("c", refs["d"]))]
        if stream_k is not None:  # sk_partials: the wrapper's last parameter
            ptr_slots.append((len(kinds), *stream_k[1]))
            kinds.append("ptr")
            values.append(0)
        n_common = 3 + len(COMMON_PARAMS)
        scalar_slots = [(n_common, "alpha"), (n_common + 1, "beta")] if scalars else []
        step = self.add(spec.id, src, name, spec.compile_arch(cfg, self.arch), grid, spec.launch_threads(cfg, variant),
                        spec.smem_bytes(cfg, variant), kinds, values, ptr_slots, scalar_slots, tmaps)
        return step, spec, cfg, variant


_PDL_KEY = _envmod.key("GEMMLAB_PDL")


def pdl_enabled() -> bool:
    """Programmatic dependent launch for a plan's later kernels (kernels/ptx/grid_dependency.cuh):
    on unless GEMMLAB_PDL=0 (read when a plan is built)."""
    return _envmod.text(_envmod.raw(_PDL_KEY)) != "0"


def dependent_launches(steps: list) -> None:
    """Every kernel after a plan's first, compiled for sm_90 or later (all gemmlab kernels wait for
    the previous grid's results first there), starts as a programmatic dependent launch: its
    launch overlaps the previous kernel's tail. The first waits for the stream as usual."""
    if not pdl_enabled():
        return
    for st in steps[1:]:
        if arch_number(st.ck.arch) >= 90:
            st.dependent = _launch.DependentLaunch(st.grid, st.block, st.smem)


def _copy_operand(b: _Builder, label: str, prob: Problem, c: Copy, refs: dict, xk: bool = False,
                  pending: list | None = None) -> Problem:
    """Launch the workspace copy ``c`` of operand ``c.which`` (its layout is gemmlab/problem.py's).
    The launch sees the operand as it is (rows x cols) or, with ``xk``, as [x][k] rows (m of A,
    n of B: the K-major copies, whose destination is row-major in that frame). ``refs`` is updated
    in place; returns the problem the kernel then sees. With ``pending`` (a list), a strided copy
    is not launched but appended as (label, job), for :func:`_launch_copies` to launch with another."""
    op = prob.operand(c.which)
    off = b.ws_region(c.floats)
    if xk:
        rows, cols, s_rs, s_cs, d_rs, d_cs = op.x, op.k, op.x_stride, op.k_stride, c.ld, 1
    else:
        rows, cols, s_rs, s_cs, d_rs, d_cs = op.rows, op.cols, op.rs, op.cs, c.rs, c.cs
    if c.kind == "transpose" and s_cs == 1 and d_rs == 1:  # row-major into column-major: the
        rows, cols, s_rs, s_cs, d_rs, d_cs = cols, rows, s_cs, s_rs, d_cs, d_rs  # same copy, transposed frame
    if c.kind == "transpose":  # a source with unit row stride into a row-major destination
        assert s_rs == 1 and d_cs == 1, (c, op)
        b.transpose(label, refs[c.which], ("ws", off), rows, cols, c.batches, op.bs, s_cs, c.per, d_rs)
    else:
        job = (refs[c.which], ("ws", off), rows, cols, c.batches, (op.bs, s_rs, s_cs), (c.per, d_rs, d_cs))
        if pending is None:
            b.copy(label, [job])
        else:
            pending.append((label, job))
    refs[c.which] = ("ws", off)
    return prob.with_copy(c)


def _launch_copies(b: _Builder, pending: list) -> None:
    """The strided copies that :func:`_copy_operand` held back, two to a launch (each reads a
    caller's operand, never another copy's output, so their order is free)."""
    for i in range(0, len(pending), 2):
        pair = pending[i:i + 2]
        b.copy(" + ".join(label for label, _ in pair), [job for _, job in pair])


def _k_major_operands(b: _Builder, spec, cfg, prob: Problem, refs: dict) -> Problem:
    """Make A ([m][k]) and B ([n][k]) K-major with 16-byte aligned rows, for stages that read
    both operands K-major: an operand whose unit stride is along M or N is transposed into
    workspace, any other operand the stage cannot take (strided, unaligned) is copied
    (``Operand.k_major_copy``). ``refs`` is updated in place; returns the problem the kernel then sees."""
    for which in ("a", "b"):
        if spec.operand_ready(prob, which, cfg):
            continue
        c = prob.operand(which).k_major_copy()
        label = f"transpose {which} (K-major)" if c.kind == "transpose" else f"repack {which} (K-major)"
        prob = _copy_operand(b, label, prob, c, refs, xk=True)
    return prob


def _split_operands(b: _Builder, prob: Problem, refs: dict, which_ops=("a", "b")) -> Problem:
    """3xTF32: write each operand of ``which_ops`` as two K-major workspace copies, hi and lo, in
    the layout of ``Operand.k_major_copy`` (one launch of gemmlab_split_tf32 per operand,
    transposing where the operand's unit stride is along M or N). Adds refs "a_lo" (and "b_lo");
    returns the problem the kernel sees (on the hi copies)."""
    for which in which_ops:
        op = prob.operand(which)
        c = op.k_major_copy()
        off = b.ws_region(2 * c.floats)
        b.split(f"split {which} (hi, lo; K-major)", refs[which], ("ws", off), op.x, prob.K, c.batches, op.bs,
                op.x_stride, op.k_stride, c.per, c.ld, c.floats)
        refs[which] = ("ws", off)
        refs[f"{which}_lo"] = ("ws", off + 4 * c.floats)
        prob = prob.with_copy(c)
    return prob


def build(choice: Choice, prob: Problem, refs: dict, dev: int, *, capturing: bool = False) -> Plan:
    """Turn a choice for the kernel-level problem ``prob`` into a plan. ``refs`` maps the problem's
    operands "a", "b", "d" and (a separate addend, ``prob.separate_c``) "c" to (source, byte offset); ``prob``'s pointers are those of the
    building call (they decide nothing that the signature does not fix: alignment only)."""
    b = _Builder(dev, capturing)
    spec, cfg = choice.spec, choice.config
    refs = dict(refs)

    # Tensor-core stages read both operands K-major (TF32 wgmma cannot transpose); s13 reads them
    # split into hi and lo parts.
    if spec.operands_k_major and prob.K > 0 and spec.fallback(cfg, prob) is None:
        if getattr(spec, "operand_split", False):
            which = spec.split_operands(cfg, prob)
            cfg = spec.kernel_config(cfg, prob)  # the variant is decided on the caller's operands
            prob = _split_operands(b, prob, refs, which)
        else:
            prob = _k_major_operands(b, spec, cfg, prob, refs)

    # Repack operands the stage's fast paths cannot read as they are (the copies and their layout
    # are gemmlab/problem.py's: Problem.repacks). With ``repack`` a K-major B becomes a row-major
    # (N-major) copy first, with ``a_transpose`` a row-major A a column-major (M-major) one: the
    # layouts the kernels read fastest.
    if spec.aligned_path:
        copies, _ = prob.repacks(choice.repack, choice.a_transpose)
        assert len({c.which for c in copies}) == len(copies), copies  # one copy per operand: independent
        pending: list = []
        for c in copies:
            label = f"transpose {c.which}" if c.kind == "transpose" else f"repack {c.which}"
            prob = _copy_operand(b, label, prob, c, refs, pending=pending)
        _launch_copies(b, pending)

    # Stream-K where asked and the stage that will run has a schedule for the problem (else the
    # choice's split-K, as if it had not been asked).
    sk_blocks = 0
    if choice.stream_k:
        run_spec, run_cfg = spec.fallback(cfg, prob) or (spec, cfg)
        sk_blocks = run_spec.stream_k_blocks(run_cfg, prob, _device.info(dev).sms)
    if sk_blocks:  # the stream-K kernel, then the fixup of the tiles it cut (where it cut any)
        bm, bn = run_spec.block_tile(run_cfg)
        bk = run_cfg["block_k"]
        tiles = run_spec.tiles(run_cfg, prob.M, prob.N)
        slots = ("ws", b.ws_region(2 * sk_blocks * bm * bn))
        main, spec_run, cfg_run, variant = b.gemm(spec, cfg, prob, refs, scalars=True, stream_k=(sk_blocks, slots))
        if cut_tiles(tiles, -(-prob.K // bk), sk_blocks):
            b.stream_k_fixup(slots, refs["d"], refs.get("c", refs["d"]), prob, sk_blocks, bm, bn, bk,
                             spec_run.group_m(cfg_run))
        splits, in_cluster, tail = 1, False, None
    elif choice.tail is None:
        main, spec_run, cfg_run, variant, splits, in_cluster = _sliced_gemm(b, spec, cfg, prob, refs, choice.split_k,
                                                                            choice.cluster_reduce)
        tail = None
    else:  # two GEMMs on views: whole waves of the choice's tile, then the rest at the tail's plan
        t = choice.tail
        stop = prob.M if t.axis == "m" else prob.N
        first, _ = prob.part(t.axis, 0, t.start)
        rest, offs = prob.part(t.axis, t.start, stop)
        main, spec_run, cfg_run, variant, splits, in_cluster = _sliced_gemm(b, spec, cfg, first, refs, choice.split_k,
                                                                            choice.cluster_reduce)
        moved = {k: (src, off + offs.get(k, 0)) for k, (src, off) in refs.items()}  # no "c": D's, moved
        tail_run = _sliced_gemm(b, t.spec, t.config, rest, moved, t.split_k, choice.cluster_reduce)
        tail = replace(t, spec=tail_run[1], config=tail_run[2], split_k=tail_run[4])
    dependent_launches(b.steps)
    ran = Choice(spec_run, cfg_run, splits, choice.repack, choice.source, choice.a_transpose, in_cluster,
                 stream_k=bool(sk_blocks), tail=tail)
    cut = f" + {tail.axis} >= {tail.start}: {tail.spec.id} {tail.config} split_k {tail.split_k}" if tail else ""
    summary = (f"gemmlab: {prob.M}x{prob.N}x{prob.K} batch {prob.batch} -> {spec_run.id} {cfg_run} {variant} "
               f"split_k {splits}{f' stream-K {sk_blocks} blocks' if sk_blocks else ''}{cut} ({choice.source}); " +
               ", ".join(f"kernel {s.name}" for s in b.steps) +
               f"; grid {main.grid}")
    return Plan(steps=b.steps, choice=ran, main=main, variant=variant, ws_floats=b.ws_floats, summary=summary)


def _sliced_gemm(b: _Builder, spec, cfg, prob: Problem, refs: dict, split_k: int, cluster_reduce):
    """The GEMM kernel of ``prob`` in ``split_k`` slices of K: one kernel (no split, or the slices
    added in a thread block cluster), or the kernel into a workspace and the reduce. Returns
    (main step, spec and config that ran, variant, slices, whether in a cluster)."""
    k_split, splits = k_slices(prob.K, split_k)
    sliced = replace(prob, splits=splits, k_split=k_split)  # d_ss = 0: the slices share D
    in_cluster = False
    if splits > 1 and cluster_reduce is not False and arch_number(b.arch) >= CLUSTER_MIN_CC:
        run_spec, run_cfg = spec.fallback(cfg, sliced) or (spec, cfg)  # the stage that will run decides
        in_cluster = run_spec.cluster_slices(run_cfg, splits, forced=bool(cluster_reduce),
                                             clusters=run_spec.tiles(run_cfg, prob.M, prob.N, prob.batch),
                                             sms=_device.info(b.dev).sms)
    if in_cluster:  # one kernel: the slices of a tile add their partials in a cluster
        main, spec_run, cfg_run, variant = b.gemm(spec, cfg, sliced, refs, scalars=True)
    elif splits > 1:
        ws_ld = round4(prob.N)
        ws_ss = round4(prob.M * ws_ld)
        ws_bs = ws_ss * splits
        off = b.ws_region(ws_bs * prob.batch)
        part = replace(sliced, d_ss=ws_ss, ldd=ws_ld, d_bs=ws_bs if prob.batch > 1 else 0, d_ptr=0, alpha=1.0,
                       beta=0.0, c_rs=None, c_cs=None, c_bs=None)  # partial products into the workspace
        main, spec_run, cfg_run, variant = b.gemm(spec, cfg, part, {**refs, "d": ("ws", off), "c": ("ws", off)},
                                                  scalars=False)
        b.reduce(("ws", off), refs["d"], refs.get("c", refs["d"]), prob.M, prob.N, splits, ws_ld, ws_ss, ws_bs,
                 prob.ldd, 1, prob.d_bs, prob.batch, prob.c_strides())
    else:
        main, spec_run, cfg_run, variant = b.gemm(spec, cfg, prob, refs, scalars=True)
    return main, spec_run, cfg_run, variant, splits, in_cluster

