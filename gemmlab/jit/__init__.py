"""Run-time compilation: generated source -> NVRTC (through cuda.core) -> cubin -> disk cache -> kernel."""
from .compiler import compile_cubin, compiler_version, CompiledKernel
from .cache import KernelCache, default_cache_dir

__all__ = ["compile_cubin", "compiler_version", "CompiledKernel", "KernelCache", "default_cache_dir"]
