"""Whether a report's figures follow from what it measured, and whether what it says of
its machine, time and protocol hangs together: every check beyond the model's types.

A report of format 2.0 is checked exactly: its raw records (trials, idle window, the
formats' facts) are taken out and its results derived again (report/derive.py); every
figure must be the same float. A report of an older format of this tool holds figures
rounded to 3-4 decimals, so each figure must lie within its own rounding (and a relative
1e-4 for the rounding of what it derives from) of the figure derived again from its
rounded trials. A report without trials (derived, or the published container's one
run) is checked in report/derived_checks.py. The rules that derive nothing: the GPUs it
names (each once, their arch class), its timestamp (real, not in the future), its size
(the model name's where it says so), one protocol (tokens, batch), a decode record of
the regime it names, its trials' tokens, energies, sources and per-GPU energies, no
round copied from another, powers no GPU can draw.
"""

from __future__ import annotations

import datetime as dt
import math
from collections import Counter
from collections.abc import Sequence

from ecocompute.params.model_size import params_b_from_model_name
from ecocompute.published.archs import UNKNOWN, arch_from_product_name
from ecocompute.report import derive
from ecocompute.report.compare import compare, compare_rounded
from ecocompute.report.derived_checks import (
    close,
    delta_from_energies,
    derived_problems,
    measured_units_problems,
    run_totals_problems,
)
from ecocompute.report.model import Report
from ecocompute.report.results_model import Trial
from ecocompute.report.thermal import thermal_of

FUTURE_SLACK = dt.timedelta(days=1)  # clocks differ; a report a day ahead is impossible
MAX_POWER_PER_GPU_W = 5_000.0  # far beyond any accelerator's package power (H200: 700 W)


def report_problems(report: Report, *, exact: bool | None = None) -> list[str]:
    """Every way a report contradicts itself, as "$.json.path: why"; empty when none.
    exact: derived figures must be the same floats (default: for format 2.0)."""
    exact = report.ecocompute_format is not None if exact is None else exact
    problems = timestamp_problems(report.timestamp_utc) + size_problems(report)
    if report.measured:
        if not report.ours:  # the published container's: one run, no trials
            return (
                problems
                + gpu_problems(report)
                + delta_from_energies(report.results, exact)
                + run_totals_problems(report.results, report.measurement.sample_rate_hz)
            )
        return problems + measured_problems(report, exact)
    return problems + derived_problems(report, exact)


# -- a measured report --------------------------------------------------------------------


def measured_problems(report: Report, exact: bool) -> list[str]:
    res, work = report.results, report.workload
    problems = gpu_problems(report) + protocol_problems(report)
    if not report.system_under_test.gpus:
        problems.append(
            f"$.system_under_test.gpus: lists 0 GPU(s), accelerator_count says "
            f"{report.system_under_test.accelerator_count}"
        )
    if not res.trials:
        return [*problems, "$.results.trials: none, but a measured report holds its trials"]
    problems += format_rules(report) + trial_rules(report, res.trials)
    if problems:
        return problems  # derived figures of broken trials would only repeat the news
    inputs = derive.measured_inputs(
        res,
        work.precision,
        work.batch_size,
        report.system_under_test.memory_bandwidth_gbs,
        work.prompt_tokens,
        work.max_new_tokens,
    )
    again = derive.derive_results(inputs, res.note or "")
    # the card model's units are no figure of this run's trials: checked on their own
    again = again.model_copy(update={"reference_units": res.reference_units})
    units = measured_units_problems(report)
    if exact:
        return compare(res, again) + thermal_problems(report) + units
    return compare_rounded(res, again, inputs) + units  # an older format: within its rounding


def thermal_problems(report: Report) -> list[str]:
    """A thermal block of ours that its trials do not give (report/thermal.py)."""
    stored = report.thermal
    if stored is None:
        return []
    m = report.measurement
    again = thermal_of(report.results.trials, m.warmup, m.order)
    return [
        f"$.thermal.{k}: {v!r}, but its trials give {getattr(again, k)!r}"
        for k, v in stored
        if v != getattr(again, k)
    ]


