"""boundary: where the library meets the user: paths the user gives (user_paths.py),
printing to a stdout that may fail (printing.py), the command line's signal handler and
the run's safe points (interrupts.py), and progress on stderr (progress.py). Argument
parsing is the cli/ room's, the parameters file the params/ room's.

May import: core, errors.
"""
