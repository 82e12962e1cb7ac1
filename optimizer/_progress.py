"""Progress for long work, as the CLI shows it: a tqdm bar on a terminal, a plain line every few seconds
otherwise (logs, CI), nothing with --quiet. Library functions take a plain callback; this is one."""

from __future__ import annotations

import logging
import sys
import time
from typing import Any

PERIOD_S = 5.0  # plain lines: the first after this long (short work prints none), then at most this often
log = logging.getLogger("edgeplan.progress")


class Progress:
    """`progress(done, total, note)`; `close()` ends the bar."""

    def __init__(self, what: str, enabled: bool = True) -> None:
        self.what = what
        self.enabled = enabled
        self.bar: Any = None  # a tqdm bar, made on the first call on a terminal
        self.last = time.monotonic()
        self.printed = False
        self.tty = sys.stderr.isatty()

    def __call__(self, done: int, total: int, note: str = "") -> None:
        if not self.enabled:
            return
        if self.tty:
            if self.bar is None:
                from tqdm import tqdm

                self.bar = tqdm(total=total, desc=self.what, file=sys.stderr, leave=False, dynamic_ncols=True)
            self.bar.total = total
            self.bar.n = done
            self.bar.set_postfix_str(note[:60], refresh=False)
            self.bar.refresh()
            return
        now = time.monotonic()
        if now - self.last >= PERIOD_S or (done >= total and self.printed):
            self.last = now
            self.printed = True
            log.info("%s: %d/%d%s", self.what, done, total, f" ({note})" if note else "")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
