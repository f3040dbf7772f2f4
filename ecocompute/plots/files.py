"""What every plot shares outside its axes: matplotlib's presence, text drawn as written,
and the figure written atomically (PNG, or SVG by its name)."""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path
from typing import Any

from ecocompute.boundary.atomic import atomic_path
from ecocompute.errors import RunError

log = logging.getLogger(__name__)


class _ToDebug(logging.Handler):
    """matplotlib's records, re-logged as this module's debug records."""

    def emit(self, record: logging.LogRecord) -> None:
        log.debug("matplotlib: %s", record.getMessage())


def require_matplotlib() -> None:
    """matplotlib and the pieces a plot uses imported. Raises RunError when it is not
    installed. matplotlib's import-time warnings (an unwritable HOME: "mkdir -p failed",
    "created a temporary cache directory") would reach stderr through logging's last
    resort, since a library call configures no logging; they go to this module's debug
    log instead (`ecocompute --verbose` shows them). Only for the import: nothing
    outlives it."""
    logger = logging.getLogger("matplotlib")
    handler, propagate = _ToDebug(), logger.propagate
    logger.addHandler(handler)
    logger.propagate = False
    try:
        import matplotlib.backends.backend_agg
        import matplotlib.figure  # noqa: F401
    except ImportError:
        raise RunError(
            "plotting needs matplotlib, which is not installed: pip install 'ecocompute[plot]'"
        ) from None
    finally:
        logger.removeHandler(handler)
        logger.propagate = propagate


def text_as_written() -> Any:
    """matplotlib's settings under which names are text, not markup: a model name holding
    `$` (mathtext) or a user's matplotlibrc with usetex is drawn as written."""
    import matplotlib

    return matplotlib.rc_context({"text.parse_math": False, "text.usetex": False})


def write_figure(fig: Any, path: str | os.PathLike[str]) -> Path:
    """PNG, or SVG when the name ends in .svg; written atomically."""
    target = Path(path)
    fmt = "svg" if target.suffix.lower() == ".svg" else "png"
    with atomic_path(target) as tmp, warnings.catch_warnings(record=True) as seen:
        warnings.simplefilter("always")  # a name in a script the font lacks: said once
        fig.savefig(tmp, format=fmt, dpi=130)
    missing = sorted({str(w.message) for w in seen if "missing from font" in str(w.message)})
    if missing:
        log.warning(
            "some characters of the names are not in the plot's font and are drawn as "
            "boxes (%d warning(s) from matplotlib; --verbose lists them)",
            len(missing),
        )
        for text in missing:
            log.debug("%s", text)
    for w in seen:
        if "missing from font" not in str(w.message):
            log.debug("matplotlib: %s", w.message)
    return target
