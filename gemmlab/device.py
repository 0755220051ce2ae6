"""GPU properties and arch strings. Nothing here needs a GPU until a device is asked about."""
from __future__ import annotations

import functools
from dataclasses import dataclass, asdict

from .errors import NoGPUError

NO_GPU_HINT = ("no CUDA GPU is available; commands that work without one: stages, sass, explain, "
               "report, info")


@functools.lru_cache(maxsize=None)
def device_count() -> int:
    try:
        from cuda.bindings import driver

        (err,) = driver.cuInit(0)
        if err != driver.CUresult.CUDA_SUCCESS:
            return 0
        err, n = driver.cuDeviceGetCount()
        return int(n) if err == driver.CUresult.CUDA_SUCCESS else 0
    except Exception:
        return 0


def has_gpu() -> bool:
    return device_count() > 0


def require_gpu() -> None:
    if not has_gpu():
        raise NoGPUError(NO_GPU_HINT)


@dataclass(frozen=True)
class GPUInfo:
    index: int
    name: str
    arch: str
    compute_capability: tuple
    sms: int
    smem_per_block_optin: int
    smem_per_sm: int
    regs_per_sm: int
    max_threads_per_sm: int
    max_blocks_per_sm: int
    l2_bytes: int
    clock_khz: int

    def as_dict(self) -> dict:
        return asdict(self)


@functools.lru_cache(maxsize=None)
def info(index: int = 0) -> GPUInfo:
    require_gpu()
    from cuda.core import Device

    d = Device(index)
    p = d.properties
    cc = tuple(d.compute_capability)
    return GPUInfo(
        index=index, name=d.name, arch=f"sm_{cc[0]}{cc[1]}", compute_capability=cc,
        sms=p.multiprocessor_count, smem_per_block_optin=p.max_shared_memory_per_block_optin,
        smem_per_sm=p.max_shared_memory_per_multiprocessor, regs_per_sm=p.max_registers_per_multiprocessor,
        max_threads_per_sm=p.max_threads_per_multiprocessor, max_blocks_per_sm=p.max_blocks_per_multiprocessor,
        l2_bytes=p.l2_cache_size, clock_khz=p.clock_rate,
    )


def arch(index: int = 0) -> str:
    return info(index).arch


def cc_number(arch_str: str) -> int:
    """'sm_90a' -> 90."""
    return int(arch_str[3:].rstrip("a"))
