"""report: one run's energy.json. build.py makes the document from a typed outcome (the
only place a report dict is made), schema.py validates it, write.py and atomic.py write
it (temp file + rename), job.py runs one estimate and writes its report (the path both
energy_estimate and sweep take), summary.py renders the human summary, software.py
records what software ran, validate.py checks files, share.py makes the --share link.

May import: estimate, llm, monitor, telemetry, published, params, stats, precision,
progress, errors, units.
"""
