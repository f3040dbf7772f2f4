"""os.environ kept as the caller had it: a library call may need a variable for a while
(or call a library that sets its own), and none of it must outlive the call."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator


@contextlib.contextmanager
def environment_kept() -> Iterator[None]:
    """os.environ after the block exactly as before it, whatever ends the block
    (an error, an interrupt): variables set inside are removed, changed ones put back."""
    before = dict(os.environ)
    try:
        yield
    finally:
        for key in set(os.environ) - set(before):
            del os.environ[key]
        for key, value in before.items():
            if os.environ.get(key) != value:
                os.environ[key] = value
