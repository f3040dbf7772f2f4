"""boundary: where the library meets the user: paths the user gives (user_paths.py),
printing to a stdout that may fail (printing.py), the command line's signal handler and
the run's safe points (interrupts.py), progress on stderr (progress.py), and files:
written atomically (atomic.py: reports, tables, sweeps, pictures; temp_files.py: their
temp files, and the removal of those a killed writer left) and found under the folders
a user names (finding.py). Argument
parsing is the cli/ room's, the parameters file the params/ room's.

May import: core, errors.
"""
