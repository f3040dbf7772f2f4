"""results: reading many reports. collect.py reads them, each into one typed record
(record.py, through reader.py; identity.py tells one report named twice; upgrade.py
reads ecocompute 0.2's format as the current one), for every tool that looks at reports
(pooling, plots, sweeps); validate_files.py is `validate`.

May import: report and everything report may import.
"""
