"""Issue 13, class 5: forged or inconsistent reports do not validate.

`validate` (and every reader: aggregate, check, plot, sweep --fit_only) checks that a
report agrees with itself: a measured report names its GPU, its trials add up to its
counts, its per-format figures, pairs, interval and verdict recompute from its trials,
energy per token is energy over tokens. Our own writer's reports always pass (the
tolerances are its rounding), and every committed report under docs/validation does.
"""

from __future__ import annotations

import copy
import functools
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ecocompute.cli import main
from ecocompute.params import resolve
from ecocompute.report import derive
from ecocompute.report.read import energy_report_problems, problems_in
from ecocompute.report.read import energy_report_problems as consistency_problems
from ecocompute.report.results_model import IdleWindow
from ecocompute.report.write import report_text

from ..conftest import REPO
from ..fakes import CpuAccelerator, FakeTelemetry, StandInQuantBackend, estimate_report
from ..made_reports import v2_document, write

COMMITTED = REPO / "docs" / "validation" / "h200-issue3" / "tinyllama-nf4" / "energy.json"
DETERMINISTIC = {"derandomize": True, "database": None, "deadline": None, "print_blob": False}


@pytest.fixture(autouse=True)
def _cache(synthetic_cache, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(synthetic_cache))


def committed() -> dict:
    return json.loads(COMMITTED.read_text())


def forged_from_the_issue() -> dict:
    """The issue's example: measured, gpu null, no accelerator, one 0 J trial counted as
    ten, and a "saves" verdict."""
    doc = committed()
    sut, res = doc["system_under_test"], doc["results"]
    sut["gpu"], sut["accelerator_count"], sut["gpus"] = None, 0, []
    trial = {**res["trials"][1], "energy_joules": 0.0, "energy_per_token_mj": 0.0}
    trial["counter_energy_joules"] = trial["sampled_energy_joules"] = 0.0
    trial["per_gpu_energy_joules"] = [0.0]
    res["trials"] = [trial]
    res["verdict"] = "saves"
    return doc


# --- our own writer passes ----------------------------------------------------------


def _params(**flags):
    base = {
        "model_name": "synthetic:tiny-test",
        "tokens": "6",
        "iterations": "3",
        "warmup": "0",
        "idle_seconds": "0.1",
        "sample_rate_hz": "50",
        "quality_probe": False,
    }
    return resolve(None, {**base, **flags})


@pytest.mark.slow
@pytest.mark.parametrize(
    ("precision", "extra"),
    [
        ("FP16", {}),
        ("NF4", {}),
        ("INT8", {"batch_size": "2"}),
        ("NF4", {"ci_target_pts": "1000", "max_rounds": "5"}),  # stops on precision
    ],
)
def test_reports_of_the_cpu_measured_path_are_consistent(precision, extra):
    report = estimate_report(
        _params(precision=precision, **extra),
        open_telemetry=lambda: FakeTelemetry(power_w=lambda t: 90.0 + 30.0 * (t % 1.0)),
        accelerator=CpuAccelerator(),
        backend=StandInQuantBackend(),
    )
    assert report["results"]["basis"] == "measured"
    assert consistency_problems(report) == []
    assert energy_report_problems(json.loads(json.dumps(report))) == []
    report_text(report)  # the writer itself refuses an inconsistent report


@pytest.mark.slow
def test_a_measured_report_written_by_the_cli_validates(tmp_path, monkeypatch, capsys):
    from ..fakes import install_fakes

    install_fakes(monkeypatch.setattr, FakeTelemetry)
    out = tmp_path / "out"
    argv = ["--model", "synthetic:tiny-test", "--tokens", "4", "--iterations", "2"]
    argv += ["--warmup", "0", "--idle_seconds", "0", "--quiet", "--output_dir", str(out)]
    assert main(["energy_estimate", *argv]) == 0
    capsys.readouterr()
    assert main(["validate", str(out)]) == 0
    assert capsys.readouterr().out == f"{out / 'energy.json'}: valid\n"


