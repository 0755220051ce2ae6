"""Stand-ins for GPU arrays: objects exposing ``__cuda_array_interface__`` with made-up pointers,
so every argument check can be exercised without a GPU; and the provenance block of a made-up
benchmark document (``fixture_provenance``)."""
import numpy as np


def fixture_provenance(date: str, command: str) -> dict:
    """The provenance of a fixture ladder/sweep document: an H200 at a fixed clock, no git."""
    return {"fixture": True, "date": date, "command": command,
            "host": "fixture", "git": None, "source_sha256": None, "versions": {"python": "3.12"}, "env": {},
            "gpu": {"name": "NVIDIA H200 (fixture)", "arch": "sm_90", "sms": 132}, "driver": None,
            "clock_source": "nvml", "sm_clock_max_mhz": 1980, "sm_clock_mhz_start": 1980,
            "sm_clock_mhz_end": 1980, "wall_seconds": 1.0, "aborted": None}


class FakeArray:
    _next = 1 << 32

    def __init__(self, shape, typestr="<f4", strides=None, ptr=None, device=0, readonly=False):
        self.shape = tuple(shape)
        itemsize = int(typestr[-1])
        if ptr is None:
            ptr = FakeArray._next
            n = int(np.prod(self.shape)) if self.shape else 1
            FakeArray._next += max(n, 1) * itemsize + 4096
        self.ptr = ptr
        self.gemmlab_device = device
        self.__cuda_array_interface__ = {
            "shape": self.shape,
            "typestr": typestr,
            "data": (ptr, readonly),
            "strides": None if strides is None else tuple(s * itemsize for s in strides),
            "version": 3,
        }

    @property
    def ndim(self):
        return len(self.shape)

    def view(self, shape, strides, offset=0):
        """Another view of the same memory (offset in elements)."""
        return FakeArray(shape, strides=strides, ptr=self.ptr + 4 * offset, device=self.gemmlab_device)
