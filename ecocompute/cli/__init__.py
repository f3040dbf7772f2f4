"""cli: the command line, a thin layer over the library: flags (flags.py), one module
per command or family of commands, the dispatch with its one-line failures and exit
statuses (dispatch.py), and the process's entry point that holds the signals before
anything else is imported (entry.py). Nothing is imported here eagerly: entry.py must
run before the rest of the package is imported.

May import: every room below it (results, report, task, params, boundary, core, errors).
"""

from __future__ import annotations

TYPE_CHECKING = False  # typing takes about 12 ms to import, before entry.py holds Ctrl-C
if TYPE_CHECKING:
    from typing import Any

__all__ = ["build_parser", "main"]


def __getattr__(name: str) -> Any:
    if name in __all__:
        from ecocompute.cli import dispatch

        return getattr(dispatch, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
