"""Issue 13, class 3: no report holds a non-finite number, and none is accepted.

`--params_b 1e308` used to write NaN into energy.json (not JSON: other parsers refuse
it) and print "nan mJ/token"; `validate` accepted NaN and Infinity. Now: a user's value
whose arithmetic would overflow, or that lies where the published curves give no
possible energy, is bad input (exit 2, naming the field); every writer refuses
non-finite numbers (json allow_nan=False, and the CSV); every reader refuses NaN,
Infinity, numbers that overflow a float and integers too long to convert.
"""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from ecocompute.cli import main
from ecocompute.errors import ReportInvalid, RunError
from ecocompute.pooling.aggregate import aggregate, csv_text
from ecocompute.report.numbers import NotReportJson, dumps_strict, loads_strict
from ecocompute.report.write import report_text
from ecocompute.results.collect import Invalid, read_one, read_reports
from ecocompute.sweeps.document import Fit, Sweep, write_sweep

from ..cli.test_faults import listing
from ..made_reports import _v2_base, measured, write


@pytest.mark.parametrize(
    ("flags", "says"),
    [
        (("--params_b", "1e308"), "must be at most 100000"),
        (("--params_b", "1e-300"), "must be at least 0.0001"),
    ],
)
def test_user_values_whose_arithmetic_breaks_are_bad_input(tmp_path, capsys, flags, says):
    out = tmp_path / "out"
    status = main(["energy_estimate", "--dry_run", "-q", *flags, "--output_dir", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2
    assert len(err) == 1 and err[0].startswith("ecocompute: error: invalid params_b ")
    assert says in err[0] and "nan" not in err[0].lower()
    assert listing(out) is None


# Ada too: the site caps the saving at 75% (NF4), so its curve never reaches -100% (the
# refit 0.3.0 shipped did near 28B, which made 30B and 70B "not a possible energy").
@pytest.mark.parametrize("params_b", ["0.0001", "0.5", "7", "30", "70", "100000"])
@pytest.mark.parametrize("arch", ["ada", "ampere", "hopper", "turing", "blackwell"])
def test_accepted_sizes_give_finite_reports(tmp_path, capsys, params_b, arch):
    out = tmp_path / "out"
    argv = ["energy_estimate", "--dry_run", "-q", "--params_b", params_b, "--gpu_arch", arch]
    assert main([*argv, "--output_dir", str(out)]) == 0, capsys.readouterr().err
    text = (out / "energy.json").read_text()
    loads_strict(text)  # NaN, Infinity or a float overflow would raise
    assert "nan" not in capsys.readouterr().out.lower()


BAD_NUMBERS = {
    "NaN": "NaN",
    "Infinity": "Infinity",
    "-Infinity": "-Infinity",
    "overflow": "1e999",
    "huge": "1e300",
    "long-int": "1" + "0" * 30,
    "int-too-long-to-convert": "9" * 5000,
}


@pytest.mark.parametrize("energy_mj", [-1.0, math.inf, 1e300])
def test_an_impossible_reference_figure_is_bad_input(energy_mj):
    from ecocompute.errors import InputError
    from ecocompute.published.figures import PublishedFigure
    from ecocompute.task.figure_guard import check_possible

    figure = PublishedFigure(
        "ada", "NF4", 30.0, "extrapolated", 1000.0, energy_mj, -101.0, "RTX 4090", "n"
    )
    with pytest.raises(InputError, match="not a possible energy"):
        check_possible(figure, 30.0)


@pytest.mark.parametrize("name", BAD_NUMBERS)
def test_every_reader_refuses_non_finite_and_huge_numbers(tmp_path, capsys, name):
    good = write(measured(), tmp_path / "good")
    text = json.dumps(measured()).replace(
        '"fp16_energy_per_token_mj": 2400.0', f'"fp16_energy_per_token_mj": {BAD_NUMBERS[name]}'
    )
    assert BAD_NUMBERS[name] in text
    bad = tmp_path / "bad" / "energy.json"
    bad.parent.mkdir()
    bad.write_text(text)
    assert main(["validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{good}: valid" in out
    (line,) = [ln for ln in out.splitlines() if ln.startswith(str(bad))]
    assert "INVALID" in line
    one = read_one(bad)  # aggregate, plot, check, sweep --fit_only read through this
    assert isinstance(one, Invalid) and one.problems


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, 1e300])
def test_every_writer_refuses_non_finite_and_huge_numbers(tmp_path, value):
    doc = json.loads(_v2_base())  # a report of the format the writer writes
    doc["results"]["avg_power_watts"] = value
    with pytest.raises(ReportInvalid, match=r"\$\.results\.avg_power_watts"):
        report_text(doc)
    with pytest.raises(NotReportJson):
        dumps_strict({"x": [1.0, value]})
    fit = Fit(precision="NF4", points=[], status="fitted", chi2=value)
    sweep = Sweep.model_validate(
        {"timestamp_utc": "2026-01-01T00:00:00Z", "tool": "t", "card": None, "gpu_arch": None,
         "software": None, "protocol": None, "scope": "s", "runs": [], "fits": [fit],
         "plot": None}
    )  # fmt: skip
    with pytest.raises(ReportInvalid, match="fits"):
        write_sweep(sweep, tmp_path)
    assert not (tmp_path / "sweep.json").exists()
    if not math.isfinite(value):
        (row,) = aggregate(read_reports([write(measured(), tmp_path / "r")])[0]).rows()
        with pytest.raises(RunError, match="nothing was written"):
            csv_text([dataclasses.replace(row, vs_fp16_pct_mean=value)])


def test_strict_reading_is_the_json_standard():
    assert loads_strict('{"a": [1, 2.5, -3e10, null, true]}') == {"a": [1, 2.5, -3e10, None, True]}
    for text in ("NaN", "[Infinity]", '{"a": -Infinity}', "1e400", "9" * 30):
        with pytest.raises(NotReportJson):
            loads_strict(text)
