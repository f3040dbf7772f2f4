"""results: looking at many reports. collect.py reads them, each into one typed record
(record.py), for every tool here: validate_files.py (`validate`), aggregate.py tables
them, plot.py (with plot_axes.py) draws them against the published curve, check.py
grades one, curvefit.py fits
the crossover, sweep.py runs many estimates (through report.job) and fits them;
fleet.py (with fleet_cluster.py, fleet_point.py) runs a sweep's points on Dask workers
instead, one per GPU; records.py holds the run records both share; upgrade.py reads
ecocompute 0.2's format as the current one.

May import: report and everything report may import.
"""
