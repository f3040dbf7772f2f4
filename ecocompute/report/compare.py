"""A report's results against the same results derived again from its raw records
(report/checks.py asks): exactly for format 2.0, and for an older format of this tool
within each figure's own rounding plus a first-order bound of the rounding of what it
derives from, worked out by deriving again from inputs moved by their rounding (only for
the figures a first comparison found off)."""

from __future__ import annotations

import dataclasses
import math
import re
import statistics
from collections.abc import Sequence
from typing import Any

from ecocompute.report import derive
from ecocompute.report.derived_checks import close, decimals_of
from ecocompute.report.results_model import Results, Trial

# The rounding an older format applied to what its figures derive from (report/legacy.py):
# a trial's joules and seconds to 4 decimals, watts and MiB to 3 and 1, bandwidth to 1.
HALF_J, HALF_S, HALF_W, HALF_MIB, HALF_GBS = 5e-5, 5e-5, 5e-4, 0.05, 0.05
SAFETY = 2.0  # first-order bounds, doubled for what is not linear (sd, CV)
LEGACY_RELATIVE = 2e-6  # float arithmetic in another order (an older writer's)


PATTERNS = ("same", "spread", "deviations", "formats")


def _signs(trials: Sequence[Trial], pattern: str) -> list[int]:
    """Which way each trial moves: all one way ("same"), +1 and -1 in turn within each
    format ("spread": what moves a spread), away from its format's mean ("deviations":
    the worst case of a spread, to first order), or +1 for FP16 and -1 for the others
    ("formats": what moves a ratio of two formats)."""
    rank = dict.fromkeys({t.format for t in trials}, 0)
    means = {
        f: statistics.fmean(t.energy_per_token_mj for t in trials if t.format == f) for f in rank
    }
    out = []
    for t in trials:
        if pattern == "spread":
            sign = -1 if rank[t.format] % 2 else 1
        elif pattern == "deviations":
            sign = 1 if t.energy_per_token_mj >= means[t.format] else -1
        elif pattern == "formats":
            sign = 1 if t.format == "FP16" else -1
        else:
            sign = 1
        rank[t.format] += 1
        out.append(sign)
    return out


def _move(name: str, value: Any, step: float) -> Any:
    """A reading moved by step (each value of a list; a duration kept above zero)."""
    if isinstance(value, list):
        return [v + step for v in value]
    if value is None:
        return None
    return max(value + step, 1e-12) if name == "duration_s" else value + step


def _moved(t: Trial, fields: Sequence[str], step: float) -> Trial:
    """The trial with these readings moved by step, derived again, without its windows'
    conditions: only results.conditions derives from them, and no bound is worked out
    for it (_RAW)."""
    readings = derive.readings_of(t)
    for name in fields:
        readings[name] = _move(name, readings[name], step)
    readings["conditions"] = ()
    return derive.trial(**readings)


@dataclasses.dataclass(frozen=True, slots=True)
class _MovedReadings:
    """A trial's readings moved by their rounding and its figures derived from them
    again (derive.trial_figures, as derive.trial does): what _local_bounds reads of a
    moved trial, without building one."""

    format: str
    duration_s: float
    tokens: int
    energy_joules: float
    counter_energy_joules: float | None
    sampled_energy_joules: float
    idle_gpus_energy_joules: list[float] | None
    figures: derive.TrialFigures

    @property
    def energy_per_token_mj(self) -> float:
        return self.figures.energy_per_token_mj

    def number(self, field: str) -> object:
        """The figure or reading of a Trial's field of this name (None: neither)."""
        if field in derive.TrialFigures._fields:
            return getattr(self.figures, field)
        return getattr(self, field, None) if field != "figures" else None


def _moved_readings(t: Trial, fields: Sequence[str], step: float) -> _MovedReadings:
    """_moved's readings and figures alone."""

    def at(name: str, value: Any) -> Any:
        return _move(name, value, step) if name in fields else value

    duration, energy = at("duration_s", t.duration_s), at("energy_joules", t.energy_joules)
    counter = at("counter_energy_joules", t.counter_energy_joules)
    sampled = at("sampled_energy_joules", t.sampled_energy_joules)
    idle = at("idle_gpus_energy_joules", t.idle_gpus_energy_joules)
    figures = derive.trial_figures(
        duration_s=duration,
        tokens=t.tokens,
        energy_joules=energy,
        counter_energy_joules=counter,
        sampled_energy_joules=sampled,
        idle_gpus_energy_joules=idle,
    )
    return _MovedReadings(t.format, duration, t.tokens, energy, counter, sampled, idle, figures)


def _trial_groups(m: derive.Measured) -> list[tuple[tuple[str, ...], float]]:
    """The trials' readings, in groups that move together, and each group's rounding."""
    groups = [
        (("duration_s",), HALF_S),
        (("energy_joules", "counter_energy_joules", "per_gpu_energy_joules"), HALF_J),
        (("sampled_energy_joules",), HALF_J),
    ]
    if m.held_nvml_indices:
        groups.append((("idle_gpus_energy_joules",), HALF_J))
    return groups


