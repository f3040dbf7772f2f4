"""Whether a report's figures follow from its own trials: `validate` (and every tool that
reads reports) checks a report's arithmetic, not only its shape. Every number a report
derives is checked against what it derives from.

A measured report must name the GPU(s) it measured, once each, with the arch class
their names say, at a real time, under one protocol (report/consistency_system.py);
each trial must agree with itself and the report's trial totals with its trials
(consistency_trials.py); its per-format figures and headline must recompute from its
trials (consistency_formats.py); its pairs, interval and verdict from its pairs
(consistency_pairs.py); the view of every GPU a session held, where it has one, from
its trials by the same checks (consistency_held.py). A report derived from the
published dataset holds no trials, pairs, interval or verdict, and its delta follows
from its two energies.

Tolerances are the rounding the writer does (report/tolerance.py), carried through
the arithmetic: a report our writer made always passes, and a figure changed by more
than its rounding does not. A 1.0 or 1.1 report (the published container's) holds no
trials: only what its format holds is checked. Called on documents that already passed
the schema; anything missing is reported, never raised.

The checks of trials, formats and system are written per format, so that a report of
several quantized formats (each against its round's FP16 trial) adds a loop over its
formats here, not new checks.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ecocompute.report.consistency_formats import FP16, format_problems, headline_problems
from ecocompute.report.consistency_held import held_problems
from ecocompute.report.consistency_pairs import fp16_alone_problems, pair_problems
from ecocompute.report.consistency_system import gpu_problems, system_problems
from ecocompute.report.consistency_trials import trial_problems
from ecocompute.report.schema import PUBLISHED_FORMATS
from ecocompute.report.tolerance import (
    HALF_MJ,
    HALF_ONE_DECIMAL,
    SLACK,
    delta_fields,
    number,
    pct_range,
)

__all__ = ["consistency_problems", "delta_fields"]


def consistency_problems(doc: Mapping[str, Any]) -> list[str]:
    """Every way a schema-valid report contradicts itself, as "json.path: why"."""
    results = doc.get("results")
    if not isinstance(results, Mapping):
        return []
    if doc.get("schema_version") in PUBLISHED_FORMATS:  # one run: only its format's fields
        sut = {k: (doc.get("system_under_test") or {}).get(k) for k in ("gpu", "accelerator_count")}
        gpus = gpu_problems(sut) if results.get("basis") == "measured" else []
        return gpus + _delta_from_energies(doc, results)
    if results.get("basis") != "measured":
        return _derived(doc, results)
    return _measured(doc, results)


# -- derived (published-path) reports ---------------------------------------------------


def _derived(doc: Mapping[str, Any], res: Mapping[str, Any]) -> list[str]:
    problems = []
    for key in ("vs_fp16_ci95_pct", "n_pairs", "total_energy_joules"):
        if res.get(key) is not None:
            problems.append(
                f"$.results.{key}: {res[key]!r} in a report derived from the published "
                "dataset, which ran no trials (expected null)"
            )
    for key in ("pairs", "per_format"):
        if res.get(key):
            problems.append(
                f"$.results.{key}: present in a report derived from the published dataset, "
                "which ran no trials"
            )
    return problems + _delta_from_energies(doc, res)


def _delta_from_energies(doc: Mapping[str, Any], res: Mapping[str, Any]) -> list[str]:
    """Without trials, the delta follows from the two energies (each rounded)."""
    energy = number(res.get("energy_per_token_mj"))
    fp16 = number(res.get("fp16_energy_per_token_mj"))
    half_mj = HALF_ONE_DECIMAL if doc.get("schema_version") in PUBLISHED_FORMATS else HALF_MJ
    if energy is None or fp16 is None or fp16 <= half_mj:
        return []
    problems = []
    low, high = pct_range(energy, fp16, half_mj)
    for key, half in delta_fields(doc):
        delta = number(res.get(key))
        if delta is not None and not low - half - SLACK <= delta <= high + half + SLACK:
            problems.append(
                f"$.results.{key}: {delta:g}%, but its energies ({energy:g} vs FP16 "
                f"{fp16:g} mJ/token) give {100 * (energy / fp16 - 1):.3f}%"
            )
    return problems


# -- measured reports -------------------------------------------------------------------


def _measured(doc: Mapping[str, Any], res: Mapping[str, Any]) -> list[str]:
    work = doc.get("workload") or {}
    trials = [t for t in res.get("trials") or [] if isinstance(t, Mapping)]
    precision = str(work.get("precision"))
    per_format = res.get("per_format") or {}
    gpus_of = {
        fmt: stats["nvml_indices"]
        for fmt, stats in per_format.items()
        if isinstance(stats, Mapping) and isinstance(stats.get("nvml_indices"), list)
    }
    problems = system_problems(doc)
    problems += trial_problems(trials, doc, gpus_of)
    problems += format_problems(trials, per_format, {FP16, precision}, doc)
    problems += headline_problems(res, per_format, precision)
    if precision == FP16:
        problems += fp16_alone_problems(res)
    else:
        problems += pair_problems(doc, res, trials, precision)
    return problems + held_problems(doc, res, precision)
