"""--phases apart: each trial measures its prefill and its decode in two windows, and the
report gives each phase's figure with its own paired delta, the stated workload's
combined figure and the phase that decides it."""

from __future__ import annotations

import copy
import time

import pytest

from ecocompute.boundary.progress import Progress
from ecocompute.core.stats import estimate_delta
from ecocompute.errors import InputError
from ecocompute.llm.graphs import GraphDecoder
from ecocompute.params import RunParams, resolve
from ecocompute.report import derive
from ecocompute.report import phases as phase_math
from ecocompute.report.checks import report_problems
from ecocompute.report.model import Report
from ecocompute.report.pairing import between_compiles
from ecocompute.report.read import validation_errors
from ecocompute.task.trials import prefills_for

from ..fakes import CpuAccelerator, FakeTelemetry, StandInQuantBackend, estimate_report

# What the fake GPU draws while each kind of work runs (watts): the prefill far more than
# the decode, the quantized stand-in otherwise than FP16, nothing when idle. So a decode
# window holding any prefill would read far above its own work's power, and one holding
# little of its own work far below it.
POWER_W = {
    ("FP16", "prefill"): 1000.0,
    ("FP16", "decode"): 100.0,
    ("NF4", "prefill"): 800.0,
    ("NF4", "decode"): 150.0,
}
IDLE_W = 0.0
BUSY_S = 0.03  # each call's work lasts at least this long (the GPU draining its queue)


@pytest.fixture(autouse=True)
def _cache(tmp_path, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))


@pytest.fixture
def drawing(monkeypatch):
    """The fake GPU's power follows the work the decoders did at each moment: every
    prefill and decode call is logged with its times, and power(t) reads the log (the
    fake counter integrates the trace after the fact)."""
    spans: list[tuple[float, float, tuple[str, str]]] = []
    prefills, decode = GraphDecoder.run_prefills, GraphDecoder.run_decode

    def logged(work, kind):
        def run(self, *args):
            start = time.monotonic()
            try:
                result = work(self, *args)
                time.sleep(BUSY_S)  # long against the fake counter's 1 ms integration step
                return result
            finally:
                spans.append((start, time.monotonic(), (self.label, kind)))

        return run

    monkeypatch.setattr(GraphDecoder, "run_prefills", logged(prefills, "prefill"))
    monkeypatch.setattr(GraphDecoder, "run_decode", logged(decode, "decode"))

    def power(t: float) -> float:
        for start, end, work in reversed(spans):
            if start <= t < end:
                return POWER_W[work]
        return IDLE_W

    return power


def _params(**flags):
    base = {
        "model_name": "synthetic:tiny-test",
        "tokens": "5",
        "iterations": "3",
        "warmup": "1",
        "idle_seconds": "0",
        "sample_rate_hz": "10",  # windows of a few reads: never refused on a loaded host
        "quality_probe": "false",
        "decode": "graphs",
        "phases": "apart",
        "prompt_tokens": "24",
        "prefill_window_s": "0.02",
    }
    return resolve(None, {**base, **flags})


def _report(drawing, **flags):
    return estimate_report(
        _params(**flags),
        Progress(quiet=True),
        open_telemetry=lambda: FakeTelemetry(power_w=drawing),
        accelerator=CpuAccelerator(),
        backend=StandInQuantBackend(),
    )


def test_phases_apart_needs_a_regime_with_its_own_prefill_and_two_tokens():
    with pytest.raises(InputError, match=r"^invalid phases 'apart': needs --decode graphs"):
        RunParams(phases="apart")
    with pytest.raises(InputError, match=r"needs --tokens 2 or more"):
        RunParams(phases="apart", decode="graphs", tokens=1)
    assert RunParams(phases="apart", decode="compiled").phases == "apart"


def test_prefills_fill_the_window_and_are_counted():
    assert prefills_for(0.004, 1.0) == 250
    assert prefills_for(0.3, 1.0) == 4  # never shorter than the window asked for
    assert prefills_for(2.0, 1.0) == 1  # one is long enough
    assert prefills_for(1e-9, 1.0, most=500) == 500
    assert prefills_for(0.0, 1.0, most=7) == 7


