"""plots: pictures of reports, drawn through matplotlib's Agg canvas (no pyplot state):
size_plot.py draws delta vs FP16 against model size with the published curves (and a
sweep's own fit), batch_plot.py the delta against the batch size, axes.py the panel's
furniture, files.py matplotlib's presence and the atomic write. Each returns the figure
or the file written. matplotlib and numpy are imported inside functions only.

May import: pooling, results (reading reports), report, published, core, errors.
"""
