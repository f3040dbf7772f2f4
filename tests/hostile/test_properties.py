"""Property-based checks of the honesty invariant (hypothesis).

Deterministic in CI: every property runs a bounded number of examples, derandomized
(the examples follow from the test itself, not from a seed or an example database).
The parameter sets include non-finite, huge and over-long values (issue 13).

1. Random parameter sets, valid and invalid, through the real CLI with a fake machine:
   an accepted set writes exactly one schema-valid report, whose basis is "measured"
   only if a (fake) NVML device was read; a rejected set exits 2 and writes nothing.
2. Any report with a non-finite or huge number put anywhere is invalid, for validate
   and for every reader, and reading it never raises (issue 13).
3. Random power traces and dropped-read patterns through the real PowerSampler (on a
   fake clock) and integrate_trapezoid: the energy equals the analytic integral within
   the stated tolerance, and dropped reads never raise the figure (see
   test_dropped_reads_never_raise_the_figure for what that means precisely).
"""

from __future__ import annotations

import contextlib
import copy
import io
import itertools
import json
import math
import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from ecocompute.cli import main
from ecocompute.errors import MeasurementRefused, TelemetryUnavailable
from ecocompute.monitor.meter import MIN_VALID_SAMPLE_FRACTION, EnergyMeter, WindowEdges
from ecocompute.monitor.sampler import PowerSampler, integrate_trapezoid
from ecocompute.report.read import validation_errors
from ecocompute.telemetry.base import TelemetryReadError

from ..fakes import CpuAccelerator, FakeClock, FakeTelemetry, drive, install_fakes

DETERMINISTIC = {
    "derandomize": True,
    "database": None,
    "deadline": None,
    "print_blob": False,
}

# --- 1. random parameter sets through the CLI --------------------------------------

# Per flag: values that must be accepted and values that must be refused, written down
# here independently of params/ (the oracle). Valid values keep a measured run short.
HUGE_INT = "9" * 5000  # more digits than Python converts (sys.get_int_max_str_digits())
FLAGS: dict[str, tuple[list[str], list[str]]] = {
    "--model": (["synthetic:tiny-test"], ["", "   "]),
    "--params_b": (
        ["0.001", "1.1", "7"],
        ["0", "-1", "x", "nan", "inf", "-inf", "1e308", "1e999", "1e-300", HUGE_INT],
    ),
    "--precision": (
        ["FP16", "NF4", "INT8", "INT4", "FP8", "nf4", "int8", "NF4,INT4"],
        ["FP4", "int3", "", "NF4,NF4", "FP16,NF4"],
    ),
    "--batch_size": (["1", "2"], ["0", "-1", "1.5", "two", "true", "1" + "0" * 30]),
    "--gpu_arch": (
        ["auto", "ampere", "hopper", "ada", "turing", "RTX 4090"],
        ["pascal", "", "tpu"],
    ),
    "--context_length": (["64", "2048"], ["0", "-5", "x", HUGE_INT]),
    "--tokens": (["1", "3", "6"], ["0", "-1", "2.5", "many", "100000", HUGE_INT]),
    "--iterations": (["1", "2"], ["0", "-2", "x", "1" + "0" * 30]),
    "--warmup": (["0", "1"], ["-1", "x", "0.5", "-" + HUGE_INT]),
    # valid rates stop at 50 Hz: with 30 ms queue drains a window always gets its reads
    "--sample_rate_hz": (
        ["1", "10", "20", "50"],
        ["0.5", "20.5", "101", "nan", "inf", "x", "1e308"],
    ),
    "--quality_seq_len": (["16", "512"], ["0", "x"]),
    "--llm_int8_threshold": (["0", "6.0", "1000000"], ["-1", "nan", "x", "inf", "1e308"]),
    "--idle_seconds": (["0", "0.05"], ["-0.1", "x", "inf", "1e308"]),
}
BASE = ["--tokens", "2", "--iterations", "1", "--warmup", "0", "--idle_seconds", "0"]
MACHINES = ("no NVML", "measurable GPU", "GPU without power", "power reads fail")


