"""Occupancy model: hand-computed sm_90 cases, and (GPU) the CUDA occupancy API for every stage."""
import pytest

from gemmlab.analysis import occupancy as occ
from gemmlab.stages import all_stages

H200 = occ.limits("sm_90")


def blocks(threads, regs, smem=0, lim=H200):
    return occ.occupancy(threads, regs, smem, lim)


def test_sm90_table():
    assert (H200.sms, H200.regs_per_sm, H200.threads_per_sm, H200.blocks_per_sm) == (132, 65536, 2048, 32)
    assert H200.smem_per_sm == 228 * 1024 and H200.smem_per_block_optin == 227 * 1024
    assert H200.smem_reserved_per_block == 1024
    assert occ.limits("sm_90a") == H200
    assert occ.limits("sm_90", sms=114).sms == 114
    with pytest.raises(ValueError, match="no occupancy table"):
        occ.limits("sm_75")


@pytest.mark.parametrize("threads,regs,want,limit", [
    (256, 128, 2, "registers"),    # 4096 regs/warp: 4 warps per sub-partition -> 16 warps -> 2 blocks (000 §5.4)
    (256, 168, 1, "registers"),    # 5376/warp: 3 per sub-partition -> 12 warps -> 1 block
    (256, 255, 1, "registers"),
    (256, 64, 4, "registers"),     # 2048/warp: 8 per sub-partition -> 32 warps -> 4 blocks
    (256, 32, 8, "threads"),       # registers allow 8 too: both limit
    (1024, 32, 2, "threads"),
    (32, 16, 32, "blocks"),        # 64 single-warp blocks by threads, but at most 32 blocks
    (256, 48, 5, "registers"),     # 1536/warp: 10 per sub-partition -> 40 warps -> 5 blocks
])
def test_blocks_per_sm(threads, regs, want, limit):
    r = blocks(threads, regs)
    assert r["blocks_per_sm"] == want
    assert limit in r["limited_by"]


def test_register_granularity_matters():
    # 33 registers are allocated as 40 (256 per warp): 1280 per warp, 12 warps per sub-partition,
    # 48 warps, 6 blocks of 256 threads. Without the rounding it would be 7.
    r = blocks(256, 33)
    assert r["regs_per_warp"] == 1280
    assert r["blocks_per_sm"] == 6
    assert int(65536 / (33 * 256)) == 7
    # per-sub-partition allocation: 6 warps per block, 96 regs -> 3072/warp -> 5 per partition -> 20 warps -> 3 blocks
    assert blocks(192, 96)["blocks_per_sm"] == 3
    assert blocks(256, 256)["blocks_per_sm"] == 0      # more than 255 registers cannot launch


def test_shared_memory_with_the_per_block_reservation():
    # 113 KB + 1 KB reserved, twice, is exactly the 228 KB carve-out
    assert blocks(128, 32, 113 * 1024)["blocks_per_sm"] == 2
    r = blocks(128, 32, 113 * 1024 + 1)
    assert r["blocks_per_sm"] == 1 and r["limited_by"] == ["shared_memory"]
    assert r["smem_per_block"] == 113 * 1024 + 128 + 1024          # 128-byte allocation unit
    assert blocks(128, 32, 227 * 1024)["blocks_per_sm"] == 1        # the opt-in maximum
    assert blocks(128, 32, 227 * 1024 + 4)["blocks_per_sm"] == 0
    # 16 KB tiles (000 §12.1): 17 KB each -> 13 blocks by shared memory; registers limit first
    r = blocks(256, 128, 16 * 1024)
    assert r["limits"]["shared_memory"] == 13 and r["blocks_per_sm"] == 2
    # without the reservation 14 blocks would fit: the reservation is what makes it 13
    assert (228 * 1024) // (16 * 1024) == 14


def test_occupancy_fraction_and_warps():
    r = blocks(256, 128)
    assert r["warps_per_sm"] == 16 and r["occupancy"] == 0.25      # 000 §5.4: 25 %


def test_every_stage_default_config_has_a_model():
    for spec in all_stages():
        cfg = spec.default_config
        r = occ.kernel_occupancy(spec, cfg)
        assert r["blocks_per_sm"] >= 1, (spec.id, r)


