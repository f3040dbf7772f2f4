"""report: the report as one typed model (model.py, results_model.py), built from a run
(build.py: raw records; derive.py: every figure derived from them, unrounded), checked
(checks.py: derived again, exactly for format 2.0; within their rounding for older
formats, which legacy.py upgrades into the model), read (read.py, files.py), its schema
generated (schema.py) and written (write.py, through boundary/atomic.py); a report of
an older format of ours copied into today's published names (envelope.py: the names and
back; upgrade.py: `ecocompute upgrade`'s files).

May import: task (the typed outcome of a run), params, published, llm (the corpus
record, how converted weights' note opens), monitor, telemetry, core, errors,
boundary. Nothing above it.
"""
