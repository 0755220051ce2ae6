"""Occupancy: how many blocks of a kernel fit on one SM, and which resource limits it.

Four limits, each computed the way the hardware allocates (and the CUDA occupancy calculator
models it):

- registers: a warp's registers are allocated in units of 256 (per-thread count rounded up to a
  multiple of 8); each of the SM's 4 sub-partitions holds 16384 registers and whole warps, so
  warps per SM = 4 * floor(16384 / regs per warp), and blocks = floor(warps / warps per block);
- shared memory: each block takes its static + dynamic shared memory plus the 1 KB the driver
  reserves per block on sm_80 and later, rounded up to 128 bytes; the SM's carve-out is 228 KB
  on sm_90 (a block may use at most 227 KB);
- threads: 2048 per SM on sm_90 (warps rounded up per block);
- blocks: 32 per SM on sm_90.

``limits(arch)`` gives the table for an arch (H200 defaults for sm_90: 132 SMs) with no GPU;
``from_device(i)`` reads the same numbers from a live GPU.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, replace


@dataclass(frozen=True)
class ArchLimits:
    arch: str
    sms: int
    regs_per_sm: int = 65536
    regs_per_block: int = 65536
    max_regs_per_thread: int = 255
    reg_alloc_unit: int = 256            # registers per warp are allocated in these units
    sub_partitions: int = 4              # registers are split between the SM's 4 schedulers
    threads_per_sm: int = 2048
    threads_per_block: int = 1024
    blocks_per_sm: int = 32
    smem_per_sm: int = 228 * 1024        # the largest carve-out
    smem_per_block_optin: int = 227 * 1024
    smem_reserved_per_block: int = 1024  # the driver's per-block reservation (sm_80+)
    cubin_shared_includes_reserved: bool = True  # sm_90 cubins count that 1 KB in their static shared size
    smem_alloc_unit: int = 128
    warp_size: int = 32
    l2_bytes: int = 60 * 1024 * 1024
    clock_ghz: float = 1.98              # SM clock under load
    fp32_lanes_per_sm: int = 128         # FFMA lanes: 4 sub-partitions x 32
    dram_bytes_per_s: float = 3.96e12    # measured device-to-device copy rate
    smem_bytes_per_clk: int = 128        # one wavefront per clock per SM

    @property
    def fp32_flops(self) -> float:
        """FFMA peak in FLOP/s: SMs x lanes x 2 x clock."""
        return self.sms * self.fp32_lanes_per_sm * 2 * self.clock_ghz * 1e9

    def as_dict(self) -> dict:
        return asdict(self)


# What the occupancy model needs per arch. sm_90: H200 (132 SMs, 60 MB L2, 1.98 GHz, 3.96 TB/s).
ARCHES = {
    "sm_90": ArchLimits("sm_90", sms=132),
    "sm_80": ArchLimits("sm_80", sms=108, smem_per_sm=164 * 1024, smem_per_block_optin=163 * 1024,
                        cubin_shared_includes_reserved=False, l2_bytes=40 * 1024 * 1024, clock_ghz=1.41,
                        dram_bytes_per_s=1.555e12),
    "sm_86": ArchLimits("sm_86", sms=84, threads_per_sm=1536, blocks_per_sm=16, smem_per_sm=100 * 1024,
                        smem_per_block_optin=99 * 1024, cubin_shared_includes_reserved=False,
                        l2_bytes=6 * 1024 * 1024, clock_ghz=1.7, dram_bytes_per_s=0.936e12),
    "sm_89": ArchLimits("sm_89", sms=128, threads_per_sm=1536, blocks_per_sm=24, smem_per_sm=100 * 1024,
                        smem_per_block_optin=99 * 1024, cubin_shared_includes_reserved=False,
                        l2_bytes=72 * 1024 * 1024, clock_ghz=2.5, dram_bytes_per_s=1.008e12),
}


def limits(arch: str = "sm_90", sms: int | None = None) -> ArchLimits:
    """The limits table for ``arch`` ('sm_90a' is read as 'sm_90'), optionally with ``sms`` SMs."""
    key = arch.rstrip("a")
    if key not in ARCHES:
        raise ValueError(f"no occupancy table for {arch}; known: {', '.join(ARCHES)}")
    lim = ARCHES[key]
    return replace(lim, sms=sms) if sms else lim


def from_device(index: int = 0) -> ArchLimits:
    """The limits of GPU ``index``, read from the driver (needs a GPU)."""
    from .. import device

    info = device.info(index)
    base = ARCHES.get(info.arch, ArchLimits(info.arch, sms=info.sms))
    from cuda.core import Device

    p = Device(index).properties
    return replace(
        base, arch=info.arch, sms=info.sms, regs_per_sm=info.regs_per_sm,
        regs_per_block=p.max_registers_per_block, threads_per_sm=info.max_threads_per_sm,
        threads_per_block=p.max_threads_per_block, blocks_per_sm=info.max_blocks_per_sm,
        smem_per_sm=info.smem_per_sm, smem_per_block_optin=info.smem_per_block_optin,
        smem_reserved_per_block=p.reserved_shared_memory_per_block, l2_bytes=info.l2_bytes,
    )


def user_shared_bytes(cubin_shared: int, dynamic: int, lim: "ArchLimits | str" = "sm_90") -> int:
    """Shared memory a block asks for: the cubin's static size (less the 1 KB reserved area that
    sm_90 cubins count in it once they touch shared memory) plus the dynamic size."""
    if isinstance(lim, str):
        lim = limits(lim)
    static = cubin_shared
    if lim.cubin_shared_includes_reserved and static >= lim.smem_reserved_per_block:
        static -= lim.smem_reserved_per_block
    return static + dynamic


def _round_up(x: int, unit: int) -> int:
    return -(-x // unit) * unit


def occupancy(threads: int, registers: int, smem_bytes: int = 0, lim: ArchLimits | str = "sm_90") -> dict:
    """Blocks per SM for a kernel of ``threads`` threads per block, ``registers`` registers per
    thread and ``smem_bytes`` bytes of shared memory per block (static + dynamic).

    ``smem_bytes`` is what the kernel asks for (``user_shared_bytes``); the per-block reservation
    is added here. Returns {"blocks_per_sm", "limited_by": [resources at the minimum], "limits": {resource:
    blocks}, "warps_per_sm", "occupancy" (active warps / max warps), "regs_per_warp",
    "smem_per_block"} (the last two as allocated). 0 blocks when a block cannot run at all.
    """
    if isinstance(lim, str):
        lim = limits(lim)
    if threads <= 0:
        raise ValueError(f"threads per block must be positive, got {threads}")
    warps = -(-threads // lim.warp_size)
    max_warps = lim.threads_per_sm // lim.warp_size

    regs_per_warp = _round_up(registers * lim.warp_size, lim.reg_alloc_unit)
    if registers > lim.max_regs_per_thread:
        by_regs = 0
    elif regs_per_warp == 0:
        by_regs = lim.blocks_per_sm
    else:
        # The launch check assumes the block's warps are spread over all sub-partitions.
        if regs_per_warp * _round_up(warps, lim.sub_partitions) > lim.regs_per_block:
            by_regs = 0
        else:
            per_partition = (lim.regs_per_sm // lim.sub_partitions) // regs_per_warp
            by_regs = per_partition * lim.sub_partitions // warps

    smem_alloc = _round_up(smem_bytes, lim.smem_alloc_unit) + lim.smem_reserved_per_block
    if smem_bytes > lim.smem_per_block_optin:
        by_smem = 0
    elif smem_alloc == 0:  # no shared memory and no reservation: shared memory does not limit
        by_smem = lim.blocks_per_sm
    else:
        by_smem = lim.smem_per_sm // smem_alloc

    by_threads = max_warps // warps if threads <= lim.threads_per_block else 0
    by_blocks = lim.blocks_per_sm
    per = {"registers": by_regs, "shared_memory": by_smem, "threads": by_threads, "blocks": by_blocks}
    blocks = min(per.values())
    limited_by = [k for k, v in per.items() if v == blocks]
    return {
        "blocks_per_sm": blocks,
        "limited_by": limited_by,
        "limits": per,
        "warps_per_sm": blocks * warps,
        "occupancy": blocks * warps / max_warps,
        "threads": threads,
        "registers": registers,
        "regs_per_warp": regs_per_warp,
        "smem_bytes": smem_bytes,
        "smem_per_block": smem_alloc,
    }


def kernel_occupancy(spec, cfg: dict, variant: dict | None = None, arch: str = "sm_90",
                     lim: ArchLimits | None = None, cubin: bytes | None = None) -> dict:
    """``occupancy`` for a stage instantiation, registers taken from its compiled cubin."""
    from . import sass
    from ..api import kernel_for

    variant = spec.variants(cfg)[0] if variant is None else variant
    name = spec.kernel_name(cfg, variant)
    if cubin is None:
        cubin = kernel_for(spec, cfg, variant, arch).cubin
    res = sass.resources(cubin, name)
    lim = lim or limits(arch)
    smem = user_shared_bytes(res["shared_bytes"], spec.smem_bytes(cfg, variant), lim)
    return occupancy(spec.threads(cfg), res["registers"], smem, lim)


def device_blocks_per_sm(spec, cfg: dict, variant: dict | None = None, device_id: int = 0) -> int:
    """The CUDA occupancy API's answer for the same instantiation (needs a GPU)."""
    from .. import device
    from ..api import kernel_for
    from ..jit import launch

    variant = spec.variants(cfg)[0] if variant is None else variant
    ck = kernel_for(spec, cfg, variant, device.arch(device_id))
    kernel = launch.load(ck, device_id)[0]
    smem = spec.smem_bytes(cfg, variant)
    launch._raise_dynamic_smem(kernel, device_id, smem, (ck.key, device_id))
    return int(kernel.occupancy.max_active_blocks_per_multiprocessor(spec.threads(cfg), smem))
