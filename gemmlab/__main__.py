import os
import sys

from .cli import main

code = main()
# Leave without running finalizers: CUDA objects (modules, streams) freed at interpreter exit after
# the frameworks have torn down their contexts can abort the process after the work is done.
sys.stdout.flush()
sys.stderr.flush()
os._exit(code)
