"""core: the library's smallest shared pieces, with no knowledge of the user, the
hardware or a model: units and their conversions (units.py), the precisions
(precision.py), statistics of paired trials (stats.py), installed package versions
(packages.py), printable text (printable.py) and the report's limits (limits.py).

May import: errors.
"""
