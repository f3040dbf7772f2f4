"""fleet: a sweep's points on Dask workers, one per GPU (the [fleet] extra). sweep.py runs
a sweep there and returns the same typed Sweep as the sequential one; client.py is the
client's side (submit, watch, judge what came back, retry once, cancel); point.py what
a worker runs (one energy_estimate process per point); cluster.py where the points go
(a scheduler, or a local cluster), and worker_setup.py what each local worker does as
it starts; options.py the fleet's options. Dask is imported inside functions only.

May import: sweeps, pooling, results (reading reports), report, params, boundary, core,
errors.
"""
