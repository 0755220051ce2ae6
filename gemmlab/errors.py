"""Exceptions gemmlab raises. Each message says what was wrong and what to do.

Every error gemmlab raises on purpose is a :class:`GemmlabError`, so a caller can catch them in
one place; the argument errors are also ``ValueError`` / ``TypeError`` (as Python's own are), so
code that catches those keeps working:

- :class:`ArgumentError` (ValueError): a bad value (shape, rank, layout, overlap, host array,
  mixed devices; on the command line, any bad argument: exit status 2);
- :class:`ArgumentTypeError` (TypeError): an argument of the wrong type or dtype;
- :class:`ConfigError` (an ArgumentError): a stage or config that cannot run;
- :class:`NoGPUError` (RuntimeError): no usable CUDA GPU;
- :class:`CompileError`: NVRTC (or nvcc) refused a kernel.
"""


class GemmlabError(Exception):
    """Base class of gemmlab's own errors."""


class ArgumentError(GemmlabError, ValueError):
    """A bad argument value; names the argument and what would be valid."""


class ArgumentTypeError(GemmlabError, TypeError):
    """An argument of the wrong type (not an array gemmlab understands, not float32, ...)."""


class CompileError(GemmlabError):
    """NVRTC refused a kernel; ``.log`` holds the compiler's log, ``.source`` the generated source."""

    def __init__(self, message, log="", source=""):
        super().__init__(f"{message}\n--- NVRTC log ---\n{log}" if log else message)
        self.log = log
        self.source = source


class ConfigError(ArgumentError):
    """A stage or config that cannot run (unknown stage, bad parameter, shape it cannot handle)."""


class NoGPUError(GemmlabError, RuntimeError):
    """No usable CUDA GPU in this process."""
