"""s10 cp_async and s11 tma: constraints, variant and fallback selection, tensor-map arguments,
the shared-memory addressing (a Python model of the kernels' index maths), and GPU runs."""
import math

import pytest

from gemmlab.errors import ConfigError
from gemmlab.stages import get
from gemmlab.stages import s10_cp_async, s11_tma, tensor_map
from gemmlab.stages.base import Problem
from gemmlab.stages.s10_cp_async import operand_vec, swizzle_chunk

S10, S11 = get("s10"), get("s11")
ALIGNED = 1 << 40  # a fake 16-byte-aligned device address


def dense(M, N, K, layout="nn", batch=1, a_off=0, b_off=0, d_off=0):
    return Problem.dense(M, N, K, layout, batch, a_ptr=ALIGNED + 4 * a_off, b_ptr=2 * ALIGNED + 4 * b_off,
                         d_ptr=3 * ALIGNED + 4 * d_off)


# ---- constraints: each message names the rule it enforces ---------------------------------------
@pytest.mark.parametrize("spec", [S10, S11], ids=["s10", "s11"])
@pytest.mark.parametrize("override,message", [
    ({"warp_m": 24}, "warp_m=24 must be a multiple of 16"),
    ({"warp_n": 48}, "warp_n=48 must be a multiple of 32"),
    ({"block_m": 96}, "must divide the block tile"),
    ({"block_k": 12}, "block_k=12 must be 8, 16 or 32"),
    ({"k_unroll": 3}, "k_unroll=3 must divide block_k/4"),
    ({"stages": 1}, "stages=1 must be 2.."),
    ({"warp_m": 128, "warp_n": 128, "block_m": 128, "block_n": 128}, "at most 128 fit in registers"),
    ({"stages": 8, "block_k": 32}, "exceeds 232448 B"),
    ({"block_m": 48, "block_n": 32, "warp_m": 16, "warp_n": 32, "block_k": 8}, "does not split evenly"),
])
def test_constraints_name_the_rule(spec, override, message):
    with pytest.raises(ConfigError, match=message):
        spec.config(override)


def test_transpose_in_constraints():
    # (The transposing copy's split rule, rows a multiple of threads/8, holds wherever the 4-byte
    # TileCopier's does: no tile of block_m/block_n 32-256 is legal without it and not with it.)
    with pytest.raises(ConfigError, match="transpose_in=2 must be 0 or 1"):
        S10.config({"transpose_in": 2})


# The producer warpgroup with setmaxnreg (producer_warp=1) spills under NVRTC 13.0, the H200's
# compiler, so the default is producer_warp=0 with the plain A layout; these tests pin the warpgroup
# layout explicitly where that is what they check.
WARPGROUP = {"producer_warp": 1, "a_swizzle": 1}


def test_defaults_are_legal_and_fit():
    for spec in (S10, S11):
        cfg = spec.default_config
        assert spec.constraints(cfg) == []
        assert spec.consumer_threads(cfg) == 256
        assert spec.thread_tile(cfg) == (16, 8)  # 128 accumulators per thread
    assert S10.threads(S10.default_config) == 256
    # s11: 8 consumer warps + a producer warpgroup (one warp issues, setmaxnreg moves the rest's registers)
    assert S11.threads(S11.config(WARPGROUP)) == 384
    assert S11.threads(S11.default_config) == 256
    assert S10.smem_bytes(S10.default_config, {"vec": 1}) == 3 * (128 + 256) * 32 * 4
    # transpose_in: the K-major operands' [k][x] tiles have rows of 4 more floats (no variant: both)
    assert S10.smem_bytes(S10.default_config, {}) == 3 * (128 + 256 + 8) * 32 * 4
    assert S10.smem_bytes(S10.default_config, {"vec": 0, "a_k_major": 1, "b_n_major": 1}) == 3 * (132 + 256) * 32 * 4
    assert S10.smem_bytes(S10.config({"transpose_in": 0}), {"vec": 0, "a_k_major": 1, "b_n_major": 0}) == 3 * 384 * 32 * 4
    # s11: 1 KB alignment slack + 4 stages of 1 KB-aligned A and B boxes + 8 mbarriers
    assert S11.smem_bytes(S11.default_config, {}) == 1024 + 4 * (16384 + 32768) + 64


def test_s11_box_limit():
    with pytest.raises(ConfigError, match="a TMA box is at most 256"):
        S11.config({"block_m": 512, "warp_m": 128, "warp_n": 64, "block_n": 64})


# ---- variant selection --------------------------------------------------------------------------
@pytest.mark.parametrize("layout,akm,bnm", [("nn", 1, 1), ("nt", 1, 0), ("tn", 0, 1), ("tt", 0, 0)])
def test_layout_variants(layout, akm, bnm):
    p = dense(256, 256, 256, layout)
    assert S10.variant(S10.default_config, p) == {"vec": 1, "a_k_major": akm, "b_n_major": bnm}
    assert S11.variant(S11.default_config, p) == {"a_k_major": akm, "b_n_major": bnm}


def test_vec_needs_aligned_rows_not_d():
    cfg = S10.default_config
    assert S10.variant(cfg, dense(64, 64, 7))["vec"] == 0            # A rows 7 floats apart
    assert S10.variant(cfg, dense(64, 64, 64, a_off=1))["vec"] == 0  # A base misaligned
    assert S10.variant(cfg, dense(64, 64, 64, b_off=2))["vec"] == 0
    assert S10.variant(cfg, dense(64, 7, 64, layout="nt"))["vec"] == 1  # B^T rows are K long
    assert S10.variant(cfg, dense(64, 64, 64, d_off=1))["vec"] == 1  # D is checked in the kernel
    # Batched: the batch stride must keep every batch's rows aligned.
    p = Problem(64, 64, 64, 64, 1, 64, 1, 64, batch=2, a_bs=64 * 64 + 1, b_bs=0, d_bs=64 * 64,
                a_ptr=ALIGNED, b_ptr=ALIGNED, d_ptr=ALIGNED)
    assert not p.operands_aligned()


@pytest.mark.parametrize("layout,M,N,K,one", [
    ("tn", 332, 555, 777, "a_vec"), ("tn", 333, 556, 777, "b_vec"),   # A rows M apart, B rows N apart
    ("tt", 332, 555, 777, "a_vec"),                                    # A rows M apart, B rows K apart
    ("tt", 333, 555, 776, None),                                       # a 16-byte K-major B: both 4-byte
    ("nn", 333, 555, 260, None), ("nn", 333, 556, 777, None),          # nn: both 4-byte (ONE_OPERAND_VEC)
])
def test_vec_per_operand(layout, M, N, K, one):
    """An aligned operand keeps the 16-byte copies beside an unaligned one where ONE_OPERAND_VEC says."""
    cfg = S10.default_config
    v = S10.variant(cfg, dense(M, N, K, layout))
    assert v["vec"] == 0 and v in S10.variants(cfg), v
    if one is None:
        assert len(v) == 3 and operand_vec(v) == (False, False), v
    else:
        assert v.get(one) == 1 and len(v) == 4, v
        assert operand_vec(v) == ((True, False) if one == "a_vec" else (False, True))


def test_vec_per_operand_variants():
    cfg = S10.default_config
    # nt: both rows are K long, a misaligned base parts them; a K-major operand keeps no 16-byte copies alone
    assert S10.variant(cfg, dense(64, 64, 64, "nt", a_off=1)) == {"vec": 0, "a_k_major": 1, "b_n_major": 0}
    # the template takes the two sizes apart (..., stages, A_VEC, B_VEC, A_K_MAJOR, B_N_MAJOR, TRANSPOSE_IN,
    # FRAG_PREFETCH, CLUSTER_K, EDGE_SHIFT>); a fully 16-byte variant never transposes
    assert S10.template(cfg, {"vec": 0, "a_k_major": 0, "b_n_major": 1, "a_vec": 1}).endswith(
        ", 3, true, false, false, true, true, false, 1, false>")
    assert S10.template(cfg, {"vec": 1, "a_k_major": 1, "b_n_major": 1}).endswith(
        ", 3, true, true, true, true, false, false, 1, false>")
    mixed = [v for v in S10.variants(cfg) if len(v) == 4]
    assert [(v["a_k_major"], v["b_n_major"], next(k for k in v if k.endswith("_vec") and k != "vec")) for v in mixed] \
        == list(s10_cp_async.ONE_OPERAND_VEC)
    names = {S10.kernel_name(cfg, x) for x in S10.variants(cfg)}
    assert len(names) == len(S10.variants(cfg)) == 8 + len(mixed)


@pytest.mark.parametrize("variant,turned", [
    ({"vec": 0, "a_k_major": 1, "b_n_major": 1}, (True, False)),                 # nn: A
    ({"vec": 0, "a_k_major": 0, "b_n_major": 0}, (False, True)),                 # tt: B
    ({"vec": 0, "a_k_major": 0, "b_n_major": 0, "a_vec": 1}, (False, True)),     # tt, A 16-byte: B still
    ({"vec": 0, "a_k_major": 1, "b_n_major": 0}, (False, False)),                # nt: neither
    ({"vec": 0, "a_k_major": 0, "b_n_major": 1}, (False, False)),                # tn: nothing K-major
    ({"vec": 0, "a_k_major": 0, "b_n_major": 1, "a_vec": 1}, (False, False)),
    ({"vec": 0, "a_k_major": 0, "b_n_major": 1, "b_vec": 1}, (False, False)),
    ({"vec": 1, "a_k_major": 1, "b_n_major": 1}, (False, False)),
])
def test_transposed_in_per_operand(variant, turned):
    cfg = S10.default_config
    assert S10.transposed_in(cfg, variant) == turned
    assert S10.transposed_in(S10.config({"transpose_in": 0}), variant) == (False, False)
    a_t, b_t = turned
    assert S10.smem_bytes(cfg, variant) == 3 * (128 + 256 + 4 * (a_t + b_t)) * 32 * 4


def test_degenerate_strides_pick_the_usable_layout():
    # A is M x 1 with both strides 1 (K == 1): kept M-major; a 1 x K row is kept K-major.
    assert not Problem(8, 8, 1, 1, 1, 8, 1, 8).a_k_major
    assert Problem(1, 8, 8, 1, 1, 8, 1, 8).a_k_major
    assert Problem(8, 8, 1, 1, 1, 1, 1, 8).b_n_major
    assert not Problem(8, 1, 8, 8, 1, 1, 1, 1).b_n_major


# ---- s11 -> s10 fallback --------------------------------------------------------------------------
@pytest.fixture
def tma_available(monkeypatch):
    monkeypatch.setattr(tensor_map, "available", lambda: True)


@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
def test_aligned_problems_stay_on_tma(tma_available, layout):
    for M, N, K in ((4096, 4096, 4096), (1, 7, 1), (129, 131, 132), (1000, 4, 8)):
        p = dense(M, N, K, layout)
        if not s11_tma.tma_problems(S11.default_config, p):
            assert S11.fallback(S11.default_config, p) is None
    assert S11.fallback(S11.default_config, dense(4096, 4096, 4096, layout)) is None
    assert S11.fallback(S11.default_config, dense(256, 256, 64, layout, batch=3)) is None


@pytest.mark.parametrize("problem,reason", [
    (dense(64, 64, 7), "multiple of 16"),                 # A's rows are 28 bytes apart
    (dense(64, 64, 64, a_off=1), "not 16-byte aligned"),
    (dense(64, 64, 64, b_off=3), "not 16-byte aligned"),
    (dense(64, 64, 0), "K == 0"),
    (dense(2, 2, 4, batch=70000), "65535"),
    (Problem(64, 64, 64, 64, 2, 64, 1, 64, a_ptr=ALIGNED, b_ptr=ALIGNED, d_ptr=ALIGNED), "unit innermost stride"),
])
def test_problems_tma_cannot_take_go_to_s10(tma_available, problem, reason):
    cfg = S11.default_config
    assert any(reason in m for m in s11_tma.tma_problems(cfg, problem)), s11_tma.tma_problems(cfg, problem)
    other, other_cfg = S11.fallback(cfg, problem)
    assert other is S10 and S10.constraints(other_cfg) == []
    with pytest.raises(ConfigError, match="cannot run this problem on TMA"):
        S11.check_problem(cfg, problem)


@pytest.mark.parametrize("M,N,K", [(96, 4096, 4096), (4096, 4096, 16), (48, 4096, 11008), (4, 8, 4), (4096, 24, 4096)])
def test_problems_smaller_than_a_tile_stay_on_tma(tma_available, M, N, K):
    """Boxes larger than the tensor (M < block_m, N < block_n, K < block_k) hang over and are
    zero-filled, as at the far edge of any matrix: no fallback to s10."""
    cfg = S11.default_config
    for layout in ("nn", "nt", "tn", "tt"):
        p = dense(M, N, K, layout)
        assert s11_tma.tma_problems(cfg, p) == [] and S11.fallback(cfg, p) is None, (layout, s11_tma.tma_problems(cfg, p))
    maps = s11_tma.operand_maps(cfg, dense(M, N, K))
    assert maps["a"][3][1] == 128 and maps["a"][1][1] == M  # a 128-row box over M rows


def test_fallback_keeps_the_tile_shape():
    cfg = S11.config({"block_m": 64, "warp_m": 32, "block_k": 16, "stages": 6})
    _, s10_cfg = S11.fallback(cfg, dense(64, 64, 7))
    assert (s10_cfg["block_m"], s10_cfg["warp_m"], s10_cfg["block_k"]) == (64, 32, 16)
    assert s10_cfg["stages"] == S10.default_config["stages"]


