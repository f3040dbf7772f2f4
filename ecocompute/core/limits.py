"""Bounds on the numbers a report may hold, shared by the writer's checks
(report/numbers.py) and the checks of what a run computes (task/figure_guard.py).

MAX_MAGNITUDE is far beyond any real figure (a report's largest number is a GPU's
memory in MiB) and keeps sums, squares and ratios of a million report values far from
float overflow in every tool that reads reports."""

from __future__ import annotations

MAX_MAGNITUDE = 1e15
