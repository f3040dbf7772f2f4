"""sweeps: many estimates and the fit across them. sweep.py runs a sweep (or fits the
reports already written) and returns its typed Sweep; plan.py validates its points
before anything runs; run.py runs them here, one after another, through jobs.report_job and
jobs.session_job; records.py makes each point's record; summary.py, fits.py,
curvefit.py and batch_axis.py make sweep.json's figures; document.py is sweep.json as
one pydantic model (written from it, read back through it, its schema generated from
it); render.py the human summary.

May import: plots, pooling, results (reading reports), report, task, llm, params,
published, formats, boundary, core, errors.
"""
