"""aggregate: grouping and statistics over many reports."""

from __future__ import annotations

import csv
import math

import pytest

from ecocompute.cli import main
from ecocompute.core.stats import t_quantile
from ecocompute.pooling.aggregate import aggregate, render_invalid, render_table, write_csv
from ecocompute.pooling.groups import group_reports
from ecocompute.results.collect import read_reports, software_fingerprint

from ..conftest import REPO
from ..made_reports import measured, write


def _three_replicates(root):
    """Three units of one card model (their UUIDs differ)."""
    for i, (delta, fp16) in enumerate([(10.0, 1000.0), (20.0, 2000.0), (30.0, 3000.0)]):
        write(measured(delta=delta, fp16_mj=fp16, unit=f"unit{i}"), root / f"rep{i}")


def test_replicates_pool_into_one_row_with_mean_sd_cv_and_t_interval(tmp_path):
    _three_replicates(tmp_path)
    reports, invalid = read_reports([tmp_path])
    assert invalid == []
    (g,) = group_reports(reports)
    assert g.n == 3 and g.kind == "measured"
    d = g.delta()
    assert d.mean == pytest.approx(20.0) and d.sd == pytest.approx(10.0)
    assert d.cv_pct == pytest.approx(50.0)
    e = g.energy()  # energy = fp16 * (1 + delta): 1100, 2400, 3900
    assert e.mean == pytest.approx((1100 + 2400 + 3900) / 3)
    assert e.cv_pct == pytest.approx(100 * e.sd / e.mean)
    # equal within-unit variances: the random-effects pool over units (Hartung-Knapp)
    # is the t interval over their deltas
    lo, hi = g.delta_ci95()
    half = t_quantile(0.975, 2) * 10.0 / math.sqrt(3)
    assert (lo, hi) == (pytest.approx(20 - half), pytest.approx(20 + half))
    assert g.trials == 30
    assert g.pooled_delta() == pytest.approx(20.0)


def test_single_report_keeps_its_own_interval_and_blank_spread(tmp_path):
    write(measured(delta=12.0, half_ci=3.0), tmp_path / "a")
    (g,) = group_reports(read_reports([tmp_path])[0])
    assert g.delta_ci95() == (9.0, 15.0)
    assert g.delta().sd is None and g.delta().cv_pct is None


def test_measured_derived_software_and_protocol_never_share_a_row(tmp_path, run_cli):
    write(measured(delta=10.0), tmp_path / "m1")
    write(measured(delta=11.0, torch="2.12.0"), tmp_path / "other-stack")
    write(measured(delta=12.0, tokens=32), tmp_path / "smoke")
    write(measured(delta=-50.0, gpus=2), tmp_path / "spread")  # FP16 over two GPUs
    done = run_cli(
        "energy_estimate",
        "--dry_run",
        "--model",
        "made-1.1b",
        "--params_b",
        "1.1",
        "--precision",
        "NF4",
        "--gpu_arch",
        "hopper",
        "--output_dir",
        str(tmp_path / "derived"),
    )
    assert done.returncode == 0, done.stderr
    groups = group_reports(read_reports([tmp_path])[0])
    assert len(groups) == 5
    assert [g.kind for g in groups] == ["measured"] * 4 + ["derived"]
    assert {g.protocol for g in groups if g.kind == "measured"} == {
        "256 tok, batch 1, eager",
        "32 tok, batch 1, eager",
        "256 tok, batch 1, eager, 2 GPUs",
    }
    assert all(g.n == 1 for g in groups)
    assert len({g.fingerprint for g in groups if g.kind == "measured"}) == 2


