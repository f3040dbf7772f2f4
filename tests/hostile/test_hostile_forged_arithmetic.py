"""Issue 20, items 7 and 8: forged measured reports that still validated.

Every number a report derives is checked against what it derives from: per-format
spread and CV, per-format and headline throughput and power, each trial's power and
throughput against its duration, its energy against its counter, the sampled-vs-counter
figures, the dropped-sample total, energy above idle and the idle share, a round
copied and re-indexed, a GPU listed twice, per-GPU energies for GPUs the report does
not have, tokens per run against the trials, an impossible timestamp, and an arch
class that is not the GPU's (`check` graded an "NVIDIA H200" report that said `ada`
against Ada's figures). Each forgery below changes one figure of a real report and is
found; the writer's own reports, whatever their figures, always pass.
"""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from ecocompute.cli import main
from ecocompute.report.read import energy_report_problems as consistency_problems

from ..conftest import REPO
from ..made_reports import v2_measured as _document
from ..made_reports import write

VALIDATION = REPO / "docs" / "validation"
NATIVE = VALIDATION / "h200-real-weights" / "nf4" / "energy.json"  # written as 1.3
UPGRADED = VALIDATION / "h200-issue3" / "tinyllama-nf4" / "energy.json"  # 1.2, upgraded
DETERMINISTIC = {"derandomize": True, "database": None, "deadline": None, "print_blob": False}


def native() -> dict:
    return json.loads(NATIVE.read_text())


def upgraded() -> dict:
    return json.loads(UPGRADED.read_text())


def _res(doc: dict) -> dict:
    return doc["results"]


def _scale(path: str, factor: float, plus: float = 0.0):
    """An edit: the value at path (a/b/0/c) times factor, plus plus."""

    def edit(doc: dict) -> None:
        *parents, last = path.split("/")
        node = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = round(node[last] * factor + plus, 4)

    return edit


def _set(path: str, value):
    def edit(doc: dict) -> None:
        *parents, last = path.split("/")
        node = doc
        for key in parents:
            node = node[int(key)] if isinstance(node, list) else node[key]
        node[last] = value

    return edit


def _gpu_twice(doc: dict) -> None:
    sut = doc["system_under_test"]
    sut["gpus"].append({**sut["gpus"][0], "nvml_index": 1, "cuda_index": 1})
    sut["accelerator_count"] = 2


def _split_over_two_gpus(doc: dict) -> None:
    for t in _res(doc)["trials"]:
        half = round(t["energy_joules"] / 2, 4)
        t["per_gpu_energy_joules"] = [half, round(t["energy_joules"] - half, 4)]


# (what, edit, what the reason names): one forgery each, on the report written as 1.3
FORGERIES = [
    (
        "per-format sd",
        _scale("results/per_format/NF4/energy_per_token_mj_sd", 0.5),
        "NF4.energy_per_token_mj_sd",
    ),
    ("per-format CV", _scale("results/per_format/FP16/cv_pct", 1.0, 0.1), "FP16.cv_pct"),
    (
        "per-format throughput",
        _scale("results/per_format/FP16/throughput_tokens_per_s", 1.01),
        "FP16.throughput_tokens_per_s",
    ),
    (
        "per-format power",
        _scale("results/per_format/NF4/avg_power_watts", 0.99),
        "NF4.avg_power_watts",
    ),
    (
        "headline throughput",
        _scale("results/throughput_tokens_per_s", 1.0, 1.0),
        "$.results.throughput_tokens_per_s",
    ),
    ("headline power", _scale("results/avg_power_watts", 1.0, -1.0), "$.results.avg_power_watts"),
    (
        "trial power",
        _scale("results/trials/2/avg_power_watts", 1.0, 0.5),
        "trials[2].avg_power_watts",
    ),
    (
        "trial throughput",
        _scale("results/trials/5/throughput_tokens_per_s", 1.02),
        "trials[5].throughput_tokens_per_s",
    ),
    ("trial duration", _scale("results/trials/3/duration_s", 0.9), "trials[3].avg_power_watts"),
    ("dropped total", _set("results/dropped_samples", 7), "$.results.dropped_samples"),
    (
        "counter vs energy",
        _scale("results/trials/4/counter_energy_joules", 1.0, 1.0),
        "trials[4].energy_joules",
    ),
    (
        "sampled vs counter",
        _scale("results/trials/4/sampled_vs_counter_pct", 1.0, 0.5),
        "trials[4].sampled_vs_counter_pct",
    ),
    (
        "sampled vs counter mean",
        _scale("results/sampled_vs_counter_pct", 1.0, 0.5),
        "$.results.sampled_vs_counter_pct",
    ),
    (
        "sampled vs counter max",
        _scale("results/sampled_vs_counter_max_abs_pct", 1.0, 0.5),
        "sampled_vs_counter_max_abs_pct",
    ),
    (
        "sampled per token",
        _scale("results/per_format/NF4/sampled_energy_per_token_mj", 1.0, 1.0),
        "NF4.sampled_energy_per_token_mj",
    ),
    (
        "above idle",
        _scale("results/per_format/FP16/energy_above_idle_per_token_mj", 1.0, 1.0),
        "FP16.energy_above_idle_per_token_mj",
    ),
    ("idle share", _scale("results/per_format/NF4/idle_share_pct", 1.0, 1.0), "NF4.idle_share_pct"),
    (
        "above-idle delta",
        _scale("results/vs_fp16_above_idle_pct", 1.0, 1.0),
        "$.results.vs_fp16_above_idle_pct",
    ),
    ("a GPU twice", _gpu_twice, "listed twice"),
    ("per-GPU energies", _split_over_two_gpus, "per_gpu_energy_joules: 2 GPU(s)"),
    ("tokens per run", _set("measurement/tokens_per_run", 128), "$.measurement.tokens_per_run"),
    ("no such date", _set("timestamp_utc", "2026-02-30T10:00:00Z"), "no real date"),
    ("from the future", _set("timestamp_utc", "2999-01-01T00:00:00Z"), "in the future"),
    (
        "arch not the GPU's",
        _set("system_under_test/gpu_arch", "ada"),
        "$.system_under_test.gpu_arch",
    ),
]