def test_fallback_halves_large_stages_of_multi_block_tiles(monkeypatch):
    # 64x128 at two blocks per SM: s10's block_k 32 / 3 stages would be 76 KB a block (padded
    # transposed tiles); it gets block_k 16 / 4 stages, measured faster (s11_tma.s10_config_for)
    wide = S11.config({"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "min_blocks": 2})
    _, s10_cfg = S11.fallback(wide, dense(64, 64, 7))
    assert (s10_cfg["block_m"], s10_cfg["block_n"], s10_cfg["block_k"], s10_cfg["stages"]) == (64, 128, 16, 4)
    assert S10.smem_bytes(s10_cfg, {}) <= s11_tma.S10_STAGE_BYTES_MULTI_BLOCK < S10.smem_bytes(
        {**s10_cfg, "block_k": 32, "stages": 3}, {})
    # one block per SM, or small stages: the tile's own block_k and s10's stages (on 4-byte copies
    # of nn, tn and tt, STAND_IN_BLOCK_K16 then moves them to 16 / 4 as well; not nt)
    for over in ({"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "min_blocks": 1},
                 {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "min_blocks": 3}):
        _, s10_cfg = S11.fallback(S11.config(over), dense(64, 64, 7, "nt"))
        assert (s10_cfg["block_k"], s10_cfg["stages"]) == (32, S10.default_config["stages"]), over
        _, s10_cfg = S11.fallback(S11.config(over), dense(64, 64, 7))
        assert (s10_cfg["block_k"], s10_cfg["stages"]) == (16, 4), over
        with monkeypatch.context() as m:
            m.setattr(s11_tma, "STAND_IN_BLOCK_K16", False)
            _, s10_cfg = S11.fallback(S11.config(over), dense(64, 64, 7))
            assert (s10_cfg["block_k"], s10_cfg["stages"]) == (32, S10.default_config["stages"]), over


def test_no_tensor_map_support_means_s10(monkeypatch):
    monkeypatch.setattr(tensor_map, "available", lambda: False)
    assert S11.fallback(S11.default_config, dense(256, 256, 256))[0] is S10


# ---- tensor-map arguments (checked in Python; encoding needs the driver) ------------------------
def test_tensor_map_rules():
    ok = (ALIGNED, (1, 64, 64), (4096, 64, 1), (1, 16, 32))
    assert tensor_map.problems(*ok) == []
    assert tensor_map.problems(*ok, swizzle_bytes=128) == []
    bad = tensor_map.problems(ALIGNED + 4, (1, 64, 63), (4032, 63, 1), (1, 16, 32), 64)
    assert any("not 16-byte aligned" in m for m in bad)
    assert any("252 bytes" in m and "multiple of 16" in m for m in bad)
    assert any("wider than the 64-byte swizzle" in m for m in bad)
    assert any("box dimension 0 is 300" in m for m in tensor_map.problems(ALIGNED, (64, 64), (64, 1), (300, 4)))
    assert any("larger than the tensor's 64" in m for m in tensor_map.problems(ALIGNED, (64, 64), (64, 1), (128, 4)))
    assert any("unit innermost stride" in m for m in tensor_map.problems(ALIGNED, (64, 64), (1, 64), (4, 4)))
    assert any("multiple of 16" in m for m in tensor_map.problems(ALIGNED, (64, 64), (64, 1), (8, 2)))
    with pytest.raises(ValueError, match="not 16-byte aligned"):
        tensor_map.encode(ALIGNED + 8, (64, 64), (64, 1), (8, 8))


# ---- pointing a tensor map at a new address: the driver, then the address word ----------------
class _FakeDriverMap(tensor_map.TensorMapDescriptor):
    """A descriptor whose 'driver' writes 128 bytes of its own: ``layout`` says how the address
    goes in (raw at byte 16, shifted right by 4, or raw plus a byte that depends on address bit 12)."""

    def __init__(self, layout):
        super().__init__((64, 64), (64, 1), (16, 32))
        self.layout = layout
        self.calls = []

    def expected(self, ptr):
        blob = bytearray(range(128))
        word = ptr >> 4 if self.layout == "shifted" else ptr
        blob[16:24] = word.to_bytes(8, "little")
        if self.layout == "raw+bit12":
            blob[40] = (ptr >> 12) & 1
        return bytes(blob)

    def _driver_encode(self, ptr):
        self.calls.append(ptr)
        self.driver_encodes += 1
        import ctypes
        ctypes.memmove(self.addr, self.expected(ptr), 128)


def _bytes(desc):
    import ctypes
    return ctypes.string_at(desc.addr, 128)


ADDRS = [ALIGNED + 4096 * i for i in range(1, 9)]


def test_tensor_map_patches_the_address_word_once_checked():
    d = _FakeDriverMap("raw")
    for p in ADDRS[:3]:
        d.encode(p)
        assert _bytes(d) == d.expected(p)
    assert d.calls == ADDRS[:3] and d.address_word == 16 and d.verified  # two to find it, a third to check it
    for p in ADDRS[3:] + [ADDRS[0]]:
        d.encode(p)
        assert _bytes(d) == d.expected(p)          # exactly the driver's bytes
    assert d.calls == ADDRS[:3] and d.ptr == ADDRS[0]
    d.encode(ADDRS[0])                             # the same address: nothing to do
    assert d.calls == ADDRS[:3]


@pytest.mark.parametrize("layout", ["shifted", "raw+bit12"])
def test_tensor_map_keeps_asking_the_driver_when_the_word_does_not_check_out(layout):
    d = _FakeDriverMap(layout)
    addrs = [ALIGNED, ALIGNED + 16, ALIGNED + 4096] + ADDRS[3:6]  # the third moves address bit 12
    for p in addrs:
        d.encode(p)
        assert _bytes(d) == d.expected(p)
    assert d.calls == addrs and d.address_word == tensor_map.NO_ADDRESS_WORD and not d.verified


def test_address_word_search():
    a, b = ALIGNED, ALIGNED + 256
    blob = lambda p, extra=0: bytes(8) + p.to_bytes(8, "little") + bytes([extra]) * 112  # noqa: E731
    assert tensor_map.address_word(a, blob(a), b, blob(b)) == 8
    assert tensor_map.address_word(a, blob(a), a, blob(a)) == tensor_map.NO_ADDRESS_WORD      # one address
    assert tensor_map.address_word(a, blob(a), b, blob(b, 1)) == tensor_map.NO_ADDRESS_WORD   # other bytes moved
    assert tensor_map.patched(blob(a), 8, b) == blob(b)


@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
def test_operand_maps(layout):
    cfg = S11.config(WARPGROUP)  # a_swizzle=1: the 128-byte swizzled A box
    M, N, K = 300, 260, 100
    maps = s11_tma.operand_maps(cfg, dense(M, N, K, layout))
    a_ptr, a_shape, a_strides, a_box, a_swizzle = maps["a"]
    b_ptr, b_shape, b_strides, b_box, b_swizzle = maps["b"]
    if layout[0] == "n":  # A row-major: (batch, M, K) boxes of block_m x block_k, 128-byte swizzle
        assert (a_shape, a_strides[1:], a_box, a_swizzle) == ((1, M, K), (K, 1), (1, 128, 32), 128)
    else:
        assert (a_shape, a_strides[1:], a_box, a_swizzle) == ((1, K, M), (M, 1), (1, 32, 128), 0)
    if layout[1] == "n":
        assert (b_shape, b_strides[1:], b_box, b_swizzle) == ((1, K, N), (N, 1), (1, 32, 256), 0)
    else:  # Bs[n][k] rows of 32 floats: 128-byte swizzle
        assert (b_shape, b_strides[1:], b_box, b_swizzle) == ((1, N, K), (K, 1), (1, 256, 32), 128)
    assert maps["batch_mask"] == 0
    for w in ("a", "b"):
        assert tensor_map.problems(*maps[w]) == []


def test_operand_maps_batched_and_broadcast():
    cfg = S11.default_config
    p = Problem(64, 64, 64, 64, 1, 64, 1, 64, batch=5, a_bs=64 * 64, b_bs=0, d_bs=64 * 64,
                a_ptr=ALIGNED, b_ptr=ALIGNED, d_ptr=ALIGNED)
    maps = s11_tma.operand_maps(cfg, p)
    assert maps["a"][1] == (5, 64, 64) and maps["a"][2][0] == 64 * 64
    assert maps["b"][1] == (1, 64, 64)        # broadcast: one batch, read by every block
    assert maps["batch_mask"] == 1
    # One row of A: its 5-float row stride is never used, so the map gets a legal one.
    p1 = Problem(1, 64, 5, 5, 1, 64, 1, 64, a_ptr=ALIGNED, b_ptr=ALIGNED, d_ptr=ALIGNED)
    assert s11_tma.operand_maps(cfg, p1)["a"][2][1] == 8
    assert not any("stride" in m for m in s11_tma.tma_problems(cfg, p1))


# ---- s11 producer: a warpgroup (setmaxnreg, sm_90a), one warp, or thread 0 of warp 0 ------------
@pytest.mark.parametrize("override,consumers,producers,arch", [
    (WARPGROUP, 256, 128, "sm_90a"),                              # 8 consumer warps + a producer warpgroup
    ({"producer_warp": 0}, 256, 0, "sm_90"),
    ({"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "producer_warp": 1}, 128, 128, "sm_90a"),
    ({"block_m": 64, "block_n": 128, "warp_m": 64, "warp_n": 64, "producer_warp": 1}, 64, 32, "sm_90"),  # 2 warps: one producer warp
])
def test_s11_producer_geometry(override, consumers, producers, arch):
    cfg = S11.config(override)
    assert (S11.consumer_threads(cfg), S11.producer_threads(cfg)) == (consumers, producers)
    assert S11.threads(cfg) == consumers + producers
    assert S11.compile_arch(cfg, "sm_90") == arch
    assert S11.compile_arch(cfg, "sm_100") == "sm_100"  # sm_90a code runs on 9.0 only
    assert S10.compile_arch(S10.default_config, "sm_90") == "sm_90"


def test_s11_producer_options_are_checked():
    with pytest.raises(ConfigError, match="producer_warp=2 must be 0 or 1"):
        S11.config({"producer_warp": 2})
    with pytest.raises(ConfigError, match="consumer_sync=3 must be 0 or 1"):
        S11.config({"consumer_sync": 3})


def _launch_regs(threads):
    """S11Tma::LAUNCH_REGS: what one SM sub-partition (16K registers) gives each of its warps."""
    per_smsp = -(-(threads // 32) // 4)
    return min(255, 16384 // (32 * per_smsp) // 8 * 8)


@pytest.mark.parametrize("override", [{}, {"consumer_sync": 1}, {"block_k": 16, "stages": 8}, {"producer_warp": 0},
                                      {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32}])
def test_s11_compiles_without_spills_and_rebalances_registers(override):
    """The producer warpgroup drops to 24 registers and the consumers rise to 240 (setmaxnreg). The
    consumers' increase waits for registers in the block's pool, which holds threads x the launch
    count: the kernel assumes ptxas launches it with exactly LAUNCH_REGS, so check that it does."""
    from gemmlab.analysis import sass
    from gemmlab.api import kernel_for

    cfg = S11.config(override)
    ck = kernel_for(S11, cfg, S11.variants(cfg)[0], "sm_90")
    res = sass.resources(ck.cubin)
    insns = sass.instructions(ck.cubin)
    assert res["local_bytes"] == 0 and not sass.has_opcode(insns, "LDL") and not sass.has_opcode(insns, "STL")
    rebalances = S11.producer_threads(cfg) == 128 and _launch_regs(S11.threads(cfg)) < 240
    assert sass.has_opcode(insns, "USETMAXREG") == rebalances, (ck.name, sass.mix(insns))
    if rebalances:
        assert ck.arch == "sm_90a"
        assert res["registers"] == _launch_regs(S11.threads(cfg)), res


def test_extra_params_are_grid_constant_tensor_maps():
    params = S11.extra_params(S11.default_config, S11.variants(S11.default_config)[0])
    assert [name for _, name in params] == ["a_map", "b_map", "tma_batch_mask"]
    assert all("__grid_constant__" in decl for decl, _ in params[:2])


# ---- the shared-memory addressing, simulated ---------------------------------------------------
# A Python model of the kernels' index maths: where the copies (s10 cp.async, s11 TMA boxes) put
# each element of a tile, and which elements each thread's LDS.128 then read. Every thread must
# read exactly A[row_i][k] and B[k][col_j] for the outputs its epilogue writes.
def _swizzle_bits(byte_offset, row_bytes):
    """TMA SWIZZLE_{32,64,128}B as address bits: bits [4, 4+b) ^= bits [7, 7+b), b = log2(row/16)."""
    b = int(math.log2(row_bytes // 16))
    mask = (1 << b) - 1
    return byte_offset ^ (((byte_offset >> 7) & mask) << 4)


def _thread_geometry(cfg, variant, tid):
    wn, wm = cfg["warp_n"], cfg["warp_m"]
    warps_n = cfg["block_n"] // wn
    warp, lane = divmod(tid, 32)
    warp_row, warp_col = divmod(warp, warps_n)
    lane_row, lane_col = divmod(lane, 8)
    a_swizzled = variant["a_k_major"] and cfg["a_swizzle"]
    m_base = warp_row * wm + (lane_row if a_swizzled else lane_row * 4)
    n_base = warp_col * wn + (lane_col * 4 if variant["b_n_major"] else lane_col)
    if a_swizzled:  # single rows 4 apart
        rows = [m_base + 4 * i for i in range(wm // 4)]
    else:                     # groups of 4 rows 16 apart
        rows = [m_base + (i // 4) * 16 + i % 4 for i in range(wm // 4)]
    cols = [n_base + ((j // 4) * 32 + j % 4 if variant["b_n_major"] else j * 8) for j in range(wn // 8)]
    return m_base, n_base, rows, cols


def _copier_image(cfg, variant, operand, threads, vec):
    """{float offset in the tile: (row, col) of the operand} written by TileCopier."""
    bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
    if operand == "a":
        outer, inner, inner_is_k, swz = ((bm, bk, True, bool(cfg["a_swizzle"])) if variant["a_k_major"]
                                         else (bk, bm, False, False))
    else:
        outer, inner, inner_is_k, swz = (bn, bk, True, True) if not variant["b_n_major"] else (bk, bn, False, False)
    unit = 4 if vec else 1
    per_row = inner // unit
    image = {}
    for tid in range(threads):
        for it in range(outer * per_row // threads):
            u = tid + it * threads
            o, i = u // per_row, (u % per_row) * unit
            for e in range(unit):
                ii = i + e
                off = o * inner + (swizzle_chunk(bk, o, ii // 4) * 4 + ii % 4 if swz else ii)
                assert off not in image, "two copies write one shared word"
                # logical element: A as (m, k), B as (k, n)
                if operand == "a":
                    image[off] = (o, ii) if inner_is_k else (ii, o)
                else:
                    image[off] = (ii, o) if inner_is_k else (o, ii)
    assert sorted(image) == list(range(outer * inner)), "the copies do not cover the tile exactly"
    return image


def _tma_image(cfg, variant, operand):
    """{float offset: (row, col)} written by the TMA box (row-major box, swizzled for Bs[n][k])."""
    bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
    if operand == "a":
        outer, inner = (bm, bk) if variant["a_k_major"] else (bk, bm)
        swizzled = bool(variant["a_k_major"] and cfg["a_swizzle"])
    else:
        outer, inner = (bk, bn) if variant["b_n_major"] else (bn, bk)
        swizzled = not variant["b_n_major"]
    image = {}
    for o in range(outer):
        for i in range(inner):
            byte = 4 * (o * inner + i)
            if swizzled:
                byte = _swizzle_bits(byte, 4 * bk)
            logical = (o, i)
            if operand == "a" and not variant["a_k_major"]:
                logical = (i, o)
            if operand == "b" and not variant["b_n_major"]:
                logical = (i, o)
            image[byte // 4] = logical
    assert sorted(image) == list(range(outer * inner))
    return image


def _check_reads(cfg, variant, a_image, b_image, threads):
    bm, bn, bk = cfg["block_m"], cfg["block_n"], cfg["block_k"]
    covered = set()
    for tid in range(threads):
        m_base, n_base, rows, cols = _thread_geometry(cfg, variant, tid)
        a_swizzle = swizzle_chunk(bk, m_base, 0)
        b_swizzle = swizzle_chunk(bk, n_base, 0)
        covered |= {(r, c) for r in rows for c in cols}
        for g in range(bk // 4):
            for kk in range(4):
                k = 4 * g + kk
                for i, r in enumerate(rows):  # WarpTileCore::multiply, A side
                    if variant["a_k_major"] and cfg["a_swizzle"]:  # the kernel's shortcut for f(m_base + 4i)
                        chunk = g ^ a_swizzle ^ ((i & 1) * (bk // 8))
                        off = (m_base + 4 * i) * bk + chunk * 4 + kk
                    elif variant["a_k_major"]:
                        off = (m_base + (i // 4) * 16 + i % 4) * bk + 4 * g + kk
                    else:
                        off = k * bm + m_base + (i // 4) * 16 + i % 4
                    assert a_image[off] == (r, k), (tid, g, kk, i)
                for j, c in enumerate(cols):  # B side
                    if variant["b_n_major"]:
                        off = k * bn + n_base + (j // 4) * 32 + j % 4
                    else:
                        off = (n_base + j * 8) * bk + (g ^ b_swizzle) * 4 + kk
                    assert b_image[off] == (k, c), (tid, g, kk, j)
    assert covered == {(r, c) for r in range(bm) for c in range(bn)}, "the epilogue must cover the block once"


SMALL = {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "k_unroll": 1, "stages": 2}


@pytest.mark.parametrize("a_swizzle", [1, 0])
@pytest.mark.parametrize("block_k", [8, 16, 32])
@pytest.mark.parametrize("index", range(len(S10.variants(S10.default_config))))
def test_s10_copies_and_fragment_reads_agree(index, block_k, a_swizzle):
    cfg = S10.config(dict(SMALL, block_k=block_k, a_swizzle=a_swizzle))
    variant = S10.variants(cfg)[index]
    threads = S10.threads(cfg)
    a_vec, b_vec = operand_vec(variant)
    a = _copier_image(cfg, variant, "a", threads, a_vec)
    b = _copier_image(cfg, variant, "b", threads, b_vec)
    _check_reads(cfg, variant, a, b, threads)


@pytest.mark.parametrize("a_swizzle", [1, 0])
@pytest.mark.parametrize("block_k", [8, 16, 32])
@pytest.mark.parametrize("index", range(4))
def test_s11_tma_boxes_and_fragment_reads_agree(index, block_k, a_swizzle):
    cfg = S11.config(dict(SMALL, block_k=block_k, a_swizzle=a_swizzle))
    variant = S11.variants(cfg)[index]
    _check_reads(cfg, variant, _tma_image(cfg, variant, "a"), _tma_image(cfg, variant, "b"), S11.consumer_threads(cfg))


def test_default_config_reads_agree():
    for spec in (S10, S11):
        cfg = spec.default_config
        for variant in spec.variants(cfg)[:4]:
            if spec is S10:
                a = _copier_image(cfg, variant, "a", 256, variant["vec"])
                b = _copier_image(cfg, variant, "b", 256, variant["vec"])
            else:
                a, b = _tma_image(cfg, variant, "a"), _tma_image(cfg, variant, "b")
            _check_reads(cfg, variant, a, b, 256)


def test_smem_accesses_shapes_and_banks():
    from gemmlab.analysis import banks

    for spec in (S10, S11):
        cfg = spec.default_config
        for variant in spec.variants(cfg):
            acc = spec.smem_accesses(cfg, variant)
            tm, tn = spec.thread_tile(cfg)
            # the fragments are read in the layout the copies wrote: s10's 4-byte copies turn K-major
            # operands into [k][x] tiles (transpose_in), so the core then reads A M-major, B N-major
            layout = S10.smem_layout(cfg, variant) if spec is S10 else variant
            turned = bool(layout.get("a_t") or layout.get("b_t"))
            nn = variant["a_k_major"] and variant["b_n_major"]
            tt = not variant["a_k_major"] and not variant["b_n_major"]
            a_vec, b_vec = operand_vec(variant)
            # nn turns a 4-byte A, tt a 4-byte B (beside a 16-byte A too), nt neither
            assert turned == (spec is S10 and ((nn and not a_vec) or (tt and not b_vec)))
            if turned:  # nn: A into [k][m]; tt: B into [k][n]; the core then reads A M-major, B N-major
                assert not layout["a_k_major"] and layout["b_n_major"]
                assert (layout["a_ld"], layout["b_ld"]) == ((132, 256) if nn else (128, 260))
            variant = layout
            # s11 reads a K-major B one k at a time in tt with 16 rows per thread (b_scalar's rule;
            # the default config's k_unroll 2 keeps LDS.128 in nt)
            b_scalar = spec is S11 and S11.b_scalar(cfg, variant)
            assert b_scalar == (spec is S11 and not variant["a_k_major"] and not variant["b_n_major"]), variant
            # One k group: A_K one LDS.128 per row, A_M 4 k x tm/4; B_N 4 k x tn/4, B_K one per column
            # (b_scalar: one LDS.32 per column and k).
            assert len(acc["a_load"]) == (tm if variant["a_k_major"] else 4 * tm // 4)
            assert len(acc["b_load"]) == (4 * tn // 4 if variant["b_n_major"] else 4 * tn if b_scalar else tn)
            for kind in ("a_load", "b_load"):
                width = 4 if kind == "b_load" and b_scalar else 16
                for w, addrs in acc[kind]:
                    assert w == width and len(addrs) == 32 and all(a % width == 0 for a in addrs)
                # conflict-free: the bank model finds no more wavefronts than the ideal
                res = banks.analyse_kind(acc[kind])
                if kind == "a_load" and variant["a_k_major"] and cfg["a_swizzle"] == 0:
                    # plain row-major As: two lanes of a quarter-warp share banks (2-way), the price of
                    # the swizzle's extra address instructions (measured: as0 is faster on the H200)
                    assert res["wavefronts"] == 2 * res["ideal"], (spec.id, variant, kind, res)
                else:
                    assert res["wavefronts"] == res["ideal"], (spec.id, variant, kind, res)
            if spec is S11:
                assert acc["a_store"] == [] and acc["b_store"] == []
            else:
                for kind, x, unit in (("a_store", 128, 4 if a_vec else 1), ("b_store", 256, 4 if b_vec else 1)):
                    assert len(acc[kind]) == x * 32 // unit // 256
                    assert all(width == 4 * unit for width, _ in acc[kind])
                # the transposing copies write 32 different banks (8 k x 4 rows, padded rows)
                for kind in ("a_store", "b_store"):
                    if variant.get(kind[0] + "_t"):
                        res = banks.analyse_kind(acc[kind])
                        assert res["wavefronts"] == res["ideal"] == 1 and res["total_wavefronts"] == len(acc[kind]), (variant, kind, res)
    assert S10.smem_accesses(S10.default_config) == S10.smem_accesses(S10.default_config, S10.variants(S10.default_config)[0])


# ---- GPU: results, and which kernel ran ------------------------------------------------------------
@pytest.mark.gpu
@pytest.mark.parametrize("stage", ["s10", "s11"])
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("M,N,K", [(1, 1, 1), (1, 7, 1), (7, 1, 33), (129, 131, 127), (256, 512, 4096 + 4),
                                   (300, 260, 36), (64, 64, 96), (513, 257, 1023)])
def test_gpu_results(stage, layout, M, N, K):
    from gemmlab.check import check_stage

    r = check_stage(stage, M, N, K, layout)
    assert r.correct, r


@pytest.mark.gpu
@pytest.mark.parametrize("config", [{"block_k": 8, "k_unroll": 1, "stages": 2}, {"block_k": 16, "stages": 6},
                                    {"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64}])
@pytest.mark.parametrize("stage", ["s10", "s11"])
def test_gpu_other_configs(stage, config):
    from gemmlab.check import check_stage

    for layout in ("nn", "tt"):
        r = check_stage(stage, 333, 270, 1000, layout, config=config)
        assert r.correct, (layout, r)


S10_TILES = [{"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "stages": 3, "min_blocks": 2},
             {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "stages": 3, "min_blocks": 3},
             {"block_m": 32, "block_n": 64, "warp_m": 16, "warp_n": 32, "stages": 3, "min_blocks": 4},
             {"block_m": 128, "block_n": 32, "warp_m": 32, "warp_n": 32, "stages": 3, "min_blocks": 2},
             {"block_m": 128, "block_n": 128, "warp_m": 64, "warp_n": 64, "block_k": 16, "k_unroll": 1},
             {}]


@pytest.mark.gpu
@pytest.mark.parametrize("transpose_in", [1, 0])
@pytest.mark.parametrize("tile", range(len(S10_TILES)))
def test_gpu_s10_transpose_in(transpose_in, tile):
    """s10's 4-byte copies with K-major operands turned into [k][x] tiles (transpose_in=1) and
    kept as they are (0): every layout, unaligned shapes with whole tiles inside (the copies'
    fast path) and partial ones at every edge, batched, and operands with no unit stride."""
    import torch

    import gemmlab
    from gemmlab.check import check_stage, compare

    cfg = {**S10_TILES[tile], "transpose_in": transpose_in}
    for layout in ("nn", "nt", "tn", "tt"):
        for M, N, K, batch in ((333, 555, 777, None), (257, 301, 99, 3), (5, 7, 9, None)):
            r = check_stage("s10", M, N, K, layout, config=cfg, batch=batch)
            assert r.correct, (cfg, layout, M, N, K, batch, r)
    # every other element of a wider array: no dimension of unit stride
    a = (torch.randn(300, 2 * 201, device="cuda") * torch.rand(300, 402, device="cuda").exp2())[:, ::2]
    b = torch.randn(2 * 201, 2 * 263, device="cuda")[::2, ::2]
    for x, y in ((a, b), (b.t(), a.t())):
        out = gemmlab.gemm(x, y, stage="s10", config=cfg)
        assert compare(out, x.double() @ y.double(), x.shape[1]).correct, (cfg, x.stride(), y.stride())


@pytest.mark.gpu
@pytest.mark.parametrize("transpose_in", [1, 0])
@pytest.mark.parametrize("tile", range(len(S10_TILES)))
def test_gpu_s10_one_operand_vec(transpose_in, tile):
    """One operand on 16-byte copies beside the other on 4-byte ones (each variant of
    ONE_OPERAND_VEC, test_vec_per_operand's shapes), with interior and edge tiles, batched, and a
    tn with A's base misaligned by a float."""
    import torch

    import gemmlab
    from gemmlab.check import check_stage, compare

    cfg = {**S10_TILES[tile], "transpose_in": transpose_in}
    for layout, M, N, K in (("tn", 332, 555, 777), ("tn", 333, 556, 777), ("tt", 332, 555, 777)):
        assert len(S10.variant(S10.config(cfg), dense(M, N, K, layout))) == 4  # one operand 16-byte
        for batch in (None, 2):
            r = check_stage("s10", M, N, K, layout, config=cfg, batch=batch)
            assert r.correct, (cfg, layout, M, N, K, batch, r)
    M, N, K = 300, 520, 516
    a = torch.randn(K * M + 1, device="cuda")[1:].view(K, M).t()  # M-major, base 4 bytes off
    b = torch.randn(K, N, device="cuda")
    out = gemmlab.gemm(a, b, stage="s10", config=cfg)
    assert compare(out, a.double() @ b.double(), K).correct, cfg


@pytest.mark.gpu
@pytest.mark.parametrize("stage", ["s10", "s11"])
def test_gpu_batched_and_broadcast(stage):
    import torch

    import gemmlab
    from gemmlab.check import compare

    a = torch.rand(3, 132, 68, device="cuda") - 0.5   # s11: TMA with a 3-D map for A,
    b = torch.rand(1, 68, 264, device="cuda") - 0.5   # and B broadcast (batch_mask bit 1 clear)
    out = gemmlab.gemm_batched(a, b, stage=stage)
    ref = a.double() @ b.double()
    assert compare(out, ref, 68).correct


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("M,N,K", [(388, 268, 164), (128, 256, 32), (260, 1000, 4100), (4096, 256, 36)])
def test_gpu_s11_tma_edges(monkeypatch, capsys, layout, M, N, K):
    """Shapes TMA takes (16-byte strides, at least one box) with partial boxes at every edge."""
    from gemmlab.check import check_stage

    monkeypatch.setenv("GEMMLAB_PRINT_CONFIG", "1")
    r = check_stage("s11", M, N, K, layout)
    assert "kernel gemmlab_s11_tma" in capsys.readouterr().err
    assert r.correct, r


@pytest.mark.gpu
def test_gpu_s11_runs_tma_when_it_can_and_s10_when_not(monkeypatch, capsys):
    import torch

    import gemmlab

    assert tensor_map.available(), "this cuda.core cannot build TMA descriptors: s11 would always run s10"
    monkeypatch.setenv("GEMMLAB_PRINT_CONFIG", "1")
    a = torch.rand(256, 256, device="cuda")
    gemmlab.gemm(a, a, stage="s11")
    torch.cuda.synchronize()
    assert "kernel gemmlab_s11_tma" in capsys.readouterr().err
    odd = torch.rand(256, 255, device="cuda")  # rows of 255 floats: not 16-byte strides
    out = gemmlab.gemm(odd, odd.t().contiguous(), stage="s11")
    torch.cuda.synchronize()
    assert "kernel gemmlab_s10_cp_async" in capsys.readouterr().err
    assert torch.allclose(out.double(), odd.double() @ odd.t().double(), rtol=1e-4, atol=1e-4)


@pytest.mark.gpu
def test_gpu_tensor_map_encodes_and_rejects():
    import torch

    x = torch.empty(64, 64, device="cuda")
    desc = tensor_map.encode(x.data_ptr(), (1, 64, 64), (4096, 64, 1), (1, 32, 32), 128)
    assert type(desc).__name__ == "TensorMapDescriptor"
    with pytest.raises(ValueError, match="multiple of 16"):
        tensor_map.encode(x.data_ptr(), (1, 64, 63), (4096, 63, 1), (1, 32, 32))



@pytest.mark.gpu
@pytest.mark.parametrize("stage", ["s10", "s11"])
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("split", [1, 2])
def test_gpu_separate_c_epilogue_every_layout(stage, layout, split):
    """The epilogue that loads a separate c ahead of its stores (mma/warp_tile.cuh store_with_c,
    the in-cluster reduce's early load) on the large tiles the runtime picks: a stride-0 bias, a
    column vector, a row-major and a column-major c, with partial tiles at the M and N edges,
    alpha and beta not 1, every operand layout, with and without K in two slices (s11: added in
    a cluster). out starts as NaN, so an element the epilogue misses fails."""
    import torch

    import gemmlab
    from gemmlab.check import compare

    M, N, K = 300, 530, 200
    cfg = {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64}
    if split > 1:
        cfg["split_k"] = split
    a = torch.randn(M, K, device="cuda") if layout[0] == "n" else torch.randn(K, M, device="cuda").t()
    b = torch.randn(K, N, device="cuda") if layout[1] == "n" else torch.randn(N, K, device="cuda").t()
    addends = {"bias row": torch.randn(N, device="cuda").expand(M, N),
               "column": torch.randn(M, 1, device="cuda").expand(M, N),
               "row-major": torch.randn(M, N, device="cuda"),
               "column-major": torch.randn(N, M, device="cuda").t()}
    for name, c in addends.items():
        out = torch.full((M, N), float("nan"), device="cuda")
        gemmlab.gemm(a, b, c, alpha=0.75, beta=-1.5, out=out, stage=stage, config=cfg)
        torch.cuda.synchronize()
        ref = 0.75 * (a.double() @ b.double()) - 1.5 * c.double()
        r = compare(out, ref, K)
        assert r.correct, (name, r)


# ---- ffma_rotate: where each run of FFMAs starts (mma/warp_tile.cuh run_column) ----------------
@pytest.mark.parametrize("a_k_major", [1, 0], ids=["nn", "tn"])
def test_ffma_rotate_cuts_register_bank_conflicts_of_the_large_tile(a_k_major):
    """The mechanism, in `gemmlab sass`'s 4-bank count, on the runtime's main tile (128x256,
    k_unroll 4): starting each run of FFMAs at column (c + 2) mod 4 leaves fewer FFMAs of the main
    loop reading two registers of one bank (nn 198 -> 119, tn 156 -> 30 per loop trip with NVRTC
    13.0), with the same FFMAs, the same loop length and no local memory. (The issue model's 2
    banks predict no gain; the H200 decides: docs/stages/s10-s11.md.)"""
    from gemmlab.analysis import sass
    from gemmlab.api import kernel_for

    stats = {}
    for fr in (0, 1):
        cfg = S11.config({"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "k_unroll": 4, "ffma_rotate": fr})
        cubin = kernel_for(S11, cfg, {"a_k_major": a_k_major, "b_n_major": 1}, "sm_90").cubin
        stats[fr] = {**sass.main_loop_stats(sass.instructions(cubin)), **sass.resources(cubin)}
    before, after = stats[0], stats[1]
    assert after["main_loop_ffma"] == before["main_loop_ffma"] == 2048
    assert after["main_loop_instructions"] == before["main_loop_instructions"]
    assert after["local_bytes"] == 0
    assert after["reg_bank_conflicts"] <= 0.7 * before["reg_bank_conflicts"], (before["reg_bank_conflicts"],
                                                                              after["reg_bank_conflicts"])


# ---- b_scalar: a K-major B one k at a time (mma/warp_tile.cuh B_SCALAR) --------------------------
def _main_loop(cfg, variant):
    from gemmlab.analysis import sass
    from gemmlab.api import kernel_for

    cubin = kernel_for(S11, cfg, variant, "sm_90").cubin
    insns = sass.instructions(cubin)
    body = sass.main_loop(insns)
    return body, sass.ffma_register_stats(body, banks=2), sass.resources(cubin), insns


@pytest.mark.parametrize("layout,k_unroll,most", [("tt", 4, 0.55), ("tt", 2, 0.55), ("nt", 4, 0.75)])
def test_b_scalar_cuts_register_bank_conflicts_of_a_k_major_b(layout, k_unroll, most):
    """The mechanism, on the runtime's main tile (128x256, 16x8 per thread): with 4 k of a column per
    LDS.128 every value of B of one k sits in one of the 2 register banks, so half the main loop's
    FFMAs read two registers of one bank (tt 993 and nt 978 extra cycles per 2048 FFMAs at
    k_unroll 4, NVRTC 13.0); one k per load, and in tt runs of FFMAs along M that share B's value,
    cut that (tt 468, nt 672) for 3 more LDS per column and 4 k. No local memory either way
    (the LDS.128 nt kernel at k_unroll 4 keeps an 88-byte stack)."""
    from gemmlab.analysis import sass
    from gemmlab.analysis.issue_model import slots_per_ffma

    variant = {"a_k_major": int(layout[0] == "n"), "b_n_major": 0}
    tile = {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "k_unroll": k_unroll}
    (before, b_stats, _, b_insns), (after, a_stats, a_res, a_insns) = (
        _main_loop(S11.config({**tile, "b_scalar": v}), variant) for v in (0, 1))
    ffma = 512 * k_unroll
    assert sum(sass._is_ffma(x.op) for x in before) == sum(sass._is_ffma(x.op) for x in after) == ffma
    lds32 = sum(x.op == "LDS" for x in after)
    assert lds32 == 4 * 8 * k_unroll and sum(x.op == "LDS" for x in before) == 0  # 4 k x 8 columns a group
    assert a_res["local_bytes"] == 0 and a_res.get("stack_bytes", 0) == 0
    assert a_stats["reg_bank_conflict_cycles"] <= most * b_stats["reg_bank_conflict_cycles"], (b_stats, a_stats)
    # the issue model's slots per FFMA (instructions + conflict cycles): what the H200 confirmed
    assert slots_per_ffma(a_insns) < slots_per_ffma(b_insns)
    assert slots_per_ffma(a_insns) == pytest.approx((len(after) + a_stats["reg_bank_conflict_cycles"]) / ffma)


def test_b_scalar_rule_and_name():
    with pytest.raises(ConfigError, match="b_scalar=2 must be -1"):
        S11.config({"b_scalar": 2})
    tt, nt, tn = ({"a_k_major": a, "b_n_major": b} for a, b in ((0, 0), (1, 0), (0, 1)))
    big, narrow = S11.default_config, S11.config({"block_m": 64, "block_n": 256, "warp_m": 32, "warp_n": 64})
    assert S11.b_scalar(big, tt) and not S11.b_scalar(narrow, tt)  # 16 rows a thread, not 8
    assert not S11.b_scalar(big, nt) and not S11.b_scalar(big, tn)  # nt: k_unroll 2 (the default)
    ku4 = S11.config({"k_unroll": 4})
    assert S11.b_scalar(ku4, nt) and S11.b_scalar(ku4, tt) and not S11.b_scalar(S11.config({"k_unroll": 8}), nt)
    assert S11.b_scalar(S11.config({"b_scalar": 1}), nt) and not S11.b_scalar(S11.config({"b_scalar": 1}), tn)
    assert not S11.b_scalar(S11.config({"b_scalar": 0}), tt)
    assert "_bs" not in S11.kernel_name(big, tt)
    assert "_bs1_" in S11.kernel_name(S11.config({"b_scalar": 1}), nt)


def test_ffma_rotate_is_0_or_1_and_named_in_the_kernel():
    with pytest.raises(ConfigError, match="ffma_rotate=2 must be 0 or 1"):
        S11.config({"ffma_rotate": 2})
    assert S11.default_config["ffma_rotate"] == 0
    assert "_fr1_" in S11.kernel_name(S11.config({"ffma_rotate": 1}), {"a_k_major": 1, "b_n_major": 1})
    # at its default the knob is left out of the name: the default kernels keep the names that
    # recorded profiles (tests/data/ncu) and the README's SASS examples carry
    name = S11.kernel_name(S11.default_config, {"a_k_major": 1, "b_n_major": 1})
    assert "_fr" not in name and name.endswith("_mb1_akm1_bnm1"), name


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nt", "tt"])
@pytest.mark.parametrize("M,N,K", [(388, 268, 164), (260, 1000, 4100), (129, 257, 33)])
@pytest.mark.parametrize("b_scalar", [0, 1])
def test_gpu_s11_b_scalar_matches_float64(layout, M, N, K, b_scalar):
    """A K-major B read by LDS.128 or one k at a time, FFMAs in either order: edges, deep K, two
    tiles (16 and 8 rows a thread), split-K in a cluster."""
    from gemmlab.check import check_stage

    for tile in ({"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "k_unroll": 4},
                 {"block_m": 64, "block_n": 256, "warp_m": 32, "warp_n": 64},
                 {"block_m": 128, "block_n": 128, "warp_m": 64, "warp_n": 64, "stages": 3, "split_k": 2}):
        r = check_stage("s11", M, N, K, layout, config={**tile, "b_scalar": b_scalar})
        assert r.correct, (layout, tile, r)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("M,N,K", [(388, 268, 164), (260, 1000, 4100)])
def test_gpu_s11_ffma_rotate_matches_float64(layout, M, N, K):
    """ffma_rotate=1 only reorders FFMAs into different accumulators: every layout, edges, deep K."""
    from gemmlab.check import check_stage

    for tile in ({"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "k_unroll": 4},
                 {"block_m": 64, "block_n": 256, "warp_m": 32, "warp_n": 64}):
        r = check_stage("s11", M, N, K, layout, config={**tile, "ffma_rotate": 1})
        assert r.correct, (layout, tile, r)


# ---- frag_prefetch: B's fragments one group of 4 k ahead (mma/warp_tile.cuh FRAG_PREFETCH) --------
PF_TILES = {
    "128x256 ku4": {"k_unroll": 4},
    "128x128 bk16 ku1 x2": {"block_m": 128, "block_n": 128, "warp_m": 64, "warp_n": 64, "block_k": 16,
                            "k_unroll": 1, "min_blocks": 2},
    "64x64 x3": {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "min_blocks": 3},
    "64x128 bk16 ku1 x3": {"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "block_k": 16,
                           "k_unroll": 1, "min_blocks": 3},
}


@pytest.mark.parametrize("tile", list(PF_TILES))
@pytest.mark.parametrize("variant", [{"a_k_major": 1, "b_n_major": 1}, {"a_k_major": 0, "b_n_major": 0}],
                         ids=["nn", "tt"])
def test_frag_prefetch_unrolls_the_stage_and_loads_b_a_group_ahead(tile, variant):
    """The mechanism in the SASS: with frag_prefetch=1 the whole stage is one loop trip (its
    barrier wait and copies inside), with every FFMA and LDS of the stage, no local memory, and B's
    loads of the second group issued before the first group's FFMAs are done (ptxas may move
    loads, but here they must stay ahead of the FFMAs that precede them in program order)."""
    from gemmlab.analysis import sass
    from gemmlab.api import kernel_for

    cfg0 = S11.config({**PF_TILES[tile], "frag_prefetch": 0})
    cfg1 = S11.config({**PF_TILES[tile], "frag_prefetch": 1})
    tm, tn = S11.thread_tile(cfg0)
    stage_ffma = tm * tn * cfg0["block_k"]
    cubin0, cubin1 = (kernel_for(S11, c, variant, "sm_90").cubin for c in (cfg0, cfg1))
    before, after = ({**sass.main_loop_stats(sass.instructions(c)), **sass.resources(c)} for c in (cubin0, cubin1))
    assert before["main_loop_ffma"] == tm * tn * 4 * cfg0["k_unroll"]
    assert after["main_loop_ffma"] == stage_ffma
    assert after["local_bytes"] == 0 and after.get("stack_bytes", 0) == 0
    body = sass.main_loop(sass.instructions(cubin1))
    ops = [x.op for x in body]
    assert any(op.startswith("SYNCS") for op in ops)  # the stage's mbarrier wait is inside the trip
    first_ffma = next(i for i, op in enumerate(ops) if sass._is_ffma(op))
    group_ffma = tm * tn * 4
    ffma_seen, lds_before_group_end = 0, 0
    for op in ops[first_ffma:]:
        if sass._is_ffma(op):
            ffma_seen += 1
            if ffma_seen == group_ffma:
                break
        elif op.startswith("LDS"):
            lds_before_group_end += 1
    assert lds_before_group_end >= 1, "no load of the next group among the first group's FFMAs"


def test_frag_prefetch_rule_and_name():
    """-1 (the default) prefetches where a thread holds at most 32 accumulators (64x64 x3's 8x4, the
    decode tiles' 4x8), not at 16x8 (128x256, 128x128); the kernel is named fp1 where it prefetches
    and keeps its old name elsewhere; s11's fallback hands the setting to s10."""
    from gemmlab.stages.s11_tma import s10_config_for

    for spec in (S10, S11):
        with pytest.raises(ConfigError, match="frag_prefetch=2 must be -1"):
            spec.config({"frag_prefetch": 2})
        assert spec.default_config["frag_prefetch"] == -1
    v = {"a_k_major": 1, "b_n_major": 1}
    small = {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "min_blocks": 3}
    decode = {"block_m": 32, "block_n": 128, "warp_m": 16, "warp_n": 64, "min_blocks": 2}
    mid = {"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "min_blocks": 2}
    assert S11.frag_prefetch(S11.config(small)) and S11.frag_prefetch(S11.config(decode))
    assert not S11.frag_prefetch(S11.default_config) and not S11.frag_prefetch(S11.config(mid))
    assert not S11.frag_prefetch(S11.config({**small, "frag_prefetch": 0}))
    assert S11.frag_prefetch(S11.config({"frag_prefetch": 1}))
    assert S11.template(S11.config(small), v).endswith(", true>")
    assert S11.template(S11.default_config, v).endswith(", false>")
    assert "_fp1_" in S11.kernel_name(S11.config(small), v)
    assert "_fp1_" in S11.kernel_name(S11.config({"frag_prefetch": 1}), v)
    assert "_fp" not in S11.kernel_name(S11.config({**small, "frag_prefetch": 0}), v)
    name = S11.kernel_name(S11.default_config, v)
    assert "_fp" not in name and name.endswith("_mb1_akm1_bnm1"), name
    assert S10.frag_prefetch(s10_config_for(S11.config(small)))
    assert not S10.frag_prefetch(s10_config_for(S11.config({**small, "frag_prefetch": 0})))


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("M,N,K", [(388, 268, 164), (260, 1000, 4100), (129, 257, 36), (131, 259, 37)])
def test_gpu_s11_frag_prefetch_matches_float64(layout, M, N, K):
    """frag_prefetch=1 only moves B's loads earlier: every layout, edges, K not a multiple of the
    stage, deep K, split-K (in a cluster and through the workspace), several tiles; 131x259x37
    has rows that are not 16-byte aligned, so s11 hands it to s10 with the setting."""
    from gemmlab.check import check_stage

    for name, tile in PF_TILES.items():
        for split in (1, 3):
            r = check_stage("s11", M, N, K, layout, config={**tile, "frag_prefetch": 1, "split_k": split})
            assert r.correct, (layout, name, split, r)


# ---- b_transpose: a K-major B turned into [k][n] tiles in shared memory (copy/smem_transpose.cuh) ----
BT_TILES = {
    "128x256 ku4 s3": {"block_m": 128, "block_n": 256, "warp_m": 64, "warp_n": 64, "k_unroll": 4, "stages": 3},
    "128x128 bk16 ku1 x2": {"block_m": 128, "block_n": 128, "warp_m": 64, "warp_n": 64, "block_k": 16,
                            "k_unroll": 1, "min_blocks": 2},
    "64x64 x3 s3": {"block_m": 64, "block_n": 64, "warp_m": 32, "warp_n": 32, "stages": 3, "min_blocks": 3},
    "64x128 bk8": {"block_m": 64, "block_n": 128, "warp_m": 32, "warp_n": 64, "block_k": 8, "k_unroll": 1},
}


def test_b_transpose_rule_size_and_name():
    with pytest.raises(ConfigError, match="b_transpose=3 must be 0, 1 or 2"):
        S11.config({"b_transpose": 3})
    with pytest.raises(ConfigError, match="b_transpose=1 with b_scalar=1"):
        S11.config({"b_transpose": 1, "b_scalar": 1, "stages": 3})
    # 128x256 with 4 stages (192 KB) has no room for the two [k][n] tiles (2 x 32 KB)
    with pytest.raises(ConfigError, match="shared memory"):
        S11.config({"b_transpose": 1})
    cfg = S11.config(BT_TILES["128x256 ku4 s3"] | {"b_transpose": 1})
    plain = S11.config(BT_TILES["128x256 ku4 s3"])
    assert S11.smem_bytes(cfg, {}) - S11.smem_bytes(plain, {}) == 2 * 32 * 256 * 4  # 2 rows of warps
    tt, nt, nn = ({"a_k_major": a, "b_n_major": b} for a, b in ((0, 0), (1, 0), (1, 1)))
    assert S11.b_transposed(cfg, tt) and S11.b_transposed(cfg, nt) and not S11.b_transposed(cfg, nn)
    assert not S11.b_scalar(cfg, tt) and not S11.b_scalar(cfg, nt)  # the rule's b_scalar gives way
    assert "_bt1" in S11.kernel_name(cfg, nt) and "_bt" not in S11.kernel_name(plain, nt)
    # the fragments are read as from an N-major B: one LDS.128 per 4 columns and k, conflict-free
    acc = S11.smem_accesses(cfg, tt)
    assert acc["b_load"] == S11.smem_accesses(plain, {"a_k_major": 0, "b_n_major": 1})["b_load"]


@pytest.mark.parametrize("layout", ["nt", "tt"])
def test_b_transpose_cuts_register_bank_conflicts(layout):
    """The mechanism on the main tile (128x256, k_unroll 4): B's fragments from the [k][n] copy land
    in registers of alternating banks, so the 2-bank conflicts of the main loop fall to what the
    N-major kernels have (nt 1.463 -> 1.293 slots per FFMA, tt 1.362 -> 1.233 with NVRTC 13.0); the
    copy itself is 4 LDS.128 + 4 STS.128 per item of 4 columns x 4 k, 4 items a lane for a warp's
    64 columns x 32 k (16 STS.128 per 4096 FFMAs); no local memory."""
    from gemmlab.analysis.issue_model import slots_per_ffma

    variant = {"a_k_major": int(layout[0] == "n"), "b_n_major": 0}
    tile = BT_TILES["128x256 ku4 s3"]
    (before, b_stats, _, b_insns), (after, a_stats, a_res, a_insns) = (
        _main_loop(S11.config({**tile, "b_transpose": v, "b_scalar": 0}), variant) for v in (0, 1))
    assert a_res["local_bytes"] == 0 and a_res.get("stack_bytes", 0) == 0
    assert a_stats["reg_bank_conflict_cycles"] <= 0.6 * b_stats["reg_bank_conflict_cycles"], (b_stats, a_stats)
    # the copy runs once per stage, outside the FFMA loop: 4 items x 4 rows of k per lane (ptxas
    # may place the stage loop's body twice); no STS at all without it
    sts = [x for x in a_insns if x.op.startswith("STS")]
    assert sts and len(sts) % 16 == 0 and all(x.op == "STS.128" for x in sts), [x.op for x in sts]
    assert not any(x.op.startswith("STS") for x in after + b_insns)
    assert slots_per_ffma(a_insns) < 0.92 * slots_per_ffma(b_insns)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
@pytest.mark.parametrize("M,N,K", [(388, 268, 164), (260, 1000, 4100), (129, 257, 33), (1, 70, 9)])
def test_gpu_s11_b_transpose_matches_float64(layout, M, N, K):
    """The [k][n] copy in every tile shape it must handle (block_k 32, 16, 8; warps 64 and 32
    columns wide; one and two rows of warps), edges, deep K, K < block_k, split-K in a cluster;
    nn / tn (B N-major) ignore it."""
    from gemmlab.check import check_stage

    for name, tile in BT_TILES.items():
        for extra in ({}, {"split_k": 2}):
            r = check_stage("s11", M, N, K, layout, config={**tile, **extra, "b_transpose": 1})
            assert r.correct, (layout, name, extra, r)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nt", "tt"])
def test_gpu_s11_b_transpose_batched_matches_float64(layout):
    from gemmlab.check import check_stage

    for name, tile in BT_TILES.items():
        r = check_stage("s11", 77, 130, 45, layout, batch=3, config={**tile, "b_transpose": 1})
        assert r.correct, (layout, name, r)


def _stand_in(label, layout, dims=(255, 257, 259)):
    """(config, variant) of the s10 stand-in that the space's tile ``label`` runs for an unaligned
    (4-byte) dims problem of ``layout``, as the plan builds it."""
    from gemmlab.heuristics import space

    cand = next(c for c in space.SM90 if c.label == label)
    p = Problem.dense(*dims, layout, 1, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40)
    spec, cfg = cand.spec().fallback(cand.config(), p)
    assert spec.id == "s10"
    return cfg, spec.variant(cfg, p)


def test_the_s10_stand_in_of_an_nt_problem_on_4_byte_copies(monkeypatch):
    """s11_tma.s10_config_for with the problem: an nt problem on 4-byte copies (both fragments
    K-major) takes one block an SM fewer where a thread has at most 128 registers, and at most 4
    groups of k unrolled; 64x64 x3 (170 registers), other layouts, 16-byte copies and the rule
    switched off keep the tile's config (on 4-byte copies with its edge blocks moved, edge_shift 1)."""
    from gemmlab.heuristics import space

    by = {c.label: c for c in space.SM90}

    def stand_in(label, layout, dims=(255, 257, 259)):
        return _stand_in(label, layout, dims)[0]

    plain = lambda label: s11_tma.s10_config_for(by[label].config())  # noqa: E731
    moved = lambda label: {**plain(label), "edge_shift": 1}  # noqa: E731  (STAND_IN_EDGE_SHIFT, on 4-byte copies)
    assert plain("128x64 w32x32 x2")["min_blocks"] == 2
    assert stand_in("128x64 w32x32 x2", "nt")["min_blocks"] == 1
    assert stand_in("128x128 w32x64 x2", "nt")["min_blocks"] == 1
    assert stand_in("32x64 w16x32 x4", "nt")["min_blocks"] == 3
    assert stand_in("64x64 w32x32 x3", "nt") == moved("64x64 w32x32 x3")  # 170 registers: kept
    assert stand_in("128x256 w64x64 ku8", "nt")["k_unroll"] == 4 and plain("128x256 w64x64 ku8")["k_unroll"] == 8
    for layout in ("nn", "tn", "tt"):
        assert stand_in("128x64 w32x32 x2", layout) == moved("128x64 w32x32 x2"), layout
    aligned = Problem.dense(256, 256, 256, "nt", 1, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40)
    assert s11_tma.s10_config_for(by["128x64 w32x32 x2"].config(), aligned) == plain("128x64 w32x32 x2")
    monkeypatch.setattr(s11_tma, "NT_STAND_IN_FEWER_BLOCKS", False)
    assert stand_in("128x64 w32x32 x2", "nt") == moved("128x64 w32x32 x2")


def test_the_nt_stand_in_reads_a_swizzled_under_the_flag(monkeypatch):
    """s11_tma.STAND_IN_A_SWIZZLE (off): the stand-in of an nt problem on 4-byte copies, whose A
    stays K-major in shared memory (As[m][k]), takes a_swizzle 1, and the bank model then puts A's
    fragment loads at half the wavefronts (2 an LDS.128 against 4: the 25% of shared-load
    wavefronts ncu counted as conflicts at 255x255x255x32 nt). nn (A turned by transpose_in), tn
    and tt (A M-major) and aligned nt problems keep their config."""
    from gemmlab.analysis import banks
    from gemmlab.heuristics import space

    by = {c.label: c for c in space.SM90}

    stand_in = _stand_in

    def a_wavefronts(cfg, variant):
        return banks.analyse_kind(S10.smem_accesses(cfg, variant)["a_load"])["total_wavefronts"]

    labels = ("64x128 w32x64 x2", "128x64 w32x32 x2", "64x64 w32x32 x3")
    off = {(label, lay): stand_in(label, lay) for label in labels for lay in ("nn", "nt", "tn", "tt")}
    aligned = Problem.dense(256, 256, 256, "nt", 1, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40)
    aligned_off = s11_tma.s10_config_for(by["64x128 w32x64 x2"].config(), aligned)
    assert not s11_tma.STAND_IN_A_SWIZZLE
    assert all(cfg["a_swizzle"] == 0 for cfg, _ in off.values())
    monkeypatch.setattr(s11_tma, "STAND_IN_A_SWIZZLE", True)
    for (label, lay), (cfg, variant) in off.items():
        on, v_on = stand_in(label, lay)
        if lay == "nt":
            assert v_on == variant and variant["a_k_major"] and not variant["vec"], (label, variant)
            assert on == {**cfg, "a_swizzle": 1}, label
            assert 2 * a_wavefronts(on, variant) == a_wavefronts(cfg, variant), label
        else:
            assert on == cfg, (label, lay)
    assert s11_tma.s10_config_for(by["64x128 w32x64 x2"].config(), aligned) == aligned_off


def test_the_stand_in_takes_k_tiles_of_16_under_the_flag_except_in_nt(monkeypatch):
    """s11_tma.STAND_IN_BLOCK_K16 (the runtime's setting since 2026-12-06): a stand-in on 4-byte
    copies whose tile has K tiles of 32 (the tiles of one block an SM) runs them at 16 in 4 stages
    in nn, tn and tt, nothing else changed; nt, aligned problems and tiles already at 16 keep their
    config; off, the tile's 32."""
    from gemmlab.heuristics import space

    by = {c.label: c for c in space.SM90}

    def stand_in(label, layout, dims=(255, 257, 259)):
        return _stand_in(label, layout, dims)[0]

    assert s11_tma.STAND_IN_BLOCK_K16
    monkeypatch.setattr(s11_tma, "STAND_IN_BLOCK_K16", False)
    labels = [c.label for c in space.SM90 if c.spec().id == "s11"]
    off = {(label, lay): stand_in(label, lay) for label in labels for lay in ("nn", "nt", "tn", "tt")}
    aligned = Problem.dense(256, 256, 256, "nn", 1, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40)
    aligned_off = {label: s11_tma.s10_config_for(by[label].config(), aligned) for label in labels}
    monkeypatch.setattr(s11_tma, "STAND_IN_BLOCK_K16", True)
    moved = 0
    for (label, lay), cfg in off.items():
        on = stand_in(label, lay)
        if lay == "nt" or cfg["block_k"] != 32:
            assert on == cfg, (label, lay)
        elif on != cfg:  # (where s10 allows K tiles of 16 at this tile: not 32x256 w16x64)
            moved += 1
            assert on == {**cfg, "block_k": 16, "stages": 4, "k_unroll": min(cfg["k_unroll"], 4)}, (label, lay)
    assert moved >= 3
    assert all(s11_tma.s10_config_for(by[label].config(), aligned) == aligned_off[label] for label in labels)


# ---- s10 edge_shift: M/N edge blocks moved inside an operand on 4-byte copies ---------------------
def test_edge_shift_is_0_or_1_named_and_given_to_the_stand_in(monkeypatch):
    """``edge_shift`` is 0 or 1, the template's last argument, named (es1) only where on; s11's
    stand-in takes it with STAND_IN_EDGE_SHIFT (the runtime's setting since 2026-12-05) where an
    operand is on 4-byte copies (one or both), never on 16-byte copies, and not at all with the
    knob off."""
    from gemmlab.heuristics import space

    with pytest.raises(ConfigError, match="edge_shift=2 must be 0 or 1"):
        S10.config({"edge_shift": 2})
    v = {"vec": 0, "a_k_major": 1, "b_n_major": 0}
    on, off = S10.config({"edge_shift": 1}), S10.default_config
    assert S10.template(on, v).endswith(", true>") and S10.template(off, v).endswith(", false>")
    assert "_es1_" in S10.kernel_name(on, v) and "_es" not in S10.kernel_name(off, v)
    tile = {c.label: c for c in space.SM90}["64x128 w32x64 x2"].config()
    problems = {"both 4-byte": dense(255, 257, 259, "nn"), "one 4-byte": dense(332, 555, 777, "tn"),
                "16-byte": dense(256, 256, 256, "nn")}
    assert len(S10.variant(s11_tma.s10_config_for(tile), problems["one 4-byte"])) == 4  # a_vec or b_vec
    assert s11_tma.STAND_IN_EDGE_SHIFT
    got = {name: s11_tma.s10_config_for(tile, p)["edge_shift"] for name, p in problems.items()}
    assert got == {"both 4-byte": 1, "one 4-byte": 1, "16-byte": 0}
    nt = s11_tma.s10_config_for({c.label: c for c in space.SM90}["128x64 w32x32 x2"].config(), dense(255, 257, 259, "nt"))
    assert nt["edge_shift"] == 1 and nt["min_blocks"] == 1  # with the nt rule's block an SM fewer
    monkeypatch.setattr(s11_tma, "STAND_IN_EDGE_SHIFT", False)
    for name, p in problems.items():
        assert s11_tma.s10_config_for(tile, p)["edge_shift"] == 0, name


# The stand-ins with the fewest registers to spare (scripts/s10_spill_scan.py): 128x256 and 256x128
# ku4 nt at 244-255 registers, in a cluster too; 128x64 x2 and 64x64 x3, which spill a little already.
EDGE_SHIFT_TIGHT = [("128x256 w64x64 ku4", "nt", 1), ("128x256 w64x64 ku4", "nt", 2), ("256x128 w64x64 ku4", "nt", 2),
                    ("128x64 w32x32 x2", "tn", 1), ("128x64 w32x32 x2", "nn", 1), ("64x64 w32x32 x3", "nt", 1),
                    ("64x128 w32x64 x2", "tt", 4)]


@pytest.mark.parametrize("label,layout,splits", EDGE_SHIFT_TIGHT)
def test_edge_shift_spills_no_more_than_without(monkeypatch, label, layout, splits):
    """The moved origins and the epilogue's skipped rows cost no registers through the K loop: on
    the tightest stand-ins the kernel with edge_shift has no larger stack frame and no more local
    loads and stores than the one without (the first form, with 64-bit bounds in the epilogue and
    the moved origin kept through the loop, spilled 32-40 local ops a K step at 128x256 ku4 nt)."""
    from gemmlab.analysis import sass
    from gemmlab.heuristics import space
    from gemmlab.plan import kernel_for

    cand = {c.label: c for c in space.SM90}[label]
    kw = {"splits": splits, "k_split": 128} if splits > 1 else {}
    p = Problem.dense(255, 257, 259, layout, 1, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40, **kw)
    found = {}
    for shift in (False, True):
        monkeypatch.setattr(s11_tma, "STAND_IN_EDGE_SHIFT", shift)
        spec, cfg = cand.spec().fallback(cand.config(), p)
        assert spec.id == "s10" and cfg["edge_shift"] == int(shift)
        variant = spec.variant(cfg, p)
        assert variant.get("cluster_k", 1) == splits
        ck = kernel_for(spec, cfg, variant, "sm_90")
        ops = sass.opcodes(sass.instructions(ck.cubin))
        found[shift] = (sass.resources(ck.cubin).get("stack_bytes", 0), ops.get("STL", 0) + ops.get("LDL", 0))
    assert found[True][0] <= found[False][0] and found[True][1] <= found[False][1], found


@pytest.mark.gpu
@pytest.mark.parametrize("tile", range(len(S10_TILES)))
def test_gpu_s10_edge_shift(tile):
    """edge_shift=1 against float64: every layout, with transpose_in on and off; shapes whose last
    tile row and column are partial (the moved blocks), smaller than a tile (nothing to move),
    batched, one operand 16-byte beside a 4-byte one; K in slices added in a cluster and through
    the workspace; a separate c with beta, and c the output itself (beta reads what the block before
    has written: a row stored twice would be scaled twice); a 4-byte B whose columns leave D's rows
    16-byte aligned (the moved column origin takes the 16-byte stores from its first owned column).
    check_stage poisons the output with NaN, so a row the epilogue skips wrongly fails."""
    import torch

    import gemmlab
    from gemmlab.check import check_stage, compare

    for transpose_in in (1, 0):
        cfg = {**S10_TILES[tile], "transpose_in": transpose_in, "edge_shift": 1}
        for layout in ("nn", "nt", "tn", "tt"):
            for M, N, K, batch in ((333, 555, 777, None), (257, 301, 99, 3), (5, 7, 9, None), (129, 260, 64, None)):
                r = check_stage("s10", M, N, K, layout, config=cfg, batch=batch)
                assert r.correct, (cfg, layout, M, N, K, batch, r)
        for layout, M, N, K in (("tn", 332, 555, 777), ("tn", 333, 556, 777), ("tt", 332, 555, 777)):
            r = check_stage("s10", M, N, K, layout, config=cfg, batch=2)
            assert r.correct, (cfg, layout, M, N, K, r)
    cfg = {**S10_TILES[tile], "edge_shift": 1}
    for split in (2, 3):
        for layout in ("nn", "nt", "tt"):
            r = check_stage("s10", 301, 203, 1001, layout, config={**cfg, "split_k": split})
            assert r.correct, (cfg, split, layout, r)
    M, N, K = 301, 300, 203
    a = torch.randn(M, K, device="cuda")
    b = torch.randn(K, N + 1, device="cuda")[:, :N]  # rows of 301 floats: 4-byte copies; D's rows of 300
    c = torch.randn(M, N, device="cuda")
    out = c.clone()
    gemmlab.gemm(a, b, out, alpha=0.5, beta=-2.0, out=out, stage="s10", config=cfg)
    torch.cuda.synchronize()
    assert compare(out, 0.5 * (a.double() @ b.double()) - 2.0 * c.double(), K).correct, cfg


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
def test_gpu_stand_in_edge_shift_through_auto(monkeypatch, layout):
    """With STAND_IN_EDGE_SHIFT (the runtime's setting) and without it, the plans of unaligned
    problems: auto and s11 (its stand-in) on odd shapes, batched, against float64."""
    from gemmlab.check import check_stage

    for stage, shift in (("s11", True), ("auto", True), ("auto", False)):
        monkeypatch.setattr(s11_tma, "STAND_IN_EDGE_SHIFT", shift)
        for M, N, K, batch in ((333, 555, 777, 8), (1001, 999, 301, None), (255, 257, 259, None), (97, 4001, 33, None)):
            r = check_stage(stage, M, N, K, layout, batch=batch)
            assert r.correct, (stage, shift, layout, M, N, K, batch, r)


# ---- s10 frag_carry: the tile's last k carried over the K tile's barrier ---------------------------
def test_frag_carry_is_0_or_1_named_and_taken_where_the_core_reads_the_outer_product_layout(monkeypatch):
    """``frag_carry`` is 0 or 1, the template's last argument only where on (older sources and
    kernels unchanged), named (fc1) only where on; it applies where the core reads A M-major and B
    N-major (tn, and nn / tt on 4-byte copies with transpose_in), not in nt nor where transpose_in
    is off in nn or tt; s11's stand-in takes it only with STAND_IN_FRAG_CARRY (on in the runtime, where a
    thread holds 64 accumulators: STAND_IN_FRAG_CARRY_ACCUMULATORS)."""
    from gemmlab.heuristics import space

    with pytest.raises(ConfigError, match="frag_carry=2 must be 0 or 1"):
        S10.config({"frag_carry": 2})
    v = {"vec": 0, "a_k_major": 1, "b_n_major": 1}
    on, off = S10.config({"frag_carry": 1}), S10.default_config
    assert S10.template(on, v).endswith(", false, true>") and S10.template(off, v).endswith(", 1, false>")
    assert "_fc1_" in S10.kernel_name(on, v) and "_fc" not in S10.kernel_name(off, v)
    late = S10.config({"frag_carry": 1, "carry_copy_k": 30})
    assert S10.template(late, v).endswith(", false, true, 30>") and "_cck30_" in S10.kernel_name(late, v)
    for bad in ({"carry_copy_k": 3}, {"frag_carry": 1, "carry_copy_k": 31}, {"frag_carry": 1, "carry_copy_k": -2},
                {"frag_carry": 1, "block_k": 8, "carry_copy_k": 7}):
        with pytest.raises(ConfigError, match=r"carry_copy_k=-?\d+ must be -1, or with frag_carry=1 a k of 0\.\."):
            S10.config(bad)
    layouts = {"nn": (1, 1), "nt": (1, 0), "tn": (0, 1), "tt": (0, 0)}
    four = {lay: {"vec": 0, "a_k_major": a, "b_n_major": b} for lay, (a, b) in layouts.items()}
    sixteen = {lay: {"vec": 1, "a_k_major": a, "b_n_major": b} for lay, (a, b) in layouts.items()}
    assert {lay: S10.carries(on, x) for lay, x in four.items()} == {"nn": True, "nt": False, "tn": True, "tt": True}
    assert {lay: S10.carries(on, x) for lay, x in sixteen.items()} == {"nn": False, "nt": False, "tn": True, "tt": False}
    assert not any(S10.carries({**on, "transpose_in": 0}, four[lay]) for lay in ("nn", "nt", "tt"))
    assert not any(S10.carries(off, x) for x in four.values())
    tile = {c.label: c for c in space.SM90}["128x64 w32x32 x2"].config()
    problems = {lay: dense(255, 257, 259, lay) for lay in layouts}
    # the runtime (since 2026-12-05, sixteenth session): on, at 64 accumulators a thread
    assert s11_tma.STAND_IN_FRAG_CARRY and s11_tma.STAND_IN_FRAG_CARRY_ACCUMULATORS == (64,)
    monkeypatch.setattr(s11_tma, "STAND_IN_FRAG_CARRY", False)
    assert all(s11_tma.s10_config_for(tile, p).get("frag_carry", 0) == 0 for p in problems.values())
    monkeypatch.setattr(s11_tma, "STAND_IN_FRAG_CARRY", True)
    monkeypatch.setattr(s11_tma, "STAND_IN_FRAG_CARRY_ACCUMULATORS", None)
    got = {lay: s11_tma.s10_config_for(tile, p).get("frag_carry", 0) for lay, p in problems.items()}
    assert got == {"nn": 1, "nt": 0, "tn": 1, "tt": 1}
    assert s11_tma.s10_config_for(tile, dense(256, 256, 256, "tn")).get("frag_carry", 0) == 0  # 16-byte: as before
    assert s11_tma.STAND_IN_CARRY_COPY_AT is None and s11_tma.s10_config_for(tile, problems["tt"])["carry_copy_k"] == -1
    monkeypatch.setattr(s11_tma, "STAND_IN_CARRY_COPY_AT", 0.5)
    late = s11_tma.s10_config_for(tile, problems["tt"])
    assert (late["block_k"], late["carry_copy_k"]) == (16, 7)  # after k 7 of 16: half the tile
    assert s11_tma.s10_config_for(tile, problems["nt"]).get("carry_copy_k", -1) == -1
    # restricted to stand-ins whose thread holds 64 accumulators (the H100's gains): 128x64 w32x32
    # (32 a thread) loses it, 128x64 w64x32 and 64x128 w32x64 (64) keep it, 128x256 w64x64 (128) not
    monkeypatch.setattr(s11_tma, "STAND_IN_CARRY_COPY_AT", None)
    monkeypatch.setattr(s11_tma, "STAND_IN_FRAG_CARRY_ACCUMULATORS", (64,))
    by_label = {c.label: c.config() for c in space.SM90}
    carried = {lab: s11_tma.s10_config_for(by_label[lab], problems["tt"]).get("frag_carry", 0)
               for lab in ("128x64 w32x32 x2", "128x64 w64x32 bk16 ku1 x3", "64x128 w32x64 x2", "128x256 w64x64 ku4")}
    assert carried == {"128x64 w32x32 x2": 0, "128x64 w64x32 bk16 ku1 x3": 1, "64x128 w32x64 x2": 1,
                       "128x256 w64x64 ku4": 0}
    assert s11_tma.s10_config_for(by_label["64x128 w32x64 x2"], problems["nt"]).get("frag_carry", 0) == 0


def test_carry_chunk_is_a_divisor_of_block_k_with_frag_carry_and_the_stand_in_takes_it_where_a_tile_is_large(monkeypatch):
    """``carry_chunk``: 0, or with frag_carry=1 and the copies at the barrier a divisor of block_k
    below it; the template's last argument only where set (named cc); s11's stand-in takes the
    uncarried kernel's 4 * k_unroll k's a trip only with STAND_IN_FRAG_CARRY_CHUNKED, and only where
    a whole tile a trip is over CARRY_TRIP_FFMAS FFMAs a thread (128 accumulators at block_k 32) and
    the candidate does not unroll a whole tile itself (k_unroll 8)."""
    from gemmlab.heuristics import space

    v = {"vec": 0, "a_k_major": 0, "b_n_major": 0}
    on = S10.config({"frag_carry": 1, "carry_chunk": 8})
    assert S10.template(on, v).endswith(", true, -1, false, 8>") and "_cc8_" in S10.kernel_name(on, v)
    assert not S10.template(S10.config({"frag_carry": 1}), v).endswith(", 0>")
    for bad in ({"carry_chunk": 8}, {"frag_carry": 1, "carry_chunk": 32}, {"frag_carry": 1, "carry_chunk": 12},
                {"frag_carry": 1, "carry_chunk": 1}, {"frag_carry": 1, "carry_chunk": 8, "carry_copy_k": 3},
                {"frag_carry": 1, "block_k": 8, "carry_chunk": 8}):
        with pytest.raises(ConfigError, match=r"carry_chunk=\d+ must be 0, or with frag_carry=1 and carry_copy_k=-1"):
            S10.config(bad)
    assert S10.config({"frag_carry": 1, "block_k": 8, "carry_chunk": 2})["carry_chunk"] == 2
    by_label = {c.label: c.config() for c in space.SM90}
    tt = dense(255, 257, 259, "tt")
    # the experiment's stand-ins keep the tile's block_k 32 (K tiles of 16 leave no tile to chunk)
    monkeypatch.setattr(s11_tma, "STAND_IN_BLOCK_K16", False)
    monkeypatch.setattr(s11_tma, "STAND_IN_FRAG_CARRY", True)
    monkeypatch.setattr(s11_tma, "STAND_IN_FRAG_CARRY_ACCUMULATORS", None)
    labels = ("128x256 w64x64 (default)", "128x256 w64x64 ku4", "128x256 w64x64 ku8", "128x256 w64x64 bk16 s8",
              "128x128 w64x64", "64x256 w32x64", "128x128 w32x64 x2", "64x64 w32x32 x3")
    chunks = lambda: {lab: s11_tma.s10_config_for(by_label[lab], tt).get("carry_chunk", 0) for lab in labels}  # noqa: E731
    assert not s11_tma.STAND_IN_FRAG_CARRY_CHUNKED and set(chunks().values()) == {0}
    monkeypatch.setattr(s11_tma, "STAND_IN_FRAG_CARRY_CHUNKED", True)
    assert chunks() == {"128x256 w64x64 (default)": 8, "128x256 w64x64 ku4": 16, "128x256 w64x64 ku8": 0,
                        "128x256 w64x64 bk16 s8": 0, "128x128 w64x64": 8, "64x256 w32x64": 0,
                        "128x128 w32x64 x2": 0, "64x64 w32x32 x3": 0}
    assert s11_tma.s10_config_for(by_label["128x256 w64x64 ku4"], dense(255, 257, 259, "nt")).get("carry_chunk", 0) == 0


def _main_loop_after_barrier(cfg, layout):
    """The opcodes of s10's K loop (the stand-in problem 255x257x259) from its barrier on, around
    the back edge to the barrier again; the kernel's resources."""
    from gemmlab.analysis import sass
    from gemmlab.plan import kernel_for

    p = Problem.dense(255, 257, 259, layout, 1, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40)
    ck = kernel_for(S10, cfg, S10.variant(cfg, p), "sm_90")
    loop = [x.op for x in sass.main_loop(sass.instructions(ck.cubin))]
    bar = next(i for i, op in enumerate(loop) if op.startswith("BAR.SYNC"))
    return loop[bar:] + loop[:bar], sass.resources(ck.cubin)


@pytest.mark.parametrize("layout", ["nn", "tn", "tt"])
def test_frag_carry_loads_the_next_tile_and_multiplies_before_the_copies(layout):
    """In the SASS of the stand-in most unaligned problems run (128x64 w32x32 x2, block_k 16, 4
    stages, edge blocks moved): without frag_carry a warp leaves the barrier with the copies and
    then its first fragment loads, no FFMA before the copies; with it, the next tile's first k
    (2 + 1 LDS.128: 8 rows of A, 4 columns of B) and FFMAs of the carried k come before the first
    copy. The K loop keeps its 512 FFMAs and 48 fragment loads, and nothing spills."""
    cfg = S10.config({"block_m": 128, "block_n": 64, "warp_m": 32, "warp_n": 32, "block_k": 16, "stages": 4,
                      "min_blocks": 2, "edge_shift": 1})
    for carry in (0, 1):
        loop, res = _main_loop_after_barrier({**cfg, "frag_carry": carry}, layout)
        first_copy = next(i for i, op in enumerate(loop) if op.startswith("LDGSTS"))
        before = loop[:first_copy]
        loads = sum(op.startswith("LDS") and op.endswith(".128") for op in before)
        ffmas = sum(op == "FFMA" for op in before)
        assert (loads, ffmas > 0) == ((3, True) if carry else (0, False)), (carry, layout, loads, ffmas)
        assert sum(op == "FFMA" for op in loop) == 512 and sum(op == "LDS.128" for op in loop) == 48, (carry, layout)
        assert res.get("stack_bytes", 0) == 0 and res["registers"] <= 128, (carry, layout, res)
    # carry_copy_k 7: the copies after the FFMAs of k 7 of the next tile, so at least 8 k's FFMAs
    # (8 x 32) lie between the barrier and the first copy
    loop, res = _main_loop_after_barrier({**cfg, "frag_carry": 1, "carry_copy_k": 7}, layout)
    first_copy = next(i for i, op in enumerate(loop) if op.startswith("LDGSTS"))
    assert sum(op == "FFMA" for op in loop[:first_copy]) >= 8 * 32, layout
    assert sum(op == "FFMA" for op in loop) == 512 and res.get("stack_bytes", 0) == 0, (layout, res)


@pytest.mark.parametrize("layout", ["tn", "tt"])
def test_carry_chunk_gives_the_carried_loop_the_uncarried_kernels_size(monkeypatch, layout):
    """The stand-in 128x256 w64x64 (128 accumulators a thread, block_k 32) on 4-byte copies: carried
    a whole tile a trip, its K loop is one trip of 32 k (4096 FFMAs, as k_unroll 8); with
    carry_chunk 8 (STAND_IN_FRAG_CARRY_CHUNKED) a trip is 8 k (1024 FFMAs), its barrier inside,
    within 5% of the uncarried kernel's K loop in instructions, the next k's loads before the
    copies after the barrier, and nothing spills."""
    from gemmlab.analysis import sass
    from gemmlab.heuristics import space
    from gemmlab.plan import kernel_for

    tile = {c.label: c for c in space.SM90}["128x256 w64x64 (default)"].config()
    p = Problem.dense(255, 257, 259, layout, 1, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40)

    monkeypatch.setattr(s11_tma, "STAND_IN_FRAG_CARRY_ACCUMULATORS", None)  # every stand-in (the runtime: 64)
    monkeypatch.setattr(s11_tma, "STAND_IN_BLOCK_K16", False)  # the tile's block_k 32, as the experiment ran

    def k_loop(carry, chunked):
        monkeypatch.setattr(s11_tma, "STAND_IN_FRAG_CARRY", carry)
        monkeypatch.setattr(s11_tma, "STAND_IN_FRAG_CARRY_CHUNKED", chunked)
        cfg = s11_tma.s10_config_for(tile, p)
        ck = kernel_for(S10, cfg, S10.variant(cfg, p), "sm_90")
        assert sass.resources(ck.cubin).get("stack_bytes", 0) == 0, (carry, chunked)
        return cfg, [x.op for x in sass.k_loop(sass.instructions(ck.cubin))]

    ffmas = lambda loop: sum(op == "FFMA" for op in loop)  # noqa: E731
    _, plain = k_loop(False, False)
    cfg, whole = k_loop(True, False)
    assert cfg.get("carry_chunk", 0) == 0 and ffmas(whole) == 4096
    cfg, chunked = k_loop(True, True)
    assert cfg["carry_chunk"] == 8 and ffmas(chunked) == 1024 and len(chunked) <= 1.05 * len(plain), (len(chunked), len(plain))
    bar = next(i for i, op in enumerate(chunked) if op.startswith("BAR.SYNC"))
    after = chunked[bar:] + chunked[:bar]
    first_copy = next(i for i, op in enumerate(after) if op.startswith("LDGSTS"))
    assert sum(op == "LDS.128" for op in after[:first_copy]) >= 6  # the next tile's first k: 8 + 16 values


@pytest.mark.gpu
@pytest.mark.parametrize("tile", range(len(S10_TILES)))
def test_gpu_s10_frag_carry(tile):
    """frag_carry=1 against float64: every layout (nt and the 16-byte nn / tt without the carry),
    with the edge blocks moved and not, transpose_in on and off, the copies at the barrier and after
    a k of the next tile (carry_copy_k), the carried loop in trips of part of a tile (carry_chunk);
    K of one partial tile, of fewer
    tiles than stages and of many; 2 stages (tile t + 2 lands where tile t was, after the barrier
    that follows tile t's last reads); batched; one operand 16-byte beside a 4-byte one; K in slices
    added in a cluster and through the workspace. check_stage poisons the output with NaN."""
    from gemmlab.check import check_stage

    base = {**S10_TILES[tile], "frag_carry": 1}
    bk = S10.config(base)["block_k"]
    for extra in ({"edge_shift": 1}, {"edge_shift": 0, "transpose_in": 0}, {"edge_shift": 1, "stages": 2},
                  {"edge_shift": 1, "carry_copy_k": 5}, {"edge_shift": 1, "stages": 2, "carry_copy_k": 0},
                  {"edge_shift": 1, "stages": 2, "carry_chunk": max(2, bk // 4)}):
        cfg = {**base, **extra}
        for layout in ("nn", "nt", "tn", "tt"):
            for M, N, K, batch in ((333, 555, 777, None), (257, 301, 99, 3), (5, 7, 9, None), (129, 260, 64, None),
                                   (64, 128, 4001, None), (256, 256, 256, None)):
                r = check_stage("s10", M, N, K, layout, config=cfg, batch=batch)
                assert r.correct, (cfg, layout, M, N, K, batch, r)
        for layout, M, N, K in (("tn", 332, 555, 777), ("tn", 333, 556, 777), ("tt", 332, 555, 777)):
            r = check_stage("s10", M, N, K, layout, config=cfg, batch=2)
            assert r.correct, (cfg, layout, M, N, K, r)
    for split in (2, 3):
        for layout in ("nn", "tn", "tt"):
            r = check_stage("s10", 301, 203, 1001, layout, config={**base, "edge_shift": 1, "split_k": split})
            assert r.correct, (base, split, layout, r)


@pytest.mark.gpu
@pytest.mark.parametrize("chunked", [False, True], ids=["whole", "chunked"])
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
def test_gpu_stand_in_frag_carry_through_auto(monkeypatch, layout, chunked):
    """With STAND_IN_FRAG_CARRY on for every stand-in (and STAND_IN_FRAG_CARRY_CHUNKED: s11's default 128x256 tile then
    stands in with carry_chunk 8), the plans of unaligned problems (auto and s11's stand-in) on odd
    shapes, batched, against float64."""
    from gemmlab.check import check_stage

    monkeypatch.setattr(s11_tma, "STAND_IN_FRAG_CARRY", True)
    monkeypatch.setattr(s11_tma, "STAND_IN_FRAG_CARRY_ACCUMULATORS", None)  # every stand-in (the runtime: 64)
    monkeypatch.setattr(s11_tma, "STAND_IN_FRAG_CARRY_CHUNKED", chunked)
    for stage in ("s11", "auto"):
        for M, N, K, batch in ((333, 555, 777, 8), (1001, 999, 301, None), (255, 257, 259, None), (97, 4001, 33, None)):
            r = check_stage(stage, M, N, K, layout, batch=batch)
            assert r.correct, (stage, layout, M, N, K, batch, r)


@pytest.mark.gpu
def test_gpu_s10_a_swizzle_on_4_byte_copies_and_the_nt_stand_in(monkeypatch):
    """a_swizzle=1 on 4-byte copies (As[m][k] swizzled, as s11_tma.STAND_IN_A_SWIZZLE asks of the nt
    stand-in) against float64: every S10_TILES tile, the layouts whose A is K-major (nt, and nn
    without transpose_in), the edge blocks moved and not, odd, tiny and batched shapes, K in slices
    added in a cluster; then s11 and auto with the flag on, nt, on the own suite's minimum and odd shapes."""
    from gemmlab.check import check_stage

    for tile in S10_TILES:
        for extra in ({"edge_shift": 1}, {"edge_shift": 0, "transpose_in": 0}):
            cfg = {**tile, "a_swizzle": 1, **extra}
            for layout in ("nt", "nn"):
                for M, N, K, batch in ((333, 555, 777, None), (257, 301, 99, 3), (5, 7, 9, None), (64, 128, 4001, None)):
                    r = check_stage("s10", M, N, K, layout, config=cfg, batch=batch)
                    assert r.correct, (cfg, layout, M, N, K, batch, r)
    r = check_stage("s10", 301, 203, 1001, "nt", config={**S10_TILES[0], "a_swizzle": 1, "edge_shift": 1, "split_k": 3})
    assert r.correct, r
    monkeypatch.setattr(s11_tma, "STAND_IN_A_SWIZZLE", True)
    for stage in ("s11", "auto"):
        for M, N, K, batch in ((255, 255, 255, 32), (333, 555, 777, 8), (1001, 999, 301, None), (97, 4001, 33, None)):
            r = check_stage(stage, M, N, K, "nt", batch=batch)
            assert r.correct, (stage, M, N, K, batch, r)


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "tn", "tt"])
def test_gpu_stand_in_block_k16_through_auto(layout):
    """With STAND_IN_BLOCK_K16 (on), the plans of unaligned problems (s11's stand-in and auto) on the
    shapes the knob probe timed and odd ones, batched, against float64."""
    from gemmlab.check import check_stage

    assert s11_tma.STAND_IN_BLOCK_K16
    for stage in ("s11", "auto"):
        for M, N, K, batch in ((492, 109, 137, 32), (455, 97, 743, 32), (333, 555, 777, 8), (1001, 999, 301, None),
                               (97, 4001, 33, None), (255, 257, 259, None)):
            r = check_stage(stage, M, N, K, layout, batch=batch)
            assert r.correct, (stage, layout, M, N, K, batch, r)


# ---- ffma_serpentine: the FFMA runs of odd rows right to left (mma/warp_tile.cuh FFMA_ROTATE 2) ------
def test_ffma_serpentine_is_0_or_1_named_and_passed_as_the_cores_ffma_order(monkeypatch):
    """s10: the template's last argument (with frag_carry and carry_copy_k before it at their
    defaults), named fs1 only where on; s11: FFMA_ROTATE 2, not with ffma_rotate; s11's stand-in
    takes it only with STAND_IN_FFMA_SERPENTINE (off), where the core reads the outer-product layout."""
    from gemmlab.heuristics import space

    v = {"vec": 0, "a_k_major": 1, "b_n_major": 1}
    on = S10.config({"ffma_serpentine": 1})
    assert S10.template(on, v).endswith(", 1, false, false, -1, true>") and "_fs1_" in S10.kernel_name(on, v)
    assert S10.template({**on, "frag_carry": 1}, v).endswith(", 1, false, true, -1, true>")
    assert "_fs" not in S10.kernel_name(S10.default_config, v)
    for spec in (S10, S11):
        with pytest.raises(ConfigError, match="ffma_serpentine=2 must be 0 or 1"):
            spec.config({"ffma_serpentine": 2})
    with pytest.raises(ConfigError, match="one FFMA order at a time"):
        S11.config({"ffma_serpentine": 1, "ffma_rotate": 1})
    tn = {"a_k_major": 0, "b_n_major": 1}
    assert ", 1, 2, false, 0, " in S11.template(S11.config({"ffma_serpentine": 1}), tn)
    assert ", 1, 0, false, 0, " in S11.template(S11.default_config, tn)
    tile = {c.label: c for c in space.SM90}["128x64 w32x32 x2"].config()
    problems = {lay: dense(255, 257, 259, lay) for lay in ("nn", "nt", "tn", "tt")}
    assert not s11_tma.STAND_IN_FFMA_SERPENTINE
    assert all(s11_tma.s10_config_for(tile, p)["ffma_serpentine"] == 0 for p in problems.values())
    monkeypatch.setattr(s11_tma, "STAND_IN_FFMA_SERPENTINE", True)
    got = {lay: s11_tma.s10_config_for(tile, p)["ffma_serpentine"] for lay, p in problems.items()}
    assert got == {"nn": 1, "nt": 0, "tn": 1, "tt": 1}


def _loop_registers(spec, cfg, M, N, K, layout):
    """The K loop's FFMA register statistics (2 banks, as the issue model prices them) and the
    kernel's resources."""
    from gemmlab.analysis import sass
    from gemmlab.plan import kernel_for

    p = Problem.dense(M, N, K, layout, 1, a_ptr=1 << 40, b_ptr=2 << 40, d_ptr=3 << 40)
    ck = kernel_for(spec, cfg, spec.variant(cfg, p), "sm_90")
    insns = sass.instructions(ck.cubin)
    return sass.ffma_register_stats(sass.main_loop(insns), banks=2), sass.resources(ck.cubin), insns


@pytest.mark.parametrize("layout", ["nn", "tn", "tt"])
def test_ffma_serpentine_takes_b_from_the_reuse_cache_and_halves_nothing_else(layout):
    """The stand-in most unaligned problems run (128x64 w32x32 x2 bk16 s4 es1, the outer-product
    layout in nn, tn and tt): with the serpentine order the K loop's FFMAs take more operands from
    the reuse cache and fewer read two registers of one bank (ptxas 13.0: 149-158 -> 93-95 of
    512), with the same FFMAs and no spill; in nt (K-major fragments) the kernel is the same."""
    cfg = S10.config({"block_m": 128, "block_n": 64, "warp_m": 32, "warp_n": 32, "block_k": 16, "stages": 4,
                      "min_blocks": 2, "edge_shift": 1})
    plain, _, _ = _loop_registers(S10, cfg, 255, 257, 259, layout)
    serp, res, _ = _loop_registers(S10, {**cfg, "ffma_serpentine": 1}, 255, 257, 259, layout)
    assert serp["ffma"] == plain["ffma"] == 512
    assert serp["reg_bank_conflicts"] < 0.75 * plain["reg_bank_conflicts"], (plain, serp)
    assert serp["reuse_hit_share"] > plain["reuse_hit_share"] + 0.05, (plain, serp)
    assert res.get("stack_bytes", 0) == 0
    _, _, nt_plain = _loop_registers(S10, cfg, 255, 257, 259, "nt")
    _, _, nt_serp = _loop_registers(S10, {**cfg, "ffma_serpentine": 1}, 255, 257, 259, "nt")
    assert [(x.op, x.operands) for x in nt_plain] == [(x.op, x.operands) for x in nt_serp]


def test_ffma_serpentine_in_s11_tn():
    """s11 at its default tile in tn (A M-major, B N-major by TMA): fewer FFMAs of the K loop read
    two registers of one bank with the serpentine order (ptxas 13.0: 183 -> 145 of 1024)."""
    plain, _, _ = _loop_registers(S11, S11.default_config, 4096, 4096, 4096, "tn")
    serp, res, _ = _loop_registers(S11, S11.config({"ffma_serpentine": 1}), 4096, 4096, 4096, "tn")
    assert serp["ffma"] == plain["ffma"] and serp["reg_bank_conflicts"] < 0.9 * plain["reg_bank_conflicts"]
    assert res.get("stack_bytes", 0) == 0


@pytest.mark.gpu
@pytest.mark.parametrize("tile", range(len(S10_TILES)))
def test_gpu_s10_ffma_serpentine(tile):
    """ffma_serpentine=1 against float64: every layout, 4-byte and 16-byte copies, transpose_in on
    and off, with frag_carry, batched, split in a cluster."""
    from gemmlab.check import check_stage

    for extra in ({"edge_shift": 1}, {"transpose_in": 0}, {"frag_carry": 1, "edge_shift": 1}):
        cfg = {**S10_TILES[tile], "ffma_serpentine": 1, **extra}
        for layout in ("nn", "nt", "tn", "tt"):
            for M, N, K, batch in ((333, 555, 777, None), (257, 301, 99, 3), (5, 7, 9, None), (256, 256, 256, None)):
                r = check_stage("s10", M, N, K, layout, config=cfg, batch=batch)
                assert r.correct, (cfg, layout, M, N, K, batch, r)
    r = check_stage("s10", 301, 203, 1001, "tt", config={**S10_TILES[tile], "ffma_serpentine": 1, "split_k": 2})
    assert r.correct, r


@pytest.mark.gpu
@pytest.mark.parametrize("layout", ["nn", "nt", "tn", "tt"])
def test_gpu_s11_ffma_serpentine(monkeypatch, layout):
    """s11 with ffma_serpentine=1 against float64 (tn and tt with b_transpose take it; nn and nt
    run as before), odd and batched shapes, its stand-in for unaligned ones; and auto with
    STAND_IN_FFMA_SERPENTINE."""
    from gemmlab.check import check_stage

    for cfg in ({"ffma_serpentine": 1}, {"ffma_serpentine": 1, "k_unroll": 4},
                {**BT_TILES["128x256 ku4 s3"], "ffma_serpentine": 1, "b_transpose": 1}):
        for M, N, K, batch in ((512, 768, 1024, None), (1000, 1004, 512, 2), (333, 555, 777, None)):
            r = check_stage("s11", M, N, K, layout, config=cfg, batch=batch)
            assert r.correct, (cfg, layout, M, N, K, batch, r)
    monkeypatch.setattr(s11_tma, "STAND_IN_FFMA_SERPENTINE", True)
    for M, N, K, batch in ((333, 555, 777, 8), (255, 257, 259, None)):
        r = check_stage("auto", M, N, K, layout, batch=batch)
        assert r.correct, (layout, M, N, K, batch, r)
