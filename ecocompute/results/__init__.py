"""results: looking at many reports. collect.py reads them, aggregate.py tables them,
plot.py draws them against the published curve, check.py grades one, curvefit.py fits
the crossover, sweep.py runs many estimates (through report.job) and fits them;
fleet.py (with fleet_cluster.py, fleet_point.py) runs a sweep's points on Dask workers
instead, one per GPU; records.py holds the run records both share.

May import: report and everything report may import.
"""