@st.composite
def parameter_sets(draw):
    """(argv, the flags given an invalid value, whether --params_b was given)."""
    # Mostly valid sets (so that many runs get as far as a report), some with one or
    # two bad values; --params_b usually given (the reference path needs it here).
    n_bad = draw(st.sampled_from([0, 0, 0, 1, 2]))
    bad = draw(st.sets(st.sampled_from(sorted(FLAGS)), min_size=n_bad, max_size=n_bad))
    argv = list(BASE)
    for flag, (good, wrong) in FLAGS.items():
        if flag in bad:
            argv += [flag, draw(st.sampled_from(wrong))]
        elif flag == "--model" or draw(st.sampled_from([True, True, True, False])):
            argv += [flag, draw(st.sampled_from(good))]
    if draw(st.booleans()):
        argv.append("--no_quality_probe")
    return argv, bad, "--params_b" in argv


class CountingTelemetry(FakeTelemetry):
    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.power_reads = 0

    def power_mw(self, index: int) -> int:
        self.power_reads += 1
        return super().power_mw(index)


def opener(machine: str, opened: list[CountingTelemetry]):
    def open_telemetry() -> CountingTelemetry:
        if machine == "no NVML":
            raise TelemetryUnavailable("nvml_unavailable", "NVML unavailable: (scripted)")
        telemetry = CountingTelemetry(
            power=machine != "GPU without power",
            fail_read=(lambda k: True) if machine == "power reads fail" else None,
        )
        opened.append(telemetry)
        return telemetry

    return open_telemetry


@pytest.mark.slow
@pytest.mark.parametrize("dry_run", [False, True])
@pytest.mark.parametrize("machine", MACHINES)
@settings(
    max_examples=10,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    **DETERMINISTIC,
)
@given(case=parameter_sets())
def test_every_parameter_set_writes_one_honest_report_or_nothing(
    case, machine, dry_run, synthetic_cache
):
    """Each machine, with and without --dry_run, against random parameter sets."""
    argv, bad, given_params_b = case
    if dry_run:
        argv = [*argv, "--dry_run"]
    opened: list[CountingTelemetry] = []
    with (
        tempfile.TemporaryDirectory() as tmp,
        pytest.MonkeyPatch.context() as mp,
        contextlib.redirect_stdout(io.StringIO()),
        contextlib.redirect_stderr(io.StringIO()) as err,
    ):
        mp.setenv("ECOCOMPUTE_CACHE", str(synthetic_cache))
        install_fakes(mp.setattr, opener(machine, opened), CpuAccelerator(sync_s=0.03))
        out = Path(tmp) / "out"
        status = main(["energy_estimate", *argv, "--output_dir", str(out), "--quiet"])
        written = (
            sorted(str(p.relative_to(out)) for p in out.rglob("*") if p.is_file())
            if out.exists()
            else []
        )

        measurable = machine == "measurable GPU" and not dry_run
        reference_needs_size = not measurable and not given_params_b  # no size in the name
        event(f"exit {status}")
        if bad or reference_needs_size:
            assert status == 2, (argv, machine, err.getvalue())
            assert written == []
            (line,) = [ln for ln in err.getvalue().splitlines() if ln.startswith("ecocompute")]
            named = line.removeprefix("ecocompute: error: invalid ").split(" ")[0]
            named = "model" if named == "model_name" else named
            assert f"--{named}" in (bad or {"--params_b"}), line
            return
        assert status == 0, (argv, machine, err.getvalue())
        session = _session_formats(argv)  # several formats: a report per format
        assert written == (sorted(f"{f}/energy.json" for f in session) or ["energy.json"])
        for name in written:
            report = json.loads((out / name).read_text())
            assert validation_errors(report) == []
            basis = report["results"]["basis"]
            # the invariant: "measured" if and only if the fake NVML device was measured
            assert (basis == "measured") == measurable, (
                argv,
                machine,
                report["measurement_source"],
            )
            if basis == "measured":
                assert report["measurement_source"] == "direct-nvml"
                assert opened and opened[0].power_reads > 0
            else:
                expected = {
                    "no NVML": "nvml_unavailable",
                    "GPU without power": "power_unsupported",
                    "power reads fail": "measurement_failed",
                    "measurable GPU": "dry_run",
                }[machine]
                assert report["results"]["fallback_reason"] == ("dry_run" if dry_run else expected)
                assert report["results"]["trials"] == []
        assert all(t.closed for t in opened)