def test_invalid_files_are_listed_and_skipped_and_csv_matches(tmp_path, capsys):
    _three_replicates(tmp_path)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "energy.json").write_text("{not json")
    (tmp_path / "wrong").mkdir()
    (tmp_path / "wrong" / "energy.json").write_text('{"schema_version": "x"}')
    reports, invalid = read_reports([tmp_path])
    assert "skipped 2 invalid file(s)" in render_invalid(invalid) and "not JSON" in render_invalid(
        invalid
    )
    table = aggregate(reports)
    text = render_table(table)
    assert "synthetic:made-1.1b" in text and "+20.0%" in text
    (row,) = table.rows()
    assert row.n_reports == 3 and row.vs_fp16_pct_std == 10.0
    write_csv(table, tmp_path / "t.csv")
    rows = list(csv.DictReader((tmp_path / "t.csv").open()))
    assert len(rows) == 1
    assert rows[0]["n_reports"] == "3" and float(rows[0]["vs_fp16_pct_std"]) == 10.0
    assert main(["aggregate", str(tmp_path), "-o", str(tmp_path / "u.csv")]) == 0
    captured = capsys.readouterr()
    assert "skipped 2 invalid file(s)" in captured.err and "+20.0%" in captured.out
    assert f"wrote {tmp_path / 'u.csv'}" in captured.err
    assert (tmp_path / "u.csv").read_text() == (tmp_path / "t.csv").read_text()


def test_no_valid_report_is_exit_1(tmp_path, capsys):
    (tmp_path / "energy.json").write_text("[]")
    assert main(["aggregate", str(tmp_path)]) == 1
    assert "no valid energy.json" in capsys.readouterr().err


def test_committed_validation_reports_make_a_table(capsys):
    # one fixed folder of committed H200 reports (docs/validation grows over time)
    assert main(["aggregate", str(REPO / "docs" / "validation" / "h200-issue3")]) == 0
    out = capsys.readouterr().out
    assert "NVIDIA H200" in out and "synthetic:llama-2-7b" in out
    assert "+5.5%" in out and "+19.5%" in out


def test_fingerprint_is_short_and_skips_missing_packages():
    sw = {
        "python": "3.12.3",
        "packages": {"torch": "2.11.0", "transformers": "5.17.0", "bitsandbytes": None},
        "torch_cuda": "13.0",
        "nvidia_driver": "580.159.04",
    }
    assert software_fingerprint(sw) == "py3.12.3 torch2.11.0 tf5.17.0 cu13.0 drv580.159.04"