def _base_report() -> dict:
    """A measured NF4 report of format 2.0 (the CPU stand-ins), whose results a property
    test replaces."""
    return estimate_report(
        _params(precision="NF4"),
        open_telemetry=FakeTelemetry,
        accelerator=CpuAccelerator(),
        backend=StandInQuantBackend(),
    )


@functools.lru_cache(maxsize=1)
def _base() -> str:
    return json.dumps(_base_report())


def _with_results(results, precision: str, tokens: int, gpus: int = 1) -> dict:
    return v2_document(results, precision, tokens, gpus, base=_base())


def _trial(index, pair, fmt, energies, duration_s, tokens, idle=None):
    return derive.trial(
        index=index,
        pair=pair,
        format=fmt,
        duration_s=duration_s,
        tokens=tokens,
        energy_joules=sum(energies),
        energy_source="nvml_energy_counter",
        counter_energy_joules=sum(energies),
        sampled_energy_joules=sum(energies) * 1.001,
        samples=10,
        dropped_samples=0,
        per_gpu_energy_joules=energies,
        idle_gpus_energy_joules=idle,
    )


@settings(max_examples=100, **DETERMINISTIC)
@given(
    energies=st.lists(
        st.tuples(
            st.floats(min_value=1e-3, max_value=5e4, allow_nan=False),
            st.floats(min_value=1e-3, max_value=5e4, allow_nan=False),
        ),
        min_size=1,
        max_size=12,
    ),
    tokens=st.integers(min_value=1, max_value=4096),
    precision=st.sampled_from(["NF4", "INT8"]),
)
def test_the_writers_own_reports_always_pass(energies, tokens, precision):
    """Any trials, through the writer's own derivation (report/derive.py) and a JSON
    file: the report reads back and derives again to the same floats (format 2.0
    stores its figures unrounded, so the check is exact and the writer always passes)."""
    trials = []
    for k, (f_j, q_j) in enumerate(energies):
        # durations a GPU can draw the energy in (at most 700 W here)
        trials.append(_trial(2 * k, k, "FP16", [f_j], max(1.0, f_j / 700) + k, tokens))
        trials.append(_trial(2 * k + 1, k, precision, [q_j], max(2.0, q_j / 700) + k, tokens))
    facts = {
        "FP16": derive.FormatFacts("FP16", "torch", (0,)),
        precision: derive.FormatFacts(precision, "bitsandbytes", (0,)),
    }
    results = derive.derive_results(
        derive.Measured(precision, tuple(trials), facts, None, 1, None), "made"
    )
    doc = _with_results(results, precision, tokens)
    assert consistency_problems(json.loads(json.dumps(doc))) == []


@settings(max_examples=100, **DETERMINISTIC)
@given(
    rounds=st.lists(
        st.tuples(*(st.floats(min_value=1e-3, max_value=5e4, allow_nan=False),) * 4),
        min_size=1,
        max_size=12,
    ),
    tokens=st.integers(min_value=1, max_value=4096),
    idle=st.lists(st.floats(min_value=0.0, max_value=700.0, allow_nan=False), min_size=2,
                  max_size=2),
)  # fmt: skip
def test_the_writers_own_reports_always_pass_in_the_held_view(rounds, tokens, idle):
    """Issue 22: FP16 over GPUs 0 and 1, NF4 on GPU 0 with GPU 1 idle beside it, any
    energies and idle window: every GPU the session held, derived by the writer's own
    code, reads back exact too."""
    trials = []
    for k, (f0, f1, q0, q1) in enumerate(rounds):
        f_s, q_s = max(1.0, (f0 + f1) / 700) + k, max(2.0, q0 / 700) + k
        trials.append(_trial(2 * k, k, "FP16", [f0, f1], f_s, tokens, idle=[]))
        trials.append(_trial(2 * k + 1, k, "NF4", [q0], q_s, tokens, idle=[q1]))
    facts = {
        "FP16": derive.FormatFacts("FP16", "torch", (0, 1)),
        "NF4": derive.FormatFacts("NF4", "bitsandbytes", (0,)),
    }
    window = IdleWindow(
        duration_s=2.0, nvml_indices=[0, 1], energy_joules_by_gpu=[2 * idle[0], 2 * idle[1]]
    )
    results = derive.derive_results(
        derive.Measured("NF4", tuple(trials), facts, window, 1, None, (0, 1)), "made"
    )
    assert results.held_gpus is not None
    doc = _with_results(results, "NF4", tokens, gpus=2)
    assert consistency_problems(json.loads(json.dumps(doc))) == []


