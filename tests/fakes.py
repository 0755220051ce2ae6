"""Stand-ins for GPU arrays: objects exposing ``__cuda_array_interface__`` with made-up pointers,
so every argument check can be exercised without a GPU."""
import numpy as np


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