def _session_formats(argv: list[str]) -> list[str]:
    """The formats of a session (--precision A,B: the last one given wins), else []."""
    given = [argv[i + 1] for i, a in enumerate(argv[:-1]) if a == "--precision"]
    last = given[-1].upper() if given else ""
    return last.split(",") if "," in last else []


# --- 2. non-finite and huge numbers anywhere in a report -----------------------------


def _numeric_paths(doc, path=()):
    """Every path to a number (not a bool) in a JSON document."""
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _numeric_paths(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from _numeric_paths(v, (*path, i))
    elif isinstance(doc, (int, float)) and not isinstance(doc, bool):
        yield path


def _base_reports() -> list[dict]:
    from ..made_reports import measured

    return [measured(), measured(precision="FP16"), measured(delta=-30.0, gpus=2)]


BASES = _base_reports()
NUMERIC_PATHS = [list(_numeric_paths(doc)) for doc in BASES]
unsafe_numbers = st.one_of(
    st.sampled_from([math.nan, math.inf, -math.inf]),
    st.floats(min_value=1.0001e15, max_value=1e308),
    st.floats(max_value=-1.0001e15, min_value=-1e308),
    st.integers(min_value=10**15 + 1, max_value=10**60),
)


@st.composite
def reports_with_an_unsafe_number(draw):
    k = draw(st.integers(min_value=0, max_value=len(BASES) - 1))
    path = draw(st.sampled_from(NUMERIC_PATHS[k]))
    doc = copy.deepcopy(BASES[k])
    node = doc
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = draw(unsafe_numbers)
    return doc, path


@settings(max_examples=150, **DETERMINISTIC)
@given(case=reports_with_an_unsafe_number())
def test_a_non_finite_or_huge_number_anywhere_makes_a_report_invalid(case):
    from ecocompute.report.read import problems_in
    from ecocompute.results.collect import Invalid, read_one

    doc, path = case
    with tempfile.TemporaryDirectory() as tmp:
        file = Path(tmp) / "energy.json"
        file.write_text(json.dumps(doc))  # Python writes NaN and Infinity as bare words
        problems = problems_in(file)
        assert problems, path
        assert isinstance(read_one(file), Invalid)


# --- 3. random power traces and dropped reads -------------------------------------

RATE_HZ = 10.0
T0 = 100.0  # FakeClock's start


def pl_value(bt: list[float], bp: list[float], t: float) -> float:
    """The piecewise-linear function through (bt, bp); constant beyond its ends."""
    if t <= bt[0]:
        return bp[0]
    for (t0, p0), (t1, p1) in itertools.pairwise(zip(bt, bp, strict=True)):
        if t <= t1:
            return p0 + (p1 - p0) * (t - t0) / (t1 - t0)
    return bp[-1]


def pl_integral(bt: list[float], bp: list[float], a: float, b: float) -> float:
    """Its exact integral over [a, b]: trapezoids between its own breakpoints."""
    pts = [a, *(t for t in bt if a < t < b), b]
    return sum(
        (t1 - t0) * (pl_value(bt, bp, t0) + pl_value(bt, bp, t1)) / 2
        for t0, t1 in itertools.pairwise(pts)
    )


def sample(bt, bp, reads: int, dropped: set[int]) -> PowerSampler:
    """The real sampler, on a fake clock, reading the trace at its 10 Hz ticks; the
    reads numbered in `dropped` (0-based) fail like a busy NVML."""
    clock = FakeClock()
    count = itertools.count()

    def read_w(index: int) -> float:
        if next(count) in dropped:
            raise TelemetryReadError("busy (scripted)")
        return pl_value(bt, bp, clock())

    sampler = PowerSampler(read_w, [0], RATE_HZ, clock=clock)
    drive(sampler, clock, reads=reads, read_cost_s=lambda k: 0.0)
    return sampler


watts = st.floats(min_value=0.0, max_value=1000.0, allow_nan=False)


@st.composite
def windows(draw, reads: int) -> tuple[float, float]:
    """A window reaching up to half a period beyond the first and last read."""
    lo, hi = T0 - 0.05, T0 + (reads - 1) / RATE_HZ + 0.05
    a = draw(st.floats(min_value=lo, max_value=hi - 0.001))
    b = draw(st.floats(min_value=a + 0.001, max_value=hi))
    return a, b


@st.composite
def tick_aligned(draw):
    reads = draw(st.integers(min_value=2, max_value=60))
    powers = draw(st.lists(watts, min_size=reads, max_size=reads))
    ticks = [T0 + k / RATE_HZ for k in range(reads)]
    return reads, ticks, powers, draw(windows(reads))


@settings(max_examples=150, **DETERMINISTIC)
@given(case=tick_aligned())
def test_energy_is_exact_for_traces_with_breakpoints_at_the_reads(case):
    """Tolerance: exact (to rounding, 1e-9 relative) for a trace that is linear between
    consecutive reads and constant beyond the first and last, which is exactly the
    function the trapezoid integrates."""
    reads, bt, bp, (a, b) = case
    sampler = sample(bt, bp, reads, dropped=set())
    assert len(sampler.traces[0].times_s) == reads
    truth = pl_integral(bt, bp, a, b)
    assert sampler.energy_j(0, a, b) == pytest.approx(truth, rel=1e-9, abs=1e-9)


@st.composite
def traces_with_drops(draw):
    reads = draw(st.integers(min_value=2, max_value=60))
    span = (T0 - 1.0, T0 + reads / RATE_HZ + 1.0)
    inner = draw(
        st.lists(
            st.floats(min_value=span[0], max_value=span[1]), min_size=0, max_size=10, unique=True
        )
    )
    bt = sorted({span[0], span[1], *inner})
    bp = draw(st.lists(watts, min_size=len(bt), max_size=len(bt)))
    dropped = draw(st.sets(st.integers(min_value=0, max_value=reads - 1), max_size=reads - 1))
    return reads, bt, bp, dropped, draw(windows(reads))


def bridging_bound(bt, bp, kept_t: list[float], a: float, b: float) -> float:
    """How far the trapezoid through the kept reads can be from the true integral over
    [a, b], for a trace with slopes at most L (W/s):
    - across a gap of g seconds between kept reads, the error of the chord is a 2L-
      Lipschitz function that is 0 at both ends, so its integral is at most L g^2 / 2;
      where the trace has no breakpoint inside the gap the chord is exact (0);
    - where the window reaches d seconds beyond the first or last kept read and the
      nearest value is held, at most L d^2 / 2."""
    pieces = itertools.pairwise(zip(bt, bp, strict=True))
    slope = max(abs((p1 - p0) / (t1 - t0)) for (t0, p0), (t1, p1) in pieces)
    bound = 0.0
    for t0, t1 in itertools.pairwise(kept_t):
        if t1 > a and t0 < b and any(t0 < t < t1 for t in bt):
            bound += slope * (t1 - t0) ** 2 / 2
    if a < kept_t[0]:
        bound += slope * (kept_t[0] - a) ** 2 / 2
    if b > kept_t[-1]:
        bound += slope * (b - kept_t[-1]) ** 2 / 2
    return bound


@settings(max_examples=200, **DETERMINISTIC)
@given(case=traces_with_drops())
def test_dropped_reads_never_raise_the_figure(case):
    """Any piecewise-linear trace (breakpoints anywhere), any reads dropped (one kept).

    Stated tolerance: |E - truth| <= bridging_bound(...) + 1e-9 relative (see there).

    "Dropped reads never raise the figure" means, precisely:
    (a) a failed read adds no sample and no value of its own (not 0 W, not a repeat of
        the last reading, not the power limit): E is exactly the trapezoid through the
        reads that succeeded, as if the failed ones had never been scheduled;
    (b) so E never exceeds the highest power actually read times the window (nor falls
        below the lowest): a burst of failures cannot inflate the figure;
    (c) every failed read in the window is counted as dropped, none as a sample.
    What it does NOT mean: that E with drops <= E without them. Bridging a gap can land
    above the truth (drop the low point of a dip) or below it (drop a peak); how far is
    what the tolerance bounds, and what MIN_VALID_SAMPLE_FRACTION limits in a report.
    """
    reads, bt, bp, dropped, (a, b) = case
    sampler = sample(bt, bp, reads, dropped)
    trace = sampler.traces[0]
    kept_t, kept_p = trace.times_s, trace.powers_w
    assert len(kept_t) == reads - len(dropped) and len(trace.dropped_times_s) == len(dropped)

    energy = sampler.energy_j(0, a, b)
    truth = pl_integral(bt, bp, a, b)
    bound = bridging_bound(bt, bp, kept_t, a, b)
    assert abs(energy - truth) <= bound + 1e-9 * max(1.0, abs(truth))
    # (a)
    assert energy == integrate_trapezoid(kept_t, kept_p, a, b)
    # (b)
    assert min(kept_p) * (b - a) - 1e-9 <= energy <= max(kept_p) * (b - a) + 1e-9
    # (c)
    ok, bad = trace.counts_between(a, b)
    tick_times = [T0 + k / RATE_HZ for k in range(reads)]
    in_window = [k for k, t in enumerate(tick_times) if a <= t <= b]
    assert (ok, bad) == (
        sum(k not in dropped for k in in_window),
        sum(k in dropped for k in in_window),
    )


@st.composite
def drop_patterns(draw):
    reads = draw(st.integers(min_value=1, max_value=80))
    dropped = draw(st.sets(st.integers(min_value=0, max_value=reads - 1)))
    return reads, dropped, draw(windows(reads))


@settings(max_examples=150, **DETERMINISTIC)
@given(case=drop_patterns())
def test_a_window_stands_only_with_enough_samples(case):
    """ "Enough" (the report's min_valid_sample_fraction): a window with 2 or more reads
    due stands only if at least half of them succeeded; any window needs one sample."""
    reads, dropped, (a, b) = case
    sampler = sample([T0 - 1, T0 + 100], [100.0, 100.0], reads, dropped)
    meter = EnergyMeter(FakeTelemetry(), [0], sampler, lambda: None, use_counter=False)
    ok, bad = sampler.traces[0].counts_between(a, b)
    due = (b - a) * RATE_HZ
    enough = bool(sampler.traces[0].times_s) and not (
        due >= 2 and ok < MIN_VALID_SAMPLE_FRACTION * due
    )
    if not enough:
        with pytest.raises(MeasurementRefused, match="power reads kept failing"):
            meter.reading(WindowEdges(a, b, None, None))
        return
    reading = meter.reading(WindowEdges(a, b, None, None))
    assert (reading.samples, reading.dropped) == (ok, bad)
    assert reading.sampled_j == pytest.approx(100.0 * (b - a))  # a flat trace, any drops


def test_the_properties_are_bounded_and_derandomized():
    """CI runs the same examples every time, and a bounded number of them."""
    for test in (
        test_every_parameter_set_writes_one_honest_report_or_nothing,
        test_energy_is_exact_for_traces_with_breakpoints_at_the_reads,
        test_dropped_reads_never_raise_the_figure,
        test_a_window_stands_only_with_enough_samples,
        test_a_non_finite_or_huge_number_anywhere_makes_a_report_invalid,
    ):
        chosen = test._hypothesis_internal_use_settings  # type: ignore[attr-defined]
        assert chosen.derandomize and chosen.database is None and chosen.max_examples <= 200
    # 4 machines x with/without --dry_run x 10 parameter sets: 80 runs of the CLI
    assert os.environ.get("HF_HUB_OFFLINE") == "1"
