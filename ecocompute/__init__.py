"""EcoCompute: does quantizing an LLM's weights save GPU energy per generated token?

The Python API (ecocompute/api.py): estimate(), sweep(), read_report(); the command
line (`ecocompute ...`) is a thin layer over the same functions.
"""

__version__ = "0.4.0"

from ecocompute.api import Estimate, FormatResult, estimate, read_report, sweep

__all__ = ["Estimate", "FormatResult", "__version__", "estimate", "read_report", "sweep"]
