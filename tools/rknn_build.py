"""One rknn-toolkit2 build with its whole verbose log captured, for the probe tools (run in the toolkit's venv).

The toolkit's C++ runtime writes to file descriptors 1 and 2 directly, so both are pointed at a temporary file
for the build, not only Python's sys.stdout/sys.stderr.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
from typing import Any


def captured_build(path: str, soc: str, quantize: bool, dataset: str, **config: Any) -> tuple[bool, str]:
    """Loads and builds `path` for `soc` (`config` goes to RKNN.config beside target_platform); returns whether
    both steps succeeded and everything the toolkit printed."""
    from rknn.api import RKNN

    with tempfile.TemporaryFile(mode="w+") as log:
        sys.stdout.flush()
        sys.stderr.flush()
        saved = os.dup(1), os.dup(2)
        os.dup2(log.fileno(), 1)
        os.dup2(log.fileno(), 2)
        try:
            with contextlib.redirect_stdout(log), contextlib.redirect_stderr(log):
                r = RKNN(verbose=True)
                r.config(target_platform=soc, **config)
                try:
                    ok = r.load_onnx(model=path) == 0 and r.build(do_quantization=quantize, dataset=dataset) == 0
                except Exception:
                    ok = False
                r.release()
        finally:
            sys.stdout.flush()
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
        log.seek(0)
        return ok, log.read()