def _perturbed(m: derive.Measured) -> list[derive.Measured]:
    """The inputs moved by their rounding, one group at a time, each trial the way its
    sign in each of the PATTERNS moves it (_signs)."""
    by_pattern = [_signs(m.trials, pattern) for pattern in PATTERNS]
    out = [
        dataclasses.replace(
            m, trials=tuple(_moved(t, fields, s * h) for t, s in zip(m.trials, signs, strict=True))
        )
        for fields, h in _trial_groups(m)
        for signs in by_pattern
    ]
    out.extend(_other_inputs_moved(m))
    return out


def _other_inputs_moved(m: derive.Measured) -> list[derive.Measured]:
    """The inputs besides the trials moved by their rounding, one at a time: the idle
    window's energy, each format's weights, the bandwidth."""
    out = []
    if m.idle_window is not None:
        w = m.idle_window
        moved = w.model_copy(
            update={
                "energy_joules_by_gpu": [e + HALF_W * w.duration_s for e in w.energy_joules_by_gpu]
            }
        )
        out.append(dataclasses.replace(m, idle_window=moved))
    facts = {
        f: dataclasses.replace(
            x, weights_mib=None if x.weights_mib is None else x.weights_mib + HALF_MIB
        )
        for f, x in m.facts.items()
    }
    out.append(dataclasses.replace(m, facts=facts))
    if m.bandwidth_gbs is not None:
        out.append(dataclasses.replace(m, bandwidth_gbs=m.bandwidth_gbs + HALF_GBS))
    return out


def bounded_figures(again: Results, paths: frozenset[str]) -> dict[str, float]:
    """The derived numbers at these JSON paths that a bound is worked out for (raw
    records left out)."""
    return {
        path: value
        for path in paths
        if not _RAW.intersection(name for name, _ in _STEP.findall(path))
        and (value := _number_at(again, path)) is not None
    }


def rounding_bounds(m: derive.Measured, again: Results, paths: frozenset[str]) -> dict[str, float]:
    """How far each derived figure at these JSON paths (raw records left out) may move
    with the rounding of what it derives from: the sum over input groups of the figure's
    change when the group moves by its rounding (first order), times SAFETY. Where every
    path is a trial's figure or a format's statistic, only those trials and formats are
    derived again (_local_bounds: the same sums, a fraction of the work)."""
    base = bounded_figures(again, paths)
    local = {path: _LOCAL.fullmatch(path) for path in base}
    if all(local.values()):
        return _local_bounds(
            m, base, {path: _located(match) for path, match in local.items() if match}
        )
    return _full_bounds(m, base)


def _full_bounds(m: derive.Measured, base: dict[str, float]) -> dict[str, float]:
    """rounding_bounds by deriving the whole results again for every moved input."""
    total = dict.fromkeys(base, 0.0)
    for moved in _perturbed(m):
        shifted = derive.derive_results(moved, "")
        for path, value in base.items():
            other = _number_at(shifted, path)
            if other is not None:
                total[path] += SAFETY * abs(other - value)
    return total


# "$.results.trials[3].avg_power_watts" or "$.results.per_format.NF4.idle_share_pct"
_LOCAL = re.compile(r"\$\.results\.(?:trials\[(\d+)\]|per_format\.([A-Z0-9]+))\.(\w+)")


Where = tuple[int | None, str | None, str]  # a trial's index or a format, and the field


def _located(match: re.Match[str]) -> Where:
    index = match.group(1)
    return None if index is None else int(index), match.group(2), match.group(3)


def _local_bounds(
    m: derive.Measured, base: dict[str, float], where: dict[str, Where]
) -> dict[str, float]:
    """rounding_bounds for trials' figures and formats' statistics alone: each moved
    input derives again only the trials and the formats' statistics these paths read
    (a trial's figures depend on its own readings, a format's statistics on its trials
    and the inputs besides them), so the sums are those of the whole derivation."""
    total = dict.fromkeys(base, 0.0)
    named = {fmt for _, fmt, _ in where.values() if fmt is not None}
    formats = {t.format for t in m.trials if t.format in named}
    wanted = {k for k, _, _ in where.values() if k is not None}
    wanted |= {i for i, t in enumerate(m.trials) if t.format in formats}
    of_format = {fmt: [i for i in sorted(wanted) if m.trials[i].format == fmt] for fmt in formats}
    # Read once: which trial and field each path reads, and which format's statistic.
    at_trials = [(path, k, field) for path, (k, _, field) in where.items() if k is not None]
    at_formats = [
        (path, fmt, field)
        for path, (k, fmt, field) in where.items()
        if k is None and fmt in formats
    ]

    def add(trials: dict[int, _MovedReadings], moved: derive.Measured) -> None:
        stats = {
            fmt: derive.FormatFigures([trials[i] for i in of_format[fmt]], moved.facts[fmt], moved)
            for fmt in formats
        }
        values = [(path, trials[k].number(field)) for path, k, field in at_trials]
        values += [(path, stats[fmt].figure(field)) for path, fmt, field in at_formats]
        for path, x in values:
            if isinstance(x, (int, float)) and not isinstance(x, bool):
                total[path] += SAFETY * abs(float(x) - base[path])

    signs_by_pattern = [_signs(m.trials, pattern) for pattern in PATTERNS]
    for fields, h in _trial_groups(m):
        cache: dict[tuple[int, int], _MovedReadings] = {}
        for signs in signs_by_pattern:
            trials = {}
            for i in wanted:
                if (i, signs[i]) not in cache:
                    cache[i, signs[i]] = _moved_readings(m.trials[i], fields, signs[i] * h)
                trials[i] = cache[i, signs[i]]
            add(trials, m)
    own = {i: _moved_readings(m.trials[i], (), 0.0) for i in wanted}
    for moved in _other_inputs_moved(m):
        add(own, moved)
    return total


