"""Progress lines on stderr (stdout is kept for the summary and machine output)."""

from __future__ import annotations

import sys
import time
from typing import TextIO


class Progress:
    def __init__(self, quiet: bool = False, stream: TextIO | None = None) -> None:
        self.quiet = quiet
        self.stream = stream if stream is not None else sys.stderr
        self._t0 = time.monotonic()

    def __call__(self, message: str) -> None:
        if self.quiet:
            return
        elapsed_s = time.monotonic() - self._t0
        print(f"[{elapsed_s:7.1f}s] {message}", file=self.stream, flush=True)
