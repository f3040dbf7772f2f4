"""os.environ kept as the caller had it: a library call may need a variable for a while
(or call a library that sets its own), and none of it must outlive the call."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator

# The environment as it was when this module was first imported: by the command line
# before it runs anything, by the Python API as it is imported, so before torch or
# transformers set variables of their own (importing transformers' model classes makes
# inductor put its default cache folder in TORCHINDUCTOR_CACHE_DIR).
AT_START = dict(os.environ)


def set_at_start(key: str, value: str) -> bool:
    """Whether the variable held this value before the libraries were imported: the
    user's choice, even where it equals what a library would set."""
    return AT_START.get(key) == value


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