_STEP = re.compile(r"\.([^.\[]+)|\[(\d+)\]")
_RAW = frozenset({"conditions", "idle_window", "per_gpu_energy_joules", "idle_gpus_energy_joules"})


def _number_at(results: Results, path: str) -> float | None:
    """The number at a JSON path of results ("$.results.per_format.NF4.cv_pct"), read
    from the model without dumping it; None where the path holds none."""
    x: Any = results
    for name, index in _STEP.findall(path[len("$.results") :]):
        if index:
            x = x[int(index)] if isinstance(x, list) and int(index) < len(x) else None
        elif isinstance(x, dict):
            x = x.get(name)
        else:
            x = getattr(x, name, None)
        if x is None:
            return None
    if isinstance(x, bool) or not isinstance(x, (int, float)):
        return None
    return float(x)


def compare(stored: Results, again: Results, bounds: dict[str, float] | None = None) -> list[str]:
    """Every figure of stored that differs from the same figure derived again: exactly
    (bounds None: format 2.0), or beyond its own rounding plus the bound of what it
    derives from (an older format; a figure it did not record is not compared)."""
    if bounds is None and stored == again:
        return []  # the common case, decided without a walk
    found: list[_Difference] = []
    _differences(
        stored.model_dump(mode="json"), again.model_dump(mode="json"), bounds, "$.results", found
    )
    return [message for d in found if (message := _message(*d, bounds))]


def compare_rounded(stored: Results, again: Results, m: derive.Measured) -> list[str]:
    """An older format's results against the same derived again from its rounded inputs
    m: most figures lie within their own rounding of the figure derived again; only
    where one does not is the rounding of what it derives from worked out (rounding_bounds),
    and those figures judged again."""
    found: list[_Difference] = []
    _differences(
        stored.model_dump(mode="json"), again.model_dump(mode="json"), {}, "$.results", found
    )
    if not found:
        return []
    bounds = rounding_bounds(m, again, frozenset(where for where, _, _ in found))
    return [message for d in found if (message := _message(*d, bounds))]


_Difference = tuple[str, Any, Any]  # a JSON path, its value as stored and as derived again


def _differences(
    s: Any, a: Any, bounds: dict[str, float] | None, where: str, out: list[_Difference]
) -> None:
    """Where two model_dump(mode="json") trees differ (_message says how): their keys are
    str and their values exactly dict, list, str, int, float, bool or None, so exact type
    tests hold (bool is no int here)."""
    ts, ta = type(s), type(a)
    if ts is dict and ta is dict:
        for key in sorted(s.keys() | a.keys()):
            if key != "note":
                _differences(s.get(key), a.get(key), bounds, f"{where}.{key}", out)
        return
    if ts is list and ta is list and len(s) == len(a):
        for k, (x, y) in enumerate(zip(s, a, strict=True)):
            _differences(x, y, bounds, f"{where}[{k}]", out)
        return
    if (s == a and ts is ta) or _message(where, s, a, bounds) is None:
        return
    out.append((where, s, a))


def _message(where: str, s: Any, a: Any, bounds: dict[str, float] | None) -> str | None:
    """How a stored value differs from the one derived again, or None where it does not
    (bounds None: exactly; else within its rounding plus its bound, and an older format's
    unrecorded value or words are not compared)."""
    if type(s) is list and type(a) is list and len(s) != len(a):
        return f"{where}: {len(s)} entries, but its trials give {len(a)}"
    legacy = bounds is not None
    if legacy and (s is None or (type(s) is str and not where.endswith(".verdict"))):
        return None  # an older format did not record it, or words it otherwise
    if s == a and type(s) is type(a):
        return None
    if legacy and type(s) is float and type(a) in (float, int) and _is_number(s) and _is_number(a):
        places = decimals_of(s)
        half = 0.5 * 10.0**-places if places else 0.5
        if close(s, float(a), half + (bounds or {}).get(where, 0.0), LEGACY_RELATIVE):
            return None
        return f"{where}: {s:g}, but its trials give {a:.6g}"
    return f"{where}: {s!r}, but its trials give {a!r}"


def _is_number(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
