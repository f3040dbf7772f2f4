"""Progress lines on stderr (stdout is kept for the summary and machine output)."""

from __future__ import annotations

import os
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


def quiet_library_progress_bars() -> None:
    """With --quiet, also silence the bars transformers and huggingface_hub draw on
    stderr themselves ("Loading weights", "Writing model shards"). Works whether or
    not they are imported yet: the environment variable covers a later import."""
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    hub_utils = sys.modules.get("huggingface_hub.utils")
    if hub_utils is not None:
        hub_utils.disable_progress_bars()
    transformers_logging = sys.modules.get("transformers.utils.logging")
    if transformers_logging is not None:
        transformers_logging.disable_progress_bar()