def trial_rules(report: Report, trials: Sequence[Trial]) -> list[str]:
    """What a trial's readings must satisfy that nothing derives."""
    work = report.workload
    expected = None if work.max_new_tokens is None else work.max_new_tokens * work.batch_size
    gpus_of = {fmt: s.nvml_indices for fmt, s in report.results.per_format.items()}
    held = report.results.held_gpus.nvml_indices if report.results.held_gpus else None
    problems = []
    if len({t.index for t in trials}) != len(trials):
        problems.append("$.results.trials: two trials share an index")
    for k, t in enumerate(trials):
        where = f"$.results.trials[{k}]"
        if t.energy_joules <= 0:
            problems.append(
                f"{where}.energy_joules: {t.energy_joules:g} J, but a GPU decoding tokens "
                "draws power"
            )
        if t.prefill is not None:
            problems += prefill_rules(report, t, where)
        if expected is not None and t.prefill is not None:
            in_window = expected - work.batch_size  # the prefill yields the first new tokens
            if t.tokens != in_window:
                problems.append(
                    f"{where}.tokens: {t.tokens}, but a decode window after its prefill "
                    f"generates ({work.max_new_tokens} - 1) new tokens x batch "
                    f"{work.batch_size} = {in_window}"
                )
        elif expected is not None and t.tokens != expected:
            problems.append(
                f"{where}.tokens: {t.tokens}, but the workload generates {work.max_new_tokens} "
                f"new tokens x batch {work.batch_size} = {expected} per trial"
            )
        primary = (
            t.counter_energy_joules
            if t.energy_source == "nvml_energy_counter"
            else t.sampled_energy_joules
        )
        if t.energy_source == "sampled_power" and t.counter_energy_joules is not None:
            problems.append(
                f"{where}.counter_energy_joules: {t.counter_energy_joules:g}, but it has no counter"
            )
        elif primary is not None and not close(t.energy_joules, primary, 0.0, 0.0):
            problems.append(
                f"{where}.energy_joules: {t.energy_joules:g}, but its {t.energy_source} "
                f"reads {primary:g} J"
            )
        gpus = gpus_of.get(t.format)
        if gpus is not None and len(t.per_gpu_energy_joules) != len(gpus):
            problems.append(
                f"{where}.per_gpu_energy_joules: {len(t.per_gpu_energy_joules)} GPU(s), but its "
                f"format occupies {len(gpus)} ({gpus})"
            )
        elif t.per_gpu_energy_joules and not close(
            math.fsum(t.per_gpu_energy_joules),
            t.energy_joules,
            5e-5 * (len(t.per_gpu_energy_joules) + 1),
            1e-12,
        ):
            problems.append(
                f"{where}.per_gpu_energy_joules: add up to {sum(t.per_gpu_energy_joules):.4f} J, "
                f"the trial says {t.energy_joules:g} J"
            )
        if t.idle_gpus_energy_joules is not None and not held:
            problems.append(
                f"{where}.idle_gpus_energy_joules: present, but the report has no results.held_gpus"
            )
        elif held and gpus is not None and t.idle_gpus_energy_joules is not None:
            idle = [i for i in held if i not in gpus]
            if len(t.idle_gpus_energy_joules) != len(idle):
                problems.append(
                    f"{where}.idle_gpus_energy_joules: {len(t.idle_gpus_energy_joules)} GPU(s), "
                    f"but of results.held_gpus.nvml_indices {held} its format leaves "
                    f"{len(idle)} idle ({idle})"
                )
        power = t.energy_joules / t.duration_s
        if power > MAX_POWER_PER_GPU_W * max(1, len(t.per_gpu_energy_joules)):
            problems.append(
                f"{where}.duration_s: {t.duration_s:g} s for {t.energy_joules:g} J is "
                f"{power:,.0f} W, more than any GPU draws"
            )
    return problems + repeated_rounds(trials)