# --- forged reports do not --------------------------------------------------------


def test_the_issues_forged_report_is_invalid_with_reasons(tmp_path, capsys):
    """The current format's schema already refuses a null GPU; the arithmetic says the
    rest, and says it for a report that names a GPU it does not list too."""
    forged = write(forged_from_the_issue(), tmp_path / "forged")
    claims = forged_from_the_issue()
    claims["system_under_test"]["gpu"] = "NVIDIA H200"
    claims["system_under_test"]["accelerator_count"] = 1
    named = write(claims, tmp_path / "named")
    good = write(committed(), tmp_path / "good")
    assert main(["validate", str(tmp_path)]) == 1
    out = capsys.readouterr().out
    assert f"{good}: valid" in out
    for bad in (forged, named):
        (line,) = [ln for ln in out.splitlines() if ln.startswith(f"{bad}: ")]
        assert line.startswith(f"{bad}: INVALID $.system_under_test.")
    text = "\n".join(consistency_problems(forged_from_the_issue()))
    assert "$.system_under_test.gpu: None is not of type 'string'" in text  # its schema
    assert "$.system_under_test.accelerator_count: 0 is less than the minimum of 1" in text
    text = "\n".join(problems_in(named))  # every reason, where the line lists five
    assert "$.system_under_test.gpus: lists 0 GPU(s), accelerator_count says 1" in text
    assert "$.results.per_format.NF4.n_trials: 10, but the report holds 1 NF4 trial(s)" in text
    assert "energy_joules: 0 J, but a GPU decoding tokens draws power" in text
    assert "formats ['NF4'], but a NF4 report holds trials of ['FP16', 'NF4']" in text


def test_check_aggregate_plot_and_fit_only_refuse_forged_reports(tmp_path, capsys):
    """The issue: `check` graded it and `sweep --fit_only` fitted a crossover from four."""
    forged = forged_from_the_issue()
    for i, size in enumerate((0.5, 1.0, 2.0, 4.0)):
        doc = copy.deepcopy(forged)
        doc["workload"]["params_b"], doc["workload"]["model_name"] = size, f"m{i}"
        write(doc, tmp_path / f"m{i}")
    assert main(["check", str(tmp_path / "m0" / "energy.json")]) == 2
    err = capsys.readouterr().err
    assert "INVALID $.system_under_test.gpu" in err and "not a valid report (exit 2)" in err
    assert main(["sweep", "--fit_only", "--output_dir", str(tmp_path), "-q"]) == 2
    assert "holds no valid energy.json to fit" in capsys.readouterr().err
    assert not (tmp_path / "sweep.json").exists()
    assert main(["aggregate", str(tmp_path)]) == 1
    assert "skipped 4 invalid file(s)" in capsys.readouterr().err
    assert main(["plot", str(tmp_path), "-o", str(tmp_path / "p.png")]) == 2
    assert not (tmp_path / "p.png").exists()


def _edit(doc: dict, path: str, change) -> dict:
    out = copy.deepcopy(doc)
    *parents, last = path.split("/")
    node = out
    for key in parents:
        node = node[int(key)] if isinstance(node, list) else node[key]
    key = int(last) if isinstance(node, list) else last
    node[key] = change(node.get(key) if isinstance(node, dict) else node[key])
    return out


