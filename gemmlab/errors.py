"""Exceptions gemmlab raises. Each message says what was wrong and what to do."""


class GemmlabError(Exception):
    """Base class of gemmlab's own errors."""


class CompileError(GemmlabError):
    """NVRTC refused a kernel; ``.log`` holds the compiler's log, ``.source`` the generated source."""

    def __init__(self, message, log="", source=""):
        super().__init__(f"{message}\n--- NVRTC log ---\n{log}" if log else message)
        self.log = log
        self.source = source


class ConfigError(GemmlabError, ValueError):
    """A stage or config that cannot run (unknown stage, bad parameter, shape it cannot handle)."""


class NoGPUError(GemmlabError, RuntimeError):
    """No usable CUDA GPU in this process."""