@pytest.mark.parametrize(("what", "edit", "named"), FORGERIES, ids=[f[0] for f in FORGERIES])
def test_one_forged_figure_is_found(tmp_path, capsys, what, edit, named):
    doc = native()
    assert consistency_problems(doc) == []
    edit(doc)
    problems = consistency_problems(doc)
    assert problems and any(named in p for p in problems), problems
    bad = write(doc, tmp_path / "bad")
    assert main(["validate", str(bad)]) == 1
    assert f"{bad}: INVALID " in capsys.readouterr().out


@pytest.mark.parametrize(
    ("what", "edit", "named"),
    [f for f in FORGERIES if "idle" not in f[0] and "above" not in f[0]],
    ids=[f[0] for f in FORGERIES if "idle" not in f[0] and "above" not in f[0]],
)
def test_a_forged_figure_of_an_upgraded_report_is_found(what, edit, named):
    """Reports written as 1.2 and upgraded carry fewer figures; those they carry are checked."""
    doc = upgraded()
    assert consistency_problems(doc) == []
    edit(doc)
    assert any(named in p or "per_gpu_energy_joules" in p for p in consistency_problems(doc))


def test_a_measured_report_only_a_day_ahead_of_this_clock_stands():
    """Clocks differ between machines: a report timestamped an hour from now is kept."""
    import datetime as dt

    from ecocompute.report.checks import timestamp_problems

    soon = (dt.datetime.now(dt.UTC) + dt.timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
    assert timestamp_problems(soon) == []


@pytest.mark.parametrize(
    ("stamp", "says"),
    [
        ("2026-07-13T09:26:40+00:00", None),  # refused as "no real date" without a fraction
        ("2026-07-13T09:26:40.987304+00:00", None),
        ("2026-07-13T09:26:40.9Z", None),
        ("2026-07-13T09:26:40+05:00", "is not UTC (offset +0500), as its name says"),
        ("2026-07-13T09:26:40.987304+05:00", "is not UTC (offset +0500)"),  # was taken as UTC
    ],
)
def test_a_timestamp_reads_in_any_iso_8601_form_and_must_be_utc(stamp, says):
    """Format 2.0 (and the published formats) take any text; 1.2-1.4's schemas take Z."""
    doc = json.loads((VALIDATION / "h100-units/12540358f057/session/FP8/energy.json").read_text())
    doc["timestamp_utc"] = stamp
    problems = consistency_problems(doc)
    said = [] if says is None else [f"$.timestamp_utc: {stamp!r} {says}"]
    assert [p[: len(said[0])] for p in problems] == said if said else problems == [], problems


def test_a_figure_in_exponent_form_stands_for_its_own_last_digit():
    """A review: 1e-05 was read as a whole number, within +-0.5, so a 1.4 report's
    interval end of -0.486 rewritten as 1e-05 stood; it stands for 1e-05 +- 5e-06."""
    from ecocompute.report.derived_checks import decimals_of

    assert [decimals_of(x) for x in (1e-05, 1.5e-05, -0.486, 100.0, 1e16)] == [5, 6, 3, 1, 0]
    doc = json.loads(
        (VALIDATION / "h200-map/map-7b/synthetic-llama-2-7b-b1/FP8/energy.json").read_text()
    )
    assert consistency_problems(doc) == [] and doc["results"]["vs_fp16_ci95_pct"][0] == -0.486
    doc["results"]["vs_fp16_ci95_pct"][0] = 1e-05
    assert consistency_problems(doc) == [
        "$.results.vs_fp16_ci95_pct[0]: 1e-05, but its trials give -0.485804"
    ]


# --- the writer's own reports: a round copied, and any figures ------------------------


def test_a_round_copied_and_reindexed_is_found():
    """The writer's own arithmetic over the copy: every figure agrees, n is one more, the
    interval narrower; only the repeated measurement gives it away."""
    rounds = [
        ((600.0 + 7 * k, 4.5 + 0.01 * k, {}), (780.0 - 3 * k, 5.9 + 0.02 * k, {})) for k in range(5)
    ]
    honest = _document(rounds, "NF4", 256)
    assert consistency_problems(honest) == []
    forged = _document([*rounds, rounds[2]], "NF4", 256)
    assert consistency_problems(forged) == [
        "$.results.trials: round 5 repeats round 2 figure for figure (a round counted twice)"
    ]


@pytest.mark.parametrize(
    ("edit", "named"),
    [
        (lambda w: w.update(nvml_indices=[]), "1 energies, but nvml_indices names 0 GPU(s)"),
        (lambda w: w["nvml_indices"].append(5), "1 energies, but nvml_indices names 2 GPU(s)"),
        (
            lambda w: w.update(nvml_indices=[0, 0], energy_joules_by_gpu=[9.0, 9.0]),
            "nvml_indices: [0, 0] names a GPU twice",
        ),
    ],
)
def test_an_idle_window_of_other_gpus_than_energies_is_invalid_not_a_crash(
    tmp_path, capsys, edit, named
):
    """Its energies were zipped with its GPUs (strict) while deriving: one such file
    stopped every command that reads reports with an internal error; it is one INVALID
    line, and the valid file beside it still reads."""
    rounds = [((600.0 + k, 4.5, {}), (780.0 - k, 5.9, {})) for k in range(3)]
    good = _document(rounds, "NF4", 256, idle_w=50.0)
    bad = copy.deepcopy(good)
    edit(bad["results"]["idle_window"])
    assert any(named in p for p in consistency_problems(bad))
    write(good, tmp_path / "good")
    write(bad, tmp_path / "bad")
    assert main(["validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert "good/energy.json: valid" in out and named in out


# energy per token from 1 mJ to 100 J; windows of 1 ms to 3 h, at most 700 W per GPU
_mj_per_token = st.floats(min_value=1.0, max_value=1e5, allow_nan=False)
_duration = st.floats(min_value=1e-3, max_value=1e4, allow_nan=False)


@st.composite
def _readings(draw, gpus: int, tokens: int):
    energy = draw(_mj_per_token) * tokens / 1000.0
    duration = max(draw(_duration), energy / (700.0 * gpus))
    extra = {
        "counter": draw(st.booleans()),
        "sampled_ratio": draw(st.floats(min_value=0.5, max_value=1.5)),
        "dropped": draw(st.integers(min_value=0, max_value=20)),
    }
    return energy, duration, extra


@settings(max_examples=200, **DETERMINISTIC)
@given(data=st.data())
def test_the_writers_own_reports_of_any_figures_always_pass(data):
    """Any energies, durations, tokens, idle power, counter or not, drops, one or two
    GPUs, derived by the writer's own code into a report of format 2.0: it reads back and
    derives again to the same floats."""
    gpus = data.draw(st.integers(min_value=1, max_value=2))
    precision = data.draw(st.sampled_from(["NF4", "INT8", "FP16"]))
    n = data.draw(st.integers(min_value=1, max_value=8))
    tokens = data.draw(st.integers(min_value=1, max_value=4096))
    if precision == "FP16":
        readings = [data.draw(_readings(gpus, tokens)) for _ in range(n)]
    else:
        readings = [
            (data.draw(_readings(gpus, tokens)), data.draw(_readings(gpus, tokens)))
            for _ in range(n)
        ]
    # real windows never repeat one another (a repeated round is a forgery, found above)
    flat = readings if precision == "FP16" else [r for pair in readings for r in pair]
    assume(len({(r[0], r[1]) for r in flat}) == len(flat))
    idle_w = data.draw(st.one_of(st.none(), st.floats(min_value=0.0, max_value=1000.0)))
    doc = _document(readings, precision, tokens, idle_w, gpus)
    assert consistency_problems(doc) == []


# --- item 8: check believes the GPU, and its tolerance stays finite --------------------


def test_check_refuses_a_report_whose_arch_is_not_its_gpus(tmp_path, capsys):
    doc = upgraded()
    doc["system_under_test"]["gpu_arch"] = "ada"  # graded against Ada's figures on main
    bad = write(doc, tmp_path / "ada")
    assert main(["check", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "INVALID $.system_under_test.gpu_arch: 'ada'" in err
    assert "not a valid report (exit 2)" in err


@pytest.mark.parametrize("k", ["1e308", "1e16", "101"])
def test_check_k_so_large_it_grades_nothing_is_refused(tmp_path, capsys, k):
    report = write(copy.deepcopy(upgraded()), tmp_path / "r")
    assert main(["check", str(report), "--k", k]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(
        f"ecocompute: error: invalid k '{k}': must be at most 100"
    )


def test_check_k_within_bounds_still_grades(tmp_path, capsys):
    report = write(copy.deepcopy(upgraded()), tmp_path / "r")
    main(["check", str(report), "--k", "100"])
    captured = capsys.readouterr()
    assert captured.out.startswith("ecocompute check: ") and "invalid k" not in captured.err