def test_reference_path_and_table_never_import_matplotlib_or_scipy(tmp_path):
    import subprocess
    import sys

    code = (
        "import sys\n"
        "from ecocompute.cli import main\n"
        f"assert main(['energy_estimate', '--dry_run', '--params_b', '1.1', '-q', "
        f"'--output_dir', {str(tmp_path / 'd')!r}]) == 0\n"
        f"assert main(['aggregate', {str(REPO / 'docs' / 'validation')!r}]) == 0\n"
        f"main(['check', {str(tmp_path / 'd' / 'energy.json')!r}])\n"
        "heavy = {'matplotlib', 'scipy'} & set(sys.modules)\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    assert done.returncode == 0, done.stderr


def test_copies_of_one_derived_report_are_one_figure_not_replications(tmp_path, capsys):
    """Two copies of one dry run were n = 2 with an interval of +36.6 .. +36.6 (issue 19):
    a figure that was not measured is not replicated by copying it."""
    argv = ["energy_estimate", "--dry_run", "--quiet", "--model", "made-1.1b", "--gpu_arch",
            "ada", "--output_dir", str(tmp_path / "a")]  # fmt: skip
    assert main(argv) == 0
    import json

    # a second dry run of the same parameters: the same figure, written at another time
    # (a byte-identical copy is counted once before grouping: test_hostile_counted_once)
    doc = json.loads((tmp_path / "a" / "energy.json").read_text())
    doc["timestamp_utc"] = "2026-01-01T00:00:00Z"
    write(doc, tmp_path / "b")
    capsys.readouterr()
    (g,) = group_reports(read_reports([tmp_path])[0])
    assert (g.kind, g.n, g.copies, g.delta_ci95()) == ("derived", 1, 1, None)
    assert g.delta().sd is None
    assert main(["aggregate", str(tmp_path), "-o", str(tmp_path / "t.csv")]) == 0
    out = capsys.readouterr().out
    assert "(2 identical files: one figure)" in out
    (row,) = list(csv.DictReader((tmp_path / "t.csv").open()))
    assert (row["n_reports"], row["n_files"], row["vs_fp16_ci95_lo_pct"]) == ("1", "2", "")


def test_derived_figures_that_differ_are_separate_rows(tmp_path, capsys):
    import json

    argv = ["energy_estimate", "--dry_run", "--quiet", "--model", "made-2b", "--gpu_arch",
            "ada", "--output_dir", str(tmp_path / "a")]  # fmt: skip
    assert main(argv) == 0
    doc = json.loads((tmp_path / "a" / "energy.json").read_text())
    res = doc["results"]  # as an older version of the curves would have made it
    curve = res["reference_curve"]
    curve["A"] -= 5.5
    from ecocompute.published.curves import DeltaCurve

    delta = DeltaCurve(
        arch=curve["arch"], precision=curve["precision"], a_pct=curve["A"], s_pct=curve["S"],
        nstar_b=curve["Nstar"], fitted_range_b=tuple(curve["fitted_range_b"]),
        borrowed_from=curve["borrowed_from"], origin=curve["origin"], s_cap_pct=curve["s_cap_pct"],
    ).delta_pct(doc["workload"]["params_b"])  # fmt: skip
    res.update(
        energy_per_token_mj=res["fp16_energy_per_token_mj"] * (1 + delta / 100),
        vs_fp16_energy_pct=round(delta, 1),
        vs_fp16_energy_pct_exact=delta,
    )
    write(doc, tmp_path / "older")
    groups = group_reports(read_reports([tmp_path])[0])
    assert len(groups) == 2 and all(g.n == 1 for g in groups)


def test_batch_sizes_sort_as_numbers_in_the_rows():
    reports, _ = read_reports([REPO / "docs/validation/h200-map/map-7b"])
    rows = [g.protocol for g in group_reports(reports) if g.precision == "NF4"]
    assert [p.split("batch ")[1].split(",")[0] for p in rows] == ["1", "4", "16", "64"]


def test_int8_at_another_outlier_threshold_is_another_row(tmp_path, capsys):
    """LLM.int8() at threshold 0 (pure int8) and at bitsandbytes' 6.0 are two formats:
    pooled, they made one row narrower than either report's interval."""
    for name, threshold, delta in (("six", 6.0, 34.0), ("zero", 0.0, 177.8)):
        doc = measured(precision="INT8", delta=delta, unit="u1")
        doc["workload"]["llm_int8_threshold"] = threshold
        write(doc, tmp_path / name)
    groups = group_reports(read_reports([tmp_path])[0])
    assert sorted((g.precision, g.n) for g in groups) == [("INT8", 1), ("INT8 (threshold 0)", 1)]
    assert main(["aggregate", str(tmp_path)]) == 0
    rows = [x for x in capsys.readouterr().out.splitlines() if x.startswith("synthetic:")]
    assert len(rows) == 2 and any("INT8 (threshold 0) " in x for x in rows)


def test_derived_int8_of_another_library_or_threshold_is_another_row(tmp_path, capsys):
    """Dry runs of INT8 at threshold 0 and of INT8-torchao both read as plain INT8 and
    were "2 identical files: one figure"; an older derived report, with no library, is
    read by its threshold."""
    for name, extra in (("zero", ["--llm_int8_threshold", "0"]), ("ao", ["--backend", "torchao"])):
        argv = ["energy_estimate", "--dry_run", "--quiet", "--model", "made-7b", "--gpu_arch",
                "ada", "--precision", "INT8", *extra, "--output_dir",
                str(tmp_path / name)]  # fmt: skip
        assert main(argv) == 0
    import json

    doc = json.loads((tmp_path / "zero" / "energy.json").read_text())
    doc["workload"].pop("quantization", None)
    write(doc, tmp_path / "older")
    capsys.readouterr()
    labels = sorted(r.format_label for r in read_reports([tmp_path])[0])
    assert labels == ["INT8 (threshold 0)", "INT8 (threshold 0)", "INT8-torchao"]
    assert main(["aggregate", str(tmp_path / "zero"), str(tmp_path / "ao")]) == 0
    rows = [x for x in capsys.readouterr().out.splitlines() if x.startswith("made-7b")]
    assert len(rows) == 2 and not any("identical files" in x for x in rows)


def test_the_csv_holds_the_figures_at_full_precision(tmp_path):
    """docs/results-tools.md promises full precision: params_b 0.00014 was written as
    0.0001 and every figure to two decimals."""
    write(measured(params_b=0.00014, delta=20.123456, fp16_mj=2400.123456), tmp_path / "r")
    reports, _ = read_reports([tmp_path])
    path = write_csv(aggregate(reports), tmp_path / "t.csv")
    (row,) = csv.DictReader(path.read_text().splitlines())
    (report,) = reports
    assert float(row["params_b"]) == 0.00014
    assert float(row["energy_per_token_mj_mean"]) == report.energy_per_token_mj
    assert float(row["vs_fp16_pct_mean"]) == report.delta_pct


def test_a_report_without_an_interval_is_left_out_of_the_row_not_the_row_of_units(tmp_path):
    """One --iterations 1 report (no interval) switched the whole row to a t interval
    over reports: a unit's two sessions counted as two, n 5 over four units, no
    prediction interval, while --units pooled the other three. The row pools the units
    it can weigh, as --units does, and says how many reports it left out."""
    write(measured(delta=-20.0, half_ci=2.0, unit="u0"), tmp_path / "u0-s1")
    write(measured(delta=-21.0, half_ci=2.0, unit="u0"), tmp_path / "u0-s2")
    write(measured(delta=-15.0, half_ci=2.0, unit="u1"), tmp_path / "u1")
    write(measured(delta=-25.0, half_ci=2.0, unit="u2"), tmp_path / "u2")
    write(measured(delta=40.0, half_ci=None, n_pairs=1, unit="u3"), tmp_path / "u3")
    table = aggregate(read_reports([tmp_path])[0], units=True)
    (g,) = table.groups
    (p,) = table.units
    assert g.n == 3 and g.left_out == 1 and len(p.unplaced) == 1
    assert g.pooled_delta() == pytest.approx(p.pooled.mu)
    assert g.delta_ci95() == pytest.approx(p.pooled.ci95)
    assert g.prediction_interval() == pytest.approx(p.pooled.pi95)
    assert "(1 report(s) left out: no GPU UUID or no interval to weigh)" in render_table(table)


def test_reports_of_one_unit_are_one_in_n_without_intervals_and_at_fp16(tmp_path):
    """Two FP16 reports of one unit showed n 2 (docs: n counts units); two one-pair
    reports of one unit gave a t interval over its sessions as if over units."""
    for name, mj in (("a", 2400.0), ("b", 2500.0)):
        write(measured(precision="FP16", fp16_mj=mj, unit="f"), tmp_path / "fp16" / name)
    for name, delta in (("a", -10.0), ("b", -14.0)):
        write(measured(delta=delta, half_ci=None, n_pairs=1, unit="q"), tmp_path / "nf4" / name)
    fp16, nf4 = sorted(group_reports(read_reports([tmp_path])[0]), key=lambda g: g.precision)
    assert fp16.precision.startswith("FP16") and fp16.n == 1 and len(fp16.reports) == 2
    assert nf4.n == 1 and nf4.delta_ci95() is None and nf4.pooled_delta() == pytest.approx(-12.0)


def test_a_size_wider_than_its_column_widens_the_column_not_the_row(tmp_path):
    """A 1,230B model's size reads "1.23e+03", eight characters: it pushed every column
    after it one place right of its header (fourteenth session)."""
    write(measured(delta=10.0, params_b=1230.0), tmp_path / "big")
    write(measured(delta=12.0, params_b=1.1, model="synthetic:made-small"), tmp_path / "small")
    lines = render_table(aggregate(read_reports([tmp_path])[0])).splitlines()
    header = next(line for line in lines if line.startswith("model"))
    rows = [line for line in lines if line.startswith("synthetic:")]
    assert len(rows) == 2 and any("1.23e+03" in row for row in rows)
    for row in rows:  # each figure ends under its header's right edge
        for name in ("size B", "mJ/token"):
            end = header.index(name) + len(name)
            assert row[end - 1] != " " and row[end] == " ", (name, header, row)


def test_control_characters_in_a_report_reach_no_terminal(tmp_path):
    """A hostile model name holding ESC[2K and a carriage return redrew the terminal's
    line as a row with other figures (a review): every string a table prints is escaped."""
    spoof = "synthetic:x\x1b[2K\rsynthetic:made-1.1b  +25.4%\x1b[8m"
    write(measured(delta=-25.4, model=spoof), tmp_path / "a")
    text = render_table(aggregate(read_reports([tmp_path])[0]))
    assert "\x1b" not in text and "\r" not in text
    assert "synthetic:x\\x1b[2K\\rsynthetic:made-1.1b" in text