def prefill_rules(report: Report, t: Trial, where: str) -> list[str]:
    """A trial's prefill window: of a run with its phases apart, of the workload's prompt
    over the batch, its energy its primary source's and its GPUs' energies' sum."""
    w, work, problems = t.prefill, report.workload, []
    if w is None:
        return []
    if report.measurement.decode.phases != "apart":
        problems.append(f"{where}.prefill: present, but measurement.decode.phases is not apart")
    if work.prompt_tokens is not None and w.prompt_tokens != work.prompt_tokens * work.batch_size:
        problems.append(f"{where}.prefill.prompt_tokens: {w.prompt_tokens}, not the workload's")
    counter = w.energy_source == "nvml_energy_counter"
    primary = w.counter_energy_joules if counter else w.sampled_energy_joules
    gpus = math.fsum(w.per_gpu_energy_joules)
    if w.energy_joules <= 0 or primary != w.energy_joules or not close(gpus, primary, 1e-4, 0):
        problems.append(f"{where}.prefill.energy_joules: {w.energy_joules:g} J, not its readings'")
    return problems


def format_rules(report: Report) -> list[str]:
    """The trials are FP16's and the report's own format's, one each per round, and the
    formats' GPUs are GPUs the report lists."""
    res, work, meas = report.results, report.workload, report.measurement
    formats = {t.format for t in res.trials}
    wanted = {"FP16", work.precision}
    problems = []
    if formats != wanted:
        problems.append(
            f"$.results.trials: formats {sorted(formats)}, but a {work.precision} report holds "
            f"trials of {sorted(wanted)}"
        )
    if set(res.per_format) != formats:
        problems.append(
            f"$.results.per_format: formats {sorted(res.per_format)}, but its trials are of "
            f"{sorted(formats)}"
        )
    rounds = meas.stopping.rounds if meas.stopping else meas.iterations
    known = {g.nvml_index for g in report.system_under_test.gpus}
    for fmt, stats in res.per_format.items():
        mine = [t for t in res.trials if t.format == fmt]
        where = f"$.results.per_format.{fmt}"
        if stats.n_trials != len(mine):
            problems.append(
                f"{where}.n_trials: {stats.n_trials}, but the report holds {len(mine)} {fmt} "
                "trial(s)"
            )
        if rounds is not None and len(mine) != rounds:
            problems.append(
                f"{where}: {len(mine)} trial(s), but the measurement ran {rounds} round(s)"
            )
        if known and not set(stats.nvml_indices) <= known:
            problems.append(
                f"{where}.nvml_indices: {stats.nvml_indices}, but the report lists GPUs "
                f"{sorted(known)}"
            )
    planned = None if meas.iterations is None else meas.iterations * (meas.compiles or 1)
    if meas.stopping and meas.stopping.rule == "fixed" and planned not in (None, rounds):
        each = f" under each of {meas.compiles} compiles" if meas.compiles else ""
        problems.append(
            f"$.measurement.iterations: {meas.iterations}{each}, but the report holds {rounds} "
            "round(s) of a fixed count"
        )
    return problems + idle_window_rules(report) + compile_rules(report)


def idle_window_rules(report: Report) -> list[str]:
    """The idle window reads each GPU it names once, one energy per GPU."""
    w = report.results.idle_window
    if w is None:
        return []
    where = "$.results.idle_window"
    problems = []
    if len(set(w.nvml_indices)) != len(w.nvml_indices):
        problems.append(f"{where}.nvml_indices: {w.nvml_indices} names a GPU twice")
    if len(w.energy_joules_by_gpu) != len(w.nvml_indices):
        problems.append(
            f"{where}.energy_joules_by_gpu: {len(w.energy_joules_by_gpu)} energies, but "
            f"nvml_indices names {len(w.nvml_indices)} GPU(s)"
        )
    return problems


