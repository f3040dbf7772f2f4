"""EcoCompute: does quantizing an LLM's weights save GPU energy per generated token?

The Python API (ecocompute/api.py, docs/api.md): estimate(), sweep(), read_report(), pool_units(),
and their results, Estimate, FormatResult and Sweep; the command line (`ecocompute ...`) is a
thin layer over the same code. They are imported on first use, so that importing the
package (the command line's first step, before its signals are held) costs nothing.
"""

__version__ = "0.6.2"

__all__ = [
    "Estimate",
    "FormatResult",
    "Sweep",
    "SweepFailed",
    "__version__",
    "estimate",
    "pool_units",
    "prompt_sweep",
    "read_report",
    "sweep",
]
_API = (
    "Estimate",
    "FormatResult",
    "SweepFailed",
    "estimate",
    "pool_units",
    "prompt_sweep",
    "read_report",
    "sweep",
)


def __getattr__(name: str) -> object:  # no typing import: it costs milliseconds
    if name in _API:
        from ecocompute import api

        return getattr(api, name)
    if name == "Sweep":
        from ecocompute.sweeps.document import Sweep

        return Sweep
    raise AttributeError(f"module 'ecocompute' has no attribute {name!r}")
