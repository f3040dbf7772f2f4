"""published: the published EcoCompute figures (FP16 anchors, fitted delta curves, their
DOIs; the data file lives in ecocompute/data/) and GPU arch detection by product name.

May import: errors, precision, units.
"""
