"""Messages that accelerate, transformers, bitsandbytes and torchao print while a model loads,
moved into this package's debug log.

A load that ends in our own refusal (say, a model that does not fit within
--max_gpu_memory_gib) was preceded on stderr by accelerate's own "WARNING ... offloaded
to the disk" line, --quiet or not: two voices, and the promise of one line broken.
While a load runs, those libraries' log records and Python warnings go to this
module's logger at DEBUG (shown with --verbose), never straight to stderr. Errors
still surface as exceptions, which the loader turns into one line.
"""

from __future__ import annotations

import contextlib
import logging
import warnings
from collections.abc import Iterator

log = logging.getLogger(__name__)

# torchao logs at import (its optional C++ extensions, Triton), and torch itself warns
# through its own handler when torchao registers its types.
LIBRARY_LOGGERS = ("accelerate", "transformers", "bitsandbytes", "torchao", "torch")


class _ToDebug(logging.Handler):
    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # a library's malformed log call must not fail a load
            text = str(record.msg)
        log.debug("%s %s: %s", record.levelname, record.name, text)


@contextlib.contextmanager
def library_messages_to_debug() -> Iterator[None]:
    """While the block runs, the libraries' log records and warnings go to our debug
    log; their loggers' handlers, propagation and the warning filters are restored
    afterwards."""
    handler = _ToDebug()
    saved = []
    for name in LIBRARY_LOGGERS:
        logger = logging.getLogger(name)
        saved.append((logger, list(logger.handlers), logger.propagate))
        for h in list(logger.handlers):
            logger.removeHandler(h)
        logger.addHandler(handler)
        logger.propagate = False
    caught: list[warnings.WarningMessage] = []
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            yield
    finally:
        for logger, handlers, propagate in saved:
            logger.removeHandler(handler)
            for h in handlers:
                logger.addHandler(h)
            logger.propagate = propagate
        for w in caught:
            log.debug("%s: %s", w.category.__name__, w.message)
