"""An older report's rounding bounds (report/compare.py): where every figure a first
comparison found off is a trial's or a format's statistic, only those are derived again
(_local_bounds); the bounds must be the whole derivation's (_full_bounds), to the bit,
on the committed H200 reports of format 1.4."""

from __future__ import annotations

import json
from pathlib import Path

from ecocompute.report import derive
from ecocompute.report.compare import (
    _LOCAL,
    _full_bounds,
    _local_bounds,
    _located,
    bounded_figures,
    compare,
)
from ecocompute.report.legacy import upgraded
from ecocompute.report.read import older_format

REPO = Path(__file__).resolve().parents[2]


def _older_measured_reports():
    for path in sorted((REPO / "docs" / "validation").rglob("energy.json")):
        doc = json.loads(path.read_text())
        if "ecocompute_format" in doc or older_format(doc) is None:
            continue
        report = upgraded(doc)
        if report.results.basis == "measured" and report.results.trials:
            yield path, report


def test_local_bounds_are_the_whole_derivations_on_every_committed_older_report():
    compared = 0
    for path, report in _older_measured_reports():
        res, work = report.results, report.workload
        inputs = derive.measured_inputs(res, work.precision, work.batch_size,
                                        report.system_under_test.memory_bandwidth_gbs,
                                        work.prompt_tokens, work.max_new_tokens)  # fmt: skip
        again = derive.derive_results(inputs, res.note or "")
        paths = frozenset(p.split(": ", 1)[0] for p in compare(res, again, {}))
        base = bounded_figures(again, paths)
        where = {p: _located(m) for p in base if (m := _LOCAL.fullmatch(p))}
        if not where:
            continue
        local = {p: base[p] for p in where}
        assert _local_bounds(inputs, local, where) == _full_bounds(inputs, local), path
        compared += 1
    assert compared >= 20  # of the H200 reports of format 1.4 whose trial figures need bounds


def test_a_formats_figures_one_at_a_time_are_its_statistics_to_the_bit():
    checked = 0
    for path, report in list(_older_measured_reports())[:6]:
        res, work = report.results, report.workload
        inputs = derive.measured_inputs(res, work.precision, work.batch_size,
                                        report.system_under_test.memory_bandwidth_gbs,
                                        work.prompt_tokens, work.max_new_tokens)  # fmt: skip
        for fmt, trials in derive.by_format(inputs.trials).items():
            whole = derive.format_stats(trials, inputs.facts[fmt], inputs)
            for field in type(whole).model_fields:
                one = derive.FormatFigures(trials, inputs.facts[fmt], inputs).figure(field)
                assert one == getattr(whole, field), (path, fmt, field)
                checked += 1
    assert checked >= 100