# one edit each, beyond the writer's rounding; what the reason names
EDITS = [
    ("results/trials/0/energy_per_token_mj", lambda v: v + 1.0, "trials[0].energy_per_token_mj"),
    ("results/trials/0/tokens", lambda v: v + 1, "trials[0].tokens"),
    ("results/trials/3/per_gpu_energy_joules", lambda v: [v[0] + 1.0], "per_gpu_energy_joules"),
    ("results/per_format/NF4/n_trials", lambda v: v + 1, "per_format.NF4.n_trials"),
    ("results/per_format/FP16/tokens_generated", lambda v: v - 256, "FP16.tokens_generated"),
    ("results/per_format/FP16/energy_per_token_mj", lambda v: v + 0.01, "FP16.energy_per_token_mj"),
    ("results/per_format/NF4/total_energy_joules", lambda v: v * 1.01, "NF4.total_energy_joules"),
    ("results/energy_per_token_mj", lambda v: v * 0.9, "$.results.energy_per_token_mj"),
    ("results/fp16_energy_per_token_mj", lambda v: v * 1.1, "$.results.fp16_energy_per_token"),
    ("results/vs_fp16_energy_pct", lambda v: v - 0.1, "$.results.vs_fp16_energy_pct"),
    ("results/vs_fp16_energy_pct_3dp", lambda v: v - 0.01, "$.results.vs_fp16_energy_pct_3dp"),
    ("results/vs_fp16_ci95_pct", lambda v: [v[0] - 0.1, v[1]], "$.results.vs_fp16_ci95_pct"),
    ("results/verdict", lambda v: "saves", "$.results.verdict"),
    ("results/n_pairs", lambda v: v + 1, "$.results.n_pairs"),
    ("results/pairs", lambda v: v[:-1], "$.results.pairs"),
    ("results/pairs/2/delta_pct", lambda v: v + 0.01, "pairs[2].delta_pct"),
    ("results/pairs/2/energy_per_token_mj", lambda v: v + 1, "pairs[2].energy_per_token_mj"),
    ("system_under_test/gpu", lambda v: "NVIDIA H100", "$.system_under_test.gpu"),
    ("system_under_test/accelerator_count", lambda v: 2, "accelerator_count"),
    ("system_under_test/gpus", lambda v: [], "$.system_under_test.gpus"),
    ("measurement/iterations", lambda v: v + 1, "round(s)"),
]


@pytest.mark.parametrize(("path", "change", "named"), EDITS, ids=[e[0] for e in EDITS])
def test_one_edit_of_a_committed_report_is_found(tmp_path, capsys, path, change, named):
    doc = _edit(committed(), path, change)
    bad = write(doc, tmp_path / "bad")
    assert main(["validate", str(bad)]) == 1
    out = capsys.readouterr().out
    assert f"{bad}: INVALID " in out and named in out, out


def test_a_derived_report_holds_no_measurement(tmp_path, capsys):
    assert main(["energy_estimate", "--dry_run", "-q", "--output_dir", str(tmp_path)]) == 0
    capsys.readouterr()
    good = json.loads((tmp_path / "energy.json").read_text())
    assert consistency_problems(good) == []
    cases = {
        "ci": ("results/vs_fp16_ci95_pct", lambda v: [1.0, 2.0], "vs_fp16_ci95_pct"),
        "pairs": ("results/n_pairs", lambda v: 3, "n_pairs"),
        "delta": ("results/vs_fp16_energy_pct", lambda v: v + 1.0, "vs_fp16_energy_pct"),
    }
    for name, (path, change, named) in cases.items():
        bad = write(_edit(good, path, change), tmp_path / name)
        assert main(["validate", str(bad)]) == 1
        out = capsys.readouterr().out
        assert f"{bad}: INVALID $.results.{named}" in out, out


def test_every_committed_report_validates(capsys):
    assert main(["validate", str(REPO / "docs" / "validation")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) >= 20 and all(ln.endswith(": valid") for ln in lines)


@pytest.mark.parametrize("k", ["inf", "-inf", "nan", "0", "-1", "1e999", "x"])
def test_check_k_must_be_finite_and_positive(tmp_path, capsys, k):
    report = write(committed(), tmp_path / "r")
    assert main(["check", str(report), f"--k={k}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == [
        f"ecocompute: error: invalid k '{k}': must be a finite positive number, e.g. --k 2"
    ]


def test_paths_named_in_reasons_exist_in_the_document():
    """Every reason starts with a JSON path into the report (so a reader can find it)."""
    for path, change, _ in EDITS:
        doc = _edit(committed(), path, change)
        for reason in consistency_problems(doc):
            assert reason.startswith("$."), reason
