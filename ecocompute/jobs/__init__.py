"""jobs: one run and its report(s) written, as the command line, the sweep and the Python
API do it: run the task (task/), build each report (report/build.py), check and render
everything before the first file is written, then write atomically, and say afterwards,
from the files themselves, what was written.

May import: summary (the words it renders before writing), task, report, params, boundary,
core, errors. Nothing above it.
"""