def test_each_trial_reads_its_prefill_and_its_decode_in_windows_of_their_own(drawing):
    report = _report(drawing, precision="NF4", batch_size="2")
    assert validation_errors(report) == []
    trials = report["results"]["trials"]
    assert [t["format"] for t in trials] == ["FP16", "NF4"] * 3
    for t in trials:
        pre = t["prefill"]
        # each window drew what its own work drew, never the other phase's: at most its
        # own power (idle is 0 W), and mostly busy (the window is its work and the edges)
        for watts, kind in ((pre["avg_power_watts"], "prefill"), (t["avg_power_watts"], "decode")):
            own = POWER_W[(t["format"], kind)]
            assert 0.5 * own < watts <= 1.05 * own, (kind, watts, own)
        assert t["tokens"] == (5 - 1) * 2  # the decode steps alone: the prefill chose the first
        assert pre["prompt_tokens"] == 24 * 2 and pre["prefills"] >= 1
        assert pre["energy_per_prompt_token_mj"] == pytest.approx(
            pre["energy_joules"] * 1000 / (pre["prefills"] * pre["prompt_tokens"])
        )
    decode = report["measurement"]["decode"]
    assert decode["phases"] == "apart" and "prefills per prefill window" in decode["prefills_note"]
    phases = report["results"]["phases"]
    for name in ("prefill", "decode", "workload"):
        figure = phases[name]
        assert figure["n_pairs"] == 3 and len(figure["vs_fp16_ci95_pct"]) == 2
        lo, hi = figure["vs_fp16_ci95_pct"]
        assert lo <= figure["vs_fp16_energy_pct"] <= hi
    counts = phases["prefill"]["per_format"]["NF4"]["prefills_per_window"]
    assert counts and all(n >= 1 for n in counts)
    assert phases["decode"]["vs_fp16_energy_pct"] == report["results"]["vs_fp16_energy_pct_exact"]
    workload = phases["workload"]
    assert (workload["prompt_tokens"], workload["new_tokens"]) == (24, 5)
    assert workload["decided_by"] in ("prefill", "decode")
    assert "phases apart" in report["results"]["note"].lower()


def test_the_report_is_checked_exactly_and_a_forged_phase_figure_is_caught(drawing):
    document = _report(drawing, precision="NF4")
    assert report_problems(Report.model_validate(document)) == []
    forged = copy.deepcopy(document)
    forged["results"]["phases"]["workload"]["vs_fp16_energy_pct"] += 1.0
    assert any("phases.workload" in p for p in report_problems(Report.model_validate(forged)))
    moved = copy.deepcopy(document)
    moved["results"]["trials"][1]["prefill"]["energy_joules"] *= 1.5
    problems = report_problems(Report.model_validate(moved))
    assert any("prefill" in p for p in problems)


def test_over_compiles_each_phase_is_pooled_as_the_headline_is(drawing):
    """--compiles N: the decode phase is the headline, so its delta, interval and verdict
    are the pooled ones across compiles, and so are the prefill's and the workload's
    (each over its own pairs); a flat interval over every pair is not theirs."""
    report = Report.model_validate(_report(drawing, precision="NF4", iterations="4"))
    res, work = report.results, report.workload
    # the same trials as two compiles of two rounds each
    trials = [t.model_copy(update={"compile": 1 if (t.pair or 0) < 2 else 2}) for t in res.trials]
    inputs = derive.measured_inputs(
        res.model_copy(update={"trials": trials}),
        work.precision,
        work.batch_size,
        None,
        work.prompt_tokens,
        work.max_new_tokens,
    )
    again = derive.derive_results(inputs, "")
    assert again.between_compiles is not None and again.phases is not None
    decode = again.phases.decode
    assert decode.vs_fp16_energy_pct == again.vs_fp16_energy_pct_exact
    assert decode.vs_fp16_ci95_pct == again.vs_fp16_ci95_pct
    assert decode.verdict == again.verdict
    for figure in (again.phases.prefill, again.phases.workload):
        flat = estimate_delta([p.delta_pct for p in figure.pairs]).ci95_pct
        assert figure.vs_fp16_ci95_pct is not None and flat is not None
        assert figure.vs_fp16_ci95_pct != list(flat)
        pooled = between_compiles(inputs.trials, figure.pairs)
        assert pooled is not None and figure.vs_fp16_ci95_pct == pooled.ci95_pct


