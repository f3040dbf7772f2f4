"""What every plot shares outside its axes: matplotlib's presence, text drawn as written,
and the figure written atomically (PNG, or SVG by its name)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from ecocompute.errors import RunError
from ecocompute.report.atomic import atomic_path


def require_matplotlib() -> None:
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        raise RunError(
            "plotting needs matplotlib, which is not installed: pip install 'ecocompute[plot]'"
        ) from None


def text_as_written() -> Any:
    """matplotlib's settings under which names are text, not markup: a model name holding
    `$` (mathtext) or a user's matplotlibrc with usetex is drawn as written."""
    import matplotlib

    return matplotlib.rc_context({"text.parse_math": False, "text.usetex": False})


def write_figure(fig: Any, path: str | os.PathLike[str]) -> Path:
    """PNG, or SVG when the name ends in .svg; written atomically."""
    target = Path(path)
    fmt = "svg" if target.suffix.lower() == ".svg" else "png"
    with atomic_path(target) as tmp:
        fig.savefig(tmp, format=fmt, dpi=130)
    return target
