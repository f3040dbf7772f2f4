"""core: the library's smallest shared pieces, with no knowledge of the user, the
hardware or a model: units and their conversions (units.py), the precisions
(precision.py), statistics of paired trials (stats.py), installed package versions
(packages.py), printable text (printable.py), the report's limits (limits.py) and
os.environ kept as the caller had it (environment.py).

May import: errors.
"""
