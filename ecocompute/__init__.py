"""EcoCompute: does quantizing an LLM's weights save GPU energy per generated token?"""

__version__ = "0.3.0"
