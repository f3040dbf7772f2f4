"""results: reading many reports. collect.py reads them (in worker processes for a large
folder: in_parallel.py), each into one typed record (record.py; identity.py tells one
report named twice), for every tool that looks at reports (pooling, plots, sweeps);
validate_files.py is `validate`, conformance.py its `--profile`.

May import: report and everything report may import.
"""