def _candidates(threads, regs, cubin_shared, dynamic, lim):
    """What the model says, and what it would say if the driver counted the reservation twice
    or not at all: printed when the GPU disagrees, so the fix is plain."""
    ours = occ.occupancy(threads, regs, occ.user_shared_bytes(cubin_shared, dynamic, lim), lim)["blocks_per_sm"]
    twice = occ.occupancy(threads, regs, cubin_shared + dynamic, lim)["blocks_per_sm"]
    from dataclasses import replace
    never = occ.occupancy(threads, regs, cubin_shared + dynamic, replace(lim, smem_reserved_per_block=0))
    return {"model": ours, "reservation_counted_twice": twice, "no_reservation": never["blocks_per_sm"]}


@pytest.mark.gpu
@pytest.mark.parametrize("stage_id", [s.id for s in all_stages()])
def test_model_matches_the_cuda_occupancy_api(stage_id):
    from gemmlab.analysis import sass
    from gemmlab.api import kernel_for
    from gemmlab.stages import get

    spec = get(stage_id)
    lim = occ.from_device(0)
    cfg = spec.default_config
    for variant in spec.variants(cfg):
        want = occ.device_blocks_per_sm(spec, cfg, variant)
        got = occ.kernel_occupancy(spec, cfg, variant, arch=lim.arch, lim=lim)
        ck = kernel_for(spec, cfg, variant, lim.arch)
        res = sass.resources(ck.cubin, ck.name)
        cands = _candidates(spec.threads(cfg), res["registers"], res["shared_bytes"], spec.smem_bytes(cfg, variant), lim)
        assert got["blocks_per_sm"] == want, (spec.kernel_name(cfg, variant), want, cands, got)


@pytest.mark.gpu
@pytest.mark.parametrize("which", ["s01", "probe"])
@pytest.mark.parametrize("smem", [0, 1, 16 * 1024, 28 * 1024, 30 * 1024, 45 * 1024, 56 * 1024, 56 * 1024 + 1, 75 * 1024,
                                  112 * 1024, 113 * 1024, 113 * 1024 + 1, 150 * 1024, 200 * 1024])
def test_shared_memory_limit_matches_the_api(which, smem):
    """Dynamic shared-memory sizes asked of two kernels: s01 never touches shared memory (its
    cubin lists none); the bank probe's ld32_linear kernel (256 threads, few registers) does, so
    its sm_90 cubin lists the reserved 1 KB as static shared memory."""
    from gemmlab.analysis import bank_probe, sass
    from gemmlab.api import kernel_for
    from gemmlab.jit import launch
    from gemmlab.stages import get

    lim = occ.from_device(0)
    if which == "s01":
        spec = get("s01")
        ck, threads = kernel_for(spec, spec.default_config, {}, lim.arch), spec.threads(spec.default_config)
    else:
        pat = next(p for p in bank_probe.basic_patterns() if p.name == "ld32_linear")
        ck, threads = bank_probe.compile_pattern(pat, lim.arch), 32 * bank_probe.WARPS
    kernel = launch.load(ck, 0)[0]
    res = sass.resources(ck.cubin, ck.name)
    launch._raise_dynamic_smem(kernel, 0, 200 * 1024, (ck.key, 0))
    want = int(kernel.occupancy.max_active_blocks_per_multiprocessor(threads, smem))
    cands = _candidates(threads, res["registers"], res["shared_bytes"], smem, lim)
    assert cands["model"] == want, (which, smem, res, want, cands)


def test_sm90_cubins_count_the_reservation_once():
    # sm_90 cubins that touch shared memory list the reserved 1 KB in their static size
    assert occ.user_shared_bytes(9216, 0, "sm_90") == 8192
    assert occ.user_shared_bytes(1024, 65536, "sm_90") == 65536     # dynamic-only kernel
    assert occ.user_shared_bytes(0, 4096, "sm_90") == 4096           # a kernel that never touches it
    assert occ.user_shared_bytes(8192, 0, "sm_80") == 8192
    r = occ.occupancy(256, 64, occ.user_shared_bytes(1024, 113 * 1024, "sm_90"))
    assert r["smem_per_block"] == 114 * 1024 and r["limits"]["shared_memory"] == 2