def compile_rules(report: Report) -> list[str]:
    """--compiles N: every trial names its compile, each compile ran `iterations` rounds of
    both formats, and the decode record holds one block per compile; one compile: none
    names one."""
    res, meas = report.results, report.measurement
    named = [t.compile for t in res.trials if t.compile is not None]
    blocks = meas.decode.compiles
    if meas.compiles is None:
        if named or blocks:
            return ["$.results.trials: trials name a compile, but measurement.compiles is absent"]
        return []
    problems = []
    if len(named) != len(res.trials):
        problems.append(
            f"$.results.trials: --compiles {meas.compiles}, but not every trial names its compile"
        )
    counts = Counter((t.compile, t.format) for t in res.trials if t.compile is not None)
    wanted = {(k, f): meas.iterations for k in range(meas.compiles) for f in res.per_format}
    if counts != wanted:
        problems.append(
            f"$.results.trials: {meas.iterations} trial(s) of each format under each of "
            f"{meas.compiles} compiles expected, found {dict(sorted(counts.items()))}"
        )
    if blocks is None or [b.compile for b in blocks] != list(range(meas.compiles)):
        problems.append(
            f"$.measurement.decode.compiles: one block per compile (0..{meas.compiles - 1})"
        )
    if res.between_compiles is None:
        problems.append("$.results.between_compiles: absent from a report of several compiles")
    return problems


# What a trial measured: every reading but its index, round, compile and prefill, and of
# its windows' conditions every reading but the clock events and throttles
_NOT_MEASURED = ("index", "pair", "compile", "prefill", "conditions")
_NOT_MEASURED_OF_WINDOW = ("clock_events_seen", "throttled_s", "throttles")


def _measurement_of(t: Trial) -> tuple[object, ...]:
    """What a trial measured (_NOT_MEASURED), hashable."""

    def frozen(value: object) -> object:
        return tuple(value) if isinstance(value, list) else value

    readings = [frozen(v) for k, v in derive.readings_of(t).items() if k not in _NOT_MEASURED]
    windows = [
        tuple(frozen(v) for k, v in c if k not in _NOT_MEASURED_OF_WINDOW) for c in t.conditions
    ]
    return (*readings, tuple(windows))


def repeated_rounds(trials: Sequence[Trial]) -> list[str]:
    """A round (the trials of one pair) whose every trial repeats another round's figure
    for figure (a round copied and re-indexed to inflate n: real windows never coincide)."""
    rounds: dict[int, list[tuple[object, ...]]] = {}
    for t in trials:
        if t.pair is not None:
            rounds.setdefault(t.pair, []).append(_measurement_of(t))
    seen: dict[tuple[object, ...], int] = {}
    problems = []
    for pair, measured in rounds.items():
        key = tuple(sorted(measured, key=repr))
        if key in seen:
            problems.append(
                f"$.results.trials: round {pair} repeats round {seen[key]} figure for figure "
                "(a round counted twice)"
            )
        else:
            seen[key] = pair
    return problems


# -- machine, time, protocol ---------------------------------------------------------------


def gpu_problems(report: Report) -> list[str]:
    """A measured report names the GPU(s) it measured, once each, in its arch class."""
    sut = report.system_under_test
    problems = []
    if sut.gpus and len(sut.gpus) != sut.accelerator_count:
        problems.append(
            f"$.system_under_test.gpus: lists {len(sut.gpus)} GPU(s), accelerator_count says "
            f"{sut.accelerator_count}"
        )
    names = " + ".join(sorted({g.name for g in sut.gpus}))
    if sut.gpus and sut.gpu != names:
        problems.append(
            f"$.system_under_test.gpu: {sut.gpu!r}, but the GPUs it lists are {names!r}"
        )
    for key in ("uuid", "nvml_index"):
        values = [getattr(g, key) for g in sut.gpus]
        repeated = sorted({str(v) for v in values if values.count(v) > 1})
        if repeated:
            problems.append(
                f"$.system_under_test.gpus: {key} {', '.join(repeated)} listed twice, but each "
                "GPU is one device"
            )
    listed = [g.name for g in sut.gpus] or [sut.gpu]
    said = {arch_from_product_name(n) for n in listed} - {UNKNOWN}
    if said and sut.gpu_arch not in said:
        problems.append(
            f"$.system_under_test.gpu_arch: {sut.gpu_arch!r}, but a measured report's arch is "
            f"its GPU's, and {' + '.join(sorted(set(listed)))} is {' or '.join(sorted(said))}"
        )
    return problems


