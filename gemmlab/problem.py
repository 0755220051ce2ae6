"""The problem and its operand views: the one owner of layout.

A :class:`Problem` is one GEMM as the kernels see it, ``D (M x N, row-major, ld ldd) = alpha A B
+ beta C``, with A (M x K), B (K x N) and C (D itself, or the caller's separate c) given by
element strides. Everything that reads
layout off those strides lives here, once:

- how a call becomes a problem (:meth:`Problem.of_call`): a column-major ``out`` is computed as
  ``out^T = b^T a^T`` (the kernels write row-major D only; a separate c is transposed with it),
  ``alpha == 0`` becomes K = 0;
- an operand's *view* (:class:`Operand`, ``problem.operand("a")``): its majorness (which
  dimension has the unit stride, one rule for degenerate strides too), leading dimension,
  whether 16-byte vectors / TMA can read it as it is, whether it can be read as K-major rows;
- the problem's layout letters (``"nn"``, ``"nt"``, ``"tn"``, ``"tt"``);
- whether an operand must be repacked and the layout of every workspace copy the plan makes
  (:class:`Copy`: the padded copy, the transposing copy of a K-major B, the K-major copies of the
  tensor-core stages), so the plan, the stages and the tuner read one answer.

The plan (plan.py) turns copies into launches; the heuristics (heuristics/) decide whether a
copy is worth making. Nothing here imports anything of gemmlab but the split-K rule's users.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

VEC = 4  # floats in one 16-byte vector (float4 loads, cp.async.cg, TMA strides)


def round4(n: int) -> int:
    """``n`` rounded up to a whole number of 16-byte vectors of floats."""
    return -(-n // VEC) * VEC


def matrix_layout(shape2, strides2) -> str | None:
    """'row' (unit column stride), 'col' (unit row stride) or None, for a rows x cols matrix: the
    layouts an ``out`` may have (a leading dimension wider than the row is fine)."""
    rows, cols = shape2
    rs, cs = strides2
    if cols <= 1 or cs == 1:
        if rows <= 1 or rs >= max(cols, 1):
            return "row"
    if rows <= 1 or rs == 1:
        if cols <= 1 or cs >= max(rows, 1):
            return "col"
    return None


def k_slices(K: int, split_k: int) -> tuple[int, int]:
    """(k_split, slices): split-K as the plan runs it. Slices are whole multiples of 32 (so every
    stage's K tiles, and s11's TMA boxes, end at a slice boundary); asking for ``split_k`` gives
    ceil(K / k_split) slices, which can be fewer. No split: (K, 1)."""
    if split_k <= 1 or K <= 0:
        return K, 1
    k_split = -(-(-(-K // split_k)) // 32) * 32
    return k_split, -(-K // k_split)


# ---- workspace copies ---------------------------------------------------------------------------

@dataclass(frozen=True)
class Copy:
    """Where a pre-pass writes operand ``which`` in the workspace, and what the kernel then sees.

    ``kind``: "copy" (a strided copy, any layout to any layout) or "transpose" (a tiled
    transposing copy: the source's unit stride is along the copy's outer dimension). ``rs``,
    ``cs``: the copy's element strides in the operand's own terms (A: m, k; B: k, n); ``ld`` its
    leading dimension, ``per`` the floats of one batch (both 16-byte multiples); ``batches``: the
    copies made (1 for a broadcast operand, ``bs == 0``)."""

    which: str
    kind: str
    rs: int
    cs: int
    ld: int
    per: int
    batches: int
    batched: bool

    @property
    def floats(self) -> int:
        return self.per * self.batches


# ---- one operand -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Operand:
    """Operand ``which`` of a problem as a matrix: A is M x K, B is K x N, element (r, c) at
    ``ptr + 4 * (r * rs + c * cs)`` (+ ``bs`` per batch; 0: broadcast)."""

    which: str
    rows: int
    cols: int
    rs: int
    cs: int
    bs: int
    ptr: int
    batch: int

    # -- the dimension that is not K (A: m, B: n), and K ---------------------------------------
    @property
    def x(self) -> int:
        return self.rows if self.which == "a" else self.cols

    @property
    def k(self) -> int:
        return self.cols if self.which == "a" else self.rows

    @property
    def x_stride(self) -> int:
        return self.rs if self.which == "a" else self.cs

    @property
    def k_stride(self) -> int:
        return self.cs if self.which == "a" else self.rs

    # -- majorness ------------------------------------------------------------------------------
    @property
    def row_major(self) -> bool:
        """Whether the operand is kept row-major (A: K-major, As[m][k]; B: N-major, Bs[k][n]).
        Its unit-stride dimension decides; with both strides 1 (a row or a column: the other
        stride is never used) a single row is row-major and anything else column-major; with
        neither, the smaller stride."""
        if self.cs == 1 and self.rs != 1:
            return True
        if self.rs == 1 and self.cs != 1:
            return False
        if self.cs == 1:
            return self.rows == 1
        return abs(self.cs) <= abs(self.rs)

    @property
    def k_major(self) -> bool:
        """Kept K-major: A row-major, B column-major ([n][k])."""
        return self.row_major if self.which == "a" else not self.row_major

    @property
    def letter(self) -> str:
        """The layout letter: 'n' row-major, 't' column-major (a transposed view)."""
        return "n" if self.row_major else "t"

    @property
    def unit_strided(self) -> bool:
        """One dimension has unit stride (or the matrix is a single row or column)."""
        return self.rs == 1 or self.cs == 1 or self.rows <= 1 or self.cols <= 1

    @property
    def strictly_k_major(self) -> bool:
        """Unit stride along K only, with more than one row and column: [x][k] storage (for B the
        [n][k] layout, which a transposing copy turns into row-major)."""
        return self.k_stride == 1 and self.x_stride != 1 and self.x > 1 and self.k > 1

    # -- 16-byte vectors and TMA ------------------------------------------------------------------
    def vector_layout(self) -> tuple[int, int, int, int]:
        """(inner stride, outer stride, outer extent, batch stride) in the kept majorness."""
        if self.row_major:
            return self.cs, self.rs, self.rows, self.bs
        return self.rs, self.cs, self.cols, self.bs

    @property
    def vec_aligned(self) -> bool:
        """16-byte cp.async (and TMA's 16-byte strides) can read the operand as it is: unit inner
        stride and every row start (base pointer, outer stride where there is more than one
        row, batch stride where there is more than one batch) 16-byte aligned."""
        inner, outer, extent, bs = self.vector_layout()
        if inner != 1 or self.ptr % 16:
            return False
        if extent > 1 and outer % VEC:
            return False
        return not (self.batch > 1 and bs % VEC)

    @property
    def lead(self) -> int | None:
        """The stride between rows of the unit-stride dimension taken as given (the column
        stride first): the strict rule of :meth:`Problem.aligned`; None without a unit stride."""
        if self.cs == 1:
            return self.rs
        if self.rs == 1:
            return self.cs
        return None

    @property
    def k_row_stride(self) -> int:
        """The stride between the operand's [x][k] rows (m of A, n of B) as a K-major reader
        (TMA) sees it: any legal (16-byte) stride for a single row, whose stride is never used."""
        if self.x == 1:
            return round4(max(self.k, 1))
        return self.x_stride

    @property
    def k_rows_ready(self) -> bool:
        """Readable as it is as K-major rows by TMA: unit stride along K (K == 1 counts), 16-byte
        aligned base, positive 16-byte row stride and batch stride."""
        stride = self.k_row_stride
        return ((self.k_stride == 1 or self.k == 1) and self.ptr % 16 == 0 and stride > 0 and stride % VEC == 0
                and not (self.batch > 1 and self.bs % VEC))

    @property
    def x_row_stride(self) -> int:
        """The stride between the operand's [k][x] rows (k of A^T, k of B) as a reader of rows along
        m or n (TMA) sees it: any legal (16-byte) stride for a single row, whose stride is never used."""
        return self.k_stride if self.k > 1 else round4(self.x)

    @property
    def x_rows_ready(self) -> bool:
        """Readable as it is as rows along m or n ([k][x]; for B row-major, s12's RS variant): unit
        stride along x with x > 1, K > 0, 16-byte aligned base, row stride and batch stride."""
        if self.x == 1 or self.k == 0:
            return False
        return (self.x_stride == 1 and self.ptr % 16 == 0 and (self.k == 1 or (self.k_stride > 0
                and self.k_stride % VEC == 0)) and not (self.batch > 1 and self.bs % VEC))

    # -- repacking ----------------------------------------------------------------------------------
    def needs_repack(self, for_alignment: bool) -> bool:
        """An operand with no unit stride always needs a copy before a float4/TMA stage; with
        ``for_alignment`` also one 16-byte vectors cannot read (:attr:`vec_aligned`)."""
        if not self.unit_strided:
            return True
        return for_alignment and not self.vec_aligned

    def copied(self, order: str, kind: str = "copy") -> Copy:
        """A dense copy in ``order`` ("row" or "col"), its leading dimension padded to 16 bytes."""
        if order == "row":
            ld = round4(self.cols)
            rs, cs, per = ld, 1, self.rows * ld
        else:
            ld = round4(self.rows)
            rs, cs, per = 1, ld, self.cols * ld
        return Copy(self.which, kind, rs, cs, ld, round4(per), self.batch if self.bs else 1, bool(self.bs))

    def padded_copy(self) -> Copy:
        """The repack for float4/TMA: majorness kept (column-major stays column-major; a strided
        operand or a single row or column becomes row-major), rows padded to 16 bytes."""
        col = self.rs == 1 and self.cs != 1
        return self.copied("col" if col else "row")

    def row_major_copy(self) -> Copy:
        """A K-major B transposed into row-major (the [k][n] layout the SIMT kernels read fastest)."""
        return self.copied("row", "transpose")

    def m_major_copy(self) -> Copy:
        """A row-major (K-contiguous) A transposed into a column-major copy (M contiguous: the
        As[k][m] layout the SIMT stages read fastest, as for a transposed A)."""
        return self.copied("col", "transpose")

    def k_major_copy(self) -> Copy:
        """The K-major copy the tensor-core stages read (A as [m][k], B as [n][k], rows padded to
        16 bytes): a transposing copy where the unit stride is along m or n, else a strided one."""
        kind = "transpose" if self.x_stride == 1 and self.x > 1 else "copy"
        return self.copied("row" if self.which == "a" else "col", kind)


# ---- the problem --------------------------------------------------------------------------------

@dataclass(frozen=True)
class Problem:
    """One GEMM as the kernel sees it: D (M x N, row-major, ld ``ldd``) = alpha A B + beta C.

    Strides are in elements. ``a_rs``/``a_cs`` are A's row and column strides (A[m, k] at
    m*a_rs + k*a_cs); likewise B (K x N). Pointers are device addresses (0 when unknown, e.g.
    when only compiling).
    """

    M: int
    N: int
    K: int
    a_rs: int
    a_cs: int
    b_rs: int
    b_cs: int
    ldd: int
    batch: int = 1
    a_bs: int = 0
    b_bs: int = 0
    d_bs: int = 0
    a_ptr: int = 0
    b_ptr: int = 0
    d_ptr: int = 0
    alpha: float = 1.0
    beta: float = 0.0
    # Split-K: ``splits`` slices of ``k_split`` (a multiple of 32) along K, slice s writing its
    # partial product at D + s * d_ss (blockIdx.y); 1 slice is the plain problem.
    splits: int = 1
    k_split: int = 0
    d_ss: int = 0
    # The addend C (C[m, n] at m*c_rs + n*c_cs, batch b at b*c_bs): None when it is D itself (c
    # is the output, or absent); a separate c is read where it lies (a stride-0 bias broadcast too).
    c_rs: int | None = None
    c_cs: int | None = None
    c_bs: int | None = None

    @property
    def separate_c(self) -> bool:
        return self.c_rs is not None

    def c_strides(self) -> tuple[int, int, int]:
        """(row, column, batch) element strides of the addend the epilogue reads."""
        if self.c_rs is None:
            return self.ldd, 1, self.d_bs
        return self.c_rs, self.c_cs, self.c_bs

    @staticmethod
    def dense(M, N, K, layout="nn", batch=1, **kw) -> "Problem":
        """A contiguous problem; layout letters say whether A and B are 'n' (row-major) or 't'."""
        a_rs, a_cs = (K, 1) if layout[0] == "n" else (1, M)
        b_rs, b_cs = (N, 1) if layout[1] == "n" else (1, K)
        return Problem(M, N, K, a_rs, a_cs, b_rs, b_cs, N, batch, M * K, K * N, M * N, **kw)

    @staticmethod
    def of_call(M, N, K, batch, a_ptr, a_strides, a_batch, b_ptr, b_strides, b_batch, d_ptr, d_strides,
                alpha=1.0, beta=0.0, c_strides=None) -> tuple["Problem", bool]:
        """(the kernel-level problem, swapped) of a call ``out = alpha a b + beta c``: ``*_strides``
        are (batch, row, column) element strides, ``a_batch``/``b_batch`` the operands' batch
        counts (1: broadcast). A column-major ``out`` is computed as ``out^T = b^T a^T``, which is
        row-major (``swapped``: the problem's A is the call's b and its B the call's a, M and N
        exchanged). alpha == 0 is sent as K = 0 (D = beta C). ``beta``: 0 when there is no c.
        ``c_strides``: (batch, row, column) strides of a c that is not the output (None: c is
        the output or absent); it is transposed with the output."""
        a_bs = a_strides[0] if a_batch > 1 else 0
        b_bs = b_strides[0] if b_batch > 1 else 0
        swapped = matrix_layout((M, N), d_strides[1:]) != "row"
        if not swapped:
            m, n, ldd = M, N, d_strides[1]
            pa, a_rs, a_cs, pb, b_rs, b_cs = a_ptr, a_strides[1], a_strides[2], b_ptr, b_strides[1], b_strides[2]
        else:
            m, n, ldd = N, M, d_strides[2]
            pa, a_rs, a_cs, pb, b_rs, b_cs = b_ptr, b_strides[2], b_strides[1], a_ptr, a_strides[2], a_strides[1]
            a_bs, b_bs = b_bs, a_bs
        if m == 1:
            ldd = round4(n)  # one row: the leading dimension is never used; keep it aligned
        c = {}
        if c_strides is not None:
            c_rs, c_cs = (c_strides[1], c_strides[2]) if not swapped else (c_strides[2], c_strides[1])
            c = dict(c_rs=c_rs, c_cs=c_cs, c_bs=c_strides[0] if batch > 1 else 0)
        prob = Problem(M=m, N=n, K=K if alpha != 0.0 else 0, a_rs=a_rs, a_cs=a_cs, b_rs=b_rs, b_cs=b_cs,
                       ldd=ldd, batch=batch, a_bs=a_bs, b_bs=b_bs, d_bs=d_strides[0] if batch > 1 else 0,
                       a_ptr=pa, b_ptr=pb, d_ptr=d_ptr, alpha=alpha, beta=beta, **c)
        return prob, swapped

    def part(self, axis: str, start: int, stop: int) -> tuple["Problem", dict]:
        """Rows (``axis`` "m") or columns ("n") ``[start, stop)`` of D as a problem of their own on
        views of the same operands (rows: A's rows and all of B; columns: all of A and B's
        columns; every batch), and the byte offset of each view from the operand's start ("a",
        "b", "d", "c": the addend, where separate). Pointers move with the views, so the
        alignment rules read the parts' own."""
        if axis not in ("m", "n"):
            raise ValueError(f"axis {axis!r}: 'm' or 'n'")
        extent = self.M if axis == "m" else self.N
        if not 0 <= start < stop <= extent:
            raise ValueError(f"part [{start}, {stop}) of {extent} {'rows' if axis == 'm' else 'columns'}")
        c_rs, c_cs, _ = self.c_strides()
        if axis == "m":
            offs = {"a": start * self.a_rs, "b": 0, "d": start * self.ldd, "c": start * c_rs}
            sub = dict(M=stop - start)
        else:
            offs = {"a": 0, "b": start * self.b_cs, "d": start, "c": start * c_cs}
            sub = dict(N=stop - start)
        offs = {k: 4 * v for k, v in offs.items()}
        return replace(self, **sub, a_ptr=self.a_ptr + offs["a"], b_ptr=self.b_ptr + offs["b"],
                       d_ptr=self.d_ptr + offs["d"]), offs

    # -- operand views --------------------------------------------------------------------------
    def operand(self, which: str) -> Operand:
        if which == "a":
            return Operand("a", self.M, self.K, self.a_rs, self.a_cs, self.a_bs, self.a_ptr, self.batch)
        if which == "b":
            return Operand("b", self.K, self.N, self.b_rs, self.b_cs, self.b_bs, self.b_ptr, self.batch)
        raise ValueError(f"operand {which!r}: 'a' or 'b'")

    # A is "K-major" (row-major, K contiguous) or "M-major" (column-major, M contiguous); B is
    # "N-major" (row-major) or "K-major". The rule for degenerate strides: Operand.row_major.
    @property
    def a_k_major(self) -> bool:
        return self.operand("a").row_major

    @property
    def b_n_major(self) -> bool:
        return self.operand("b").row_major

    @property
    def layout(self) -> str:
        """The layout letters as the ladder names them, A then B: 'n' for a row-major operand,
        't' for a column-major (transposed) one."""
        return self.operand("a").letter + self.operand("b").letter

    def operands_aligned(self) -> bool:
        """Both operands can be read with 16-byte vectors / described by TMA as they are (D is not
        needed: the kernels check it themselves)."""
        return self.operand("a").vec_aligned and self.operand("b").vec_aligned

    def aligned(self, floats: int = 4) -> bool:
        """The strict rule of the s07-s09 float4 paths: every A, B and D row start is aligned to
        ``floats`` elements (16 bytes for 4), with the unit-stride dimension as the vector
        dimension, for every batch; unlike :meth:`operands_aligned` it counts D, and strides that
        are never used (a single row's, an unbatched problem's batch strides)."""
        bytes_ = 4 * floats
        if any(p % bytes_ for p in (self.a_ptr, self.b_ptr, self.d_ptr)):
            return False
        lead_a, lead_b = self.operand("a").lead, self.operand("b").lead
        if lead_a is None or lead_b is None:
            return False
        return all(s % floats == 0 for s in (lead_a, lead_b, self.ldd, self.a_bs, self.b_bs, self.d_bs))

    # -- copies ---------------------------------------------------------------------------------
    def with_copy(self, copy: Copy) -> "Problem":
        """The problem once operand ``copy.which`` is read from its workspace copy."""
        w = copy.which
        return replace(self, **{f"{w}_rs": copy.rs, f"{w}_cs": copy.cs, f"{w}_bs": copy.per if copy.batched else 0,
                                f"{w}_ptr": 0})

    def repacks(self, for_alignment: bool, a_transpose: bool = False) -> tuple[list[Copy], "Problem"]:
        """The copies the plan makes before a float4/TMA (``aligned_path``) stage, in order, and
        the problem the kernel then sees. With ``a_transpose`` (the dispatcher's or the caller's)
        a strictly K-major (row-major) A is first transposed into a column-major copy; with
        ``for_alignment`` (``repack``) a strictly K-major B is transposed into row-major; then
        every operand that :meth:`Operand.needs_repack` gets a padded copy."""
        copies: list[Copy] = []
        p = self
        if self.K <= 0:
            return copies, p
        if a_transpose and p.operand("a").strictly_k_major:
            c = p.operand("a").m_major_copy()
            copies.append(c)
            p = p.with_copy(c)
        if for_alignment and p.operand("b").strictly_k_major:
            c = p.operand("b").row_major_copy()
            copies.append(c)
            p = p.with_copy(c)
        for which in ("a", "b"):
            op = p.operand(which)
            if op.needs_repack(for_alignment):
                c = op.padded_copy()
                copies.append(c)
                p = p.with_copy(c)
        return copies, p


__all__ = ["VEC", "Copy", "Operand", "Problem", "k_slices", "matrix_layout", "round4"]
