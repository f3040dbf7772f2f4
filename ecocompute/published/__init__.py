"""published: the published EcoCompute figures (FP16 anchors, fitted delta curves, their
DOIs; the data file lives in ecocompute/data/), GPU arch detection by product name, and
prefetch.py, which asks the published site's estimator for its prediction (--prefetch).

May import: errors, precision, units.
"""