def timestamp_problems(stamp: str | None, now: dt.datetime | None = None) -> list[str]:
    if stamp is None:
        return []
    try:
        when = dt.datetime.fromisoformat(stamp)  # any ISO 8601 form: Z, +00:00, a fraction
    except ValueError:
        return [f"$.timestamp_utc: {stamp!r} is no real date and time"]
    if when.utcoffset():
        return [f"$.timestamp_utc: {stamp!r} is not UTC (offset {when:%z}), as its name says"]
    if when.replace(tzinfo=dt.UTC) > (now or dt.datetime.now(dt.UTC)) + FUTURE_SLACK:
        return [f"$.timestamp_utc: {stamp!r} is in the future: no run has taken place then"]
    return []


def size_problems(report: Report) -> list[str]:
    """A size whose source is the model's name (or its preset's, which the name is) is the
    size that name states (params/model_size.py), as the writer took it."""
    work = report.workload
    if work.params_b_source not in ("model name", "preset"):
        return []
    named = params_b_from_model_name(work.model_name)
    if work.params_b == named:
        return []
    return [
        f"$.workload.params_b: {work.params_b!r}, but its source, the {work.params_b_source} "
        f"{work.model_name!r}, states {'no size' if named is None else f'{named:g}'}"
    ]


def protocol_problems(report: Report) -> list[str]:
    """One protocol: tokens per run and batch size, as the workload, the measurement and
    its decode record them, and a decode record of its regime (report/decode_model.py):
    eager captures and replays no step, graphs and compiled say whether theirs was
    captured, and only compiled names a compiler."""
    work, meas = report.workload, report.measurement
    tokens, d = work.max_new_tokens, meas.decode
    replayed = [
        f"{k} {v!r}"
        for k, v in (
            ("graph_captured", d.graph_captured),
            ("graph_replays_per_decode", d.graph_replays_per_decode or None),
            ("cache", d.cache if (d.cache or "").startswith("static") else None),
            ("compiler", d.compiler and d.compiler.backend),
        )
        if v is not None
    ]
    problems = []
    if d.regime == "eager" and replayed:
        problems.append(
            f"$.measurement.decode.regime: 'eager', but its record is of a captured step "
            f"replayed per token ({', '.join(replayed)})"
        )
    if d.regime != "eager" and d.graph_captured is None:
        problems.append(
            f"$.measurement.decode.graph_captured: absent, but the {d.regime} regime records "
            "whether its step was captured"
        )
    if d.regime != "eager" and (d.regime == "compiled") != (d.compiler is not None):
        problems.append(
            f"$.measurement.decode.compiler: {'absent' if d.compiler is None else 'present'}, "
            f"but the regime is {d.regime}"
        )
    for where, value in (
        ("measurement.tokens_per_run", meas.tokens_per_run),
        ("measurement.decode.tokens_per_row", meas.decode.tokens_per_row),
    ):
        if value is not None and tokens is not None and value != tokens:
            problems.append(
                f"$.{where}: {value!r}, but the workload generates {tokens!r} new tokens per run"
            )
    batch = meas.decode.batch_size
    if batch is not None and batch != work.batch_size:
        problems.append(
            f"$.measurement.decode.batch_size: {batch!r}, but the workload's batch is "
            f"{work.batch_size!r}"
        )
    return problems
