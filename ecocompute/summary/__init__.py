"""summary: the human summary of a report (report.py) and of a session of several formats
(session.py), rendered as text from the report model, so that a summary never says more
than the file; jobs/ renders it before anything is written (a summary stdout cannot take
is an error, not a lost line), the command line prints it.

May import: report (the model and its labels), and what report may: params, published,
monitor, core, errors, boundary. Nothing above it.
"""