def test_fp16_alone_reports_both_phases_without_a_delta(drawing):
    report = _report(drawing, precision="FP16", iterations="2")
    assert validation_errors(report) == []
    phases = report["results"]["phases"]
    assert phases["prefill"]["verdict"] is None and phases["workload"]["decided_by"] is None
    assert set(phases["prefill"]["per_format"]) == {"FP16"}


# -- the combined figure's arithmetic, as pure functions ---------------------------------


def test_combined_figure_of_a_workload():
    # 1,024 in at 2 mJ per prompt token, 256 out at 100 mJ per decode token:
    # (1024 * 2 + 255 * 100) / 256 = (2048 + 25500) / 256
    assert phase_math.combined_mj_per_token(2.0, 100.0, 1024, 256) == pytest.approx(107.609375)
    # one new token is the prefill's alone
    assert phase_math.combined_mj_per_token(2.0, 100.0, 10, 1) == pytest.approx(20.0)
    with pytest.raises(ValueError):
        phase_math.combined_mj_per_token(2.0, 100.0, 0, 5)


def test_the_phase_with_the_larger_share_of_the_difference_decides():
    phase, share, words = phase_math.decided_by(prefill_diff_mj=300.0, decode_diff_mj=-100.0)
    assert (phase, share) == ("prefill", 75.0) and "disagree" in words
    phase, share, words = phase_math.decided_by(prefill_diff_mj=-10.0, decode_diff_mj=-30.0)
    assert (phase, share) == ("decode", 25.0) and "same way" in words and "75%" in words
    assert phase_math.decided_by(0.0, 0.0)[0] is None


def _made_trial(index, pair, fmt, decode_mj, prefill_mj):
    prefill = derive.prefill_window(
        prefills=4,
        prompt_tokens=100,
        duration_s=1.0,
        energy_joules=prefill_mj * 400 / 1000,
        energy_source="nvml_energy_counter",
        counter_energy_joules=prefill_mj * 400 / 1000,
        sampled_energy_joules=prefill_mj * 400 / 1000,
        samples=10,
        dropped_samples=0,
        per_gpu_energy_joules=[prefill_mj * 400 / 1000],
    )
    joules = decode_mj * 9 / 1000
    return derive.trial(
        index=index,
        pair=pair,
        format=fmt,
        duration_s=1.0,
        tokens=9,
        energy_joules=joules,
        energy_source="nvml_energy_counter",
        counter_energy_joules=joules,
        sampled_energy_joules=joules,
        samples=10,
        dropped_samples=0,
        per_gpu_energy_joules=[joules],
        prefill=prefill,
    )


def test_each_round_pairs_the_workload_figure_of_its_two_trials():
    trials = []
    for k, (fp16, nf4) in enumerate([((1.0, 10.0), (2.0, 9.0)), ((1.1, 10.0), (2.1, 9.5))]):
        trials.append(_made_trial(2 * k, k, "FP16", fp16[1], fp16[0]))
        trials.append(_made_trial(2 * k + 1, k, "NF4", nf4[1], nf4[0]))
    facts = {
        f: derive.FormatFacts(f, "x", (0,), None)
        for f in ("FP16", "NF4")  # type: ignore[misc]
    }
    m = derive.Measured("NF4", tuple(trials), facts, None, 1, None, (), 100, 10)
    phases = derive.derive_results(m, "made").phases
    assert phases is not None
    first = phases.workload.pairs[0]
    fp16 = phase_math.combined_mj_per_token(1.0, 10.0, 100, 10)
    nf4 = phase_math.combined_mj_per_token(2.0, 9.0, 100, 10)
    assert first.fp16_energy_per_token_mj == pytest.approx(fp16)
    assert first.delta_pct == pytest.approx((nf4 / fp16 - 1) * 100)
    assert phases.prefill.pairs[0].delta_pct == pytest.approx(100.0)
    assert phases.decode.pairs[0].delta_pct == pytest.approx(-10.0)
    # per sequence: prefill +100 x ~1.0 mJ, decode 9 x ~-0.75 mJ: the prefill decides
    assert phases.workload.decided_by == "prefill"


