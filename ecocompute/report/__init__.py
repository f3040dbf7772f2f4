"""report: one run's energy.json. build.py makes the document from a typed outcome (the
only place a report dict is made; quality_block.py, trial_results.py and held_view.py
make three of its blocks), schema.py validates it (our formats, and the published format's facts),
checks.py holds every check a report must pass, write.py and atomic.py write it (temp
file + rename), job.py runs one estimate and writes its report (the path both
energy_estimate and sweep take), summary.py renders the human summary (held_summary.py
its lines for formats on different GPUs), software.py
records what software ran, validate.py reads files safely, share.py makes the --share
link.

May import: estimate, llm, monitor, telemetry, published, params, stats, precision,
progress, errors, units.
"""
