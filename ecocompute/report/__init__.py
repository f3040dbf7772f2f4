"""report: one run's energy.json. build.py makes the document from a typed outcome (the
only place a report dict is made; measured_sections.py, published_sections.py,
quality_block.py, trial_results.py and held_view.py make its parts), schema.py validates
it (our formats, and the published format's facts), checks.py holds every check a report
must pass, write.py and atomic.py write it (temp file + rename), job.py runs one estimate
and writes its report, session_job.py a session of several formats and its reports,
summary.py renders the human summary (session_summary.py and held_summary.py for
sessions), software.py records what software ran, validate.py reads files safely,
share.py makes the --share link.

May import: task, llm, monitor, telemetry, published, params, formats, boundary, core,
errors.
"""