def test_the_summary_gives_each_phase_and_the_deciding_one(drawing):
    from ecocompute.summary.report import render
    from ecocompute.summary.session import render_session

    document = _report(drawing, precision="NF4")
    text = render(document, "out/energy.json")
    assert "  phase      prefill: " in text and "mJ/prompt token" in text
    assert "  phase      decode: " in text and "  phase      24 in, 5 out: " in text
    assert "  decides    decided by the " in text
    # a session's table is the decode window's too, and says so as one report's delta does
    assert "(the decode window)" in text
    session = render_session([document, document], ["a", "b"])
    assert "  window     the figures above are the decode window's" in session


def _reading(joules):
    from ecocompute.monitor.meter import WindowReading

    return WindowReading(0.0, 1.0, joules, joules, (joules,), 10, 0)


def test_the_stopping_rule_waits_for_the_least_precise_phase():
    from ecocompute.core.precision import Precision
    from ecocompute.task.protocol import half_width_pts
    from ecocompute.task.trials import PrefillReading, Trial

    trials = []
    # the decode's delta is the same in every round (no width); the prefill's is not
    for k, prefill_nf4 in enumerate((1.0, 2.0, 1.5)):
        for fmt, decode_j, prefill_j in (
            (Precision.FP16, 1.0, 1.0),
            (Precision.NF4, 0.9, prefill_nf4),
        ):
            prefill = PrefillReading(_reading(prefill_j), 2, 10)
            trials.append(Trial(len(trials), k, fmt, 10, _reading(decode_j), prefill=prefill))
    width = half_width_pts(trials)
    assert width is not None and width > 50  # the prefill's +-; the decode's alone is 0
    alone = [Trial(t.index, t.pair, t.precision, t.tokens, t.reading) for t in trials]
    assert half_width_pts(alone) == pytest.approx(0.0, abs=1e-9)


def test_a_report_with_its_phases_apart_keeps_the_published_formats_facts(drawing):
    from ecocompute.report.schema import published_facts_errors
    from ecocompute.report.write import written_problems

    document = _report(drawing, precision="NF4", prompt_tokens="30")
    assert published_facts_errors(document, thorough=True) == []
    assert written_problems(document) == []


def test_two_compiles_whose_means_agree_keep_an_honest_interval():
    """Pairs -10, +8 under one compile and -5, +3 under the other: both means -1, each
    compile's own interval about +-100 points. HKSJ alone made the pooled interval
    [-1.0, -1.0] and the verdict 'saves'; floored at the classic error it is inconclusive.
    A report written before the floor is derived again as it was (floor=False)."""
    from ecocompute.report.pairing import estimate_pairs, pairs_of

    def trial(i, pair, fmt, mj, compile_):
        j = mj * 256 / 1000
        return derive.trial(
            index=i, pair=pair, format=fmt, duration_s=1.0, tokens=256, energy_joules=j,
            energy_source="nvml_energy_counter", counter_energy_joules=j,
            sampled_energy_joules=j, samples=10, dropped_samples=0, per_gpu_energy_joules=[j],
            compile=compile_,
        )  # fmt: skip

    trials = []
    for pair, (compile_, delta) in enumerate([(0, -10.0), (0, 8.0), (1, -5.0), (1, 3.0)]):
        trials.append(trial(2 * pair, pair, "FP16", 1000.0, compile_))
        trials.append(trial(2 * pair + 1, pair, "NF4", 1000.0 * (1 + delta / 100), compile_))
    pairs = pairs_of(trials, "NF4", lambda t: t.energy_per_token_mj)
    delta, ci, n, verdict = estimate_pairs(pairs, between_compiles(trials, pairs))
    assert delta == pytest.approx(-1.0) and n == 4 and verdict == "inconclusive"
    assert ci[0] < -40 and ci[1] > 40
    bare = between_compiles(trials, pairs, floor=False)
    assert bare.interval_se is None and bare.ci95_pct[1] - bare.ci95_pct[0] < 1e-6
