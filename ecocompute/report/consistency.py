"""Whether a report's figures follow from its own trials: `validate` (and every tool that
reads reports) checks a report's arithmetic, not only its shape.

A measured report must name the GPU(s) it measured; its trials must add up to its
counts; its per-format figures, its pairs, its interval, its verdict and its headline
figures must recompute from its trials; each trial's energy per token must be its
energy over its tokens. A report derived from the published dataset holds no trials,
pairs, interval or verdict, and its delta follows from its two energies.

Tolerances are the rounding the writer does (report/trial_results.py rounds energies
per token, pair deltas and interval bounds to 3 decimals, joules to 4; the headline
delta is rounded to 1 decimal in formats 1.1 and 1.3, with the 3-decimal one beside it
in 1.3, and to 3 (measured) or 2 (derived) in 1.2), carried through the arithmetic: a
report our writer made always passes, and a figure changed by more than its rounding
does not. A 1.0 or 1.1 report (the published container's) holds no trials: only what its
format holds is checked. Called on documents that already passed the schema; anything
missing is reported, never raised.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from ecocompute.report.schema import PUBLISHED_FORMATS
from ecocompute.stats import estimate_delta, t_quantile, verdict_for

HALF_MJ = 0.0005  # energies per token: 3 decimals
HALF_J = 0.00005  # joules: 4 decimals
HALF_PCT = 0.0005  # measured deltas and interval bounds: 3 decimals
HALF_DERIVED_PCT = 0.005  # a derived report's delta in format 1.2: 2 decimals
HALF_ONE_DECIMAL = 0.05  # the headline delta of formats 1.1 and 1.3 (and 1.1's energies)
FORMAT_12 = "ecocompute-energy/1.2"
DELTA_3DP = "vs_fp16_energy_pct_3dp"
_SLACK = 1e-9  # float arithmetic on top of the rounding
FP16 = "FP16"


def _close(a: float, b: float, tolerance: float) -> bool:
    return abs(a - b) <= tolerance + _SLACK * max(1.0, abs(a), abs(b))


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def consistency_problems(doc: Mapping[str, Any]) -> list[str]:
    """Every way a schema-valid report contradicts itself, as "json.path: why"."""
    results = doc.get("results")
    if not isinstance(results, Mapping):
        return []
    if doc.get("schema_version") in PUBLISHED_FORMATS:  # one run: only its format's fields
        sut = {k: (doc.get("system_under_test") or {}).get(k) for k in ("gpu", "accelerator_count")}
        gpus = _gpus(sut) if results.get("basis") == "measured" else []
        return gpus + _delta_from_energies(doc, results)
    if results.get("basis") != "measured":
        return _derived(doc, results)
    return _measured(doc, results)


def delta_fields(doc: Mapping[str, Any]) -> list[tuple[str, float]]:
    """The report's headline delta fields, each with half of its rounding."""
    results = doc.get("results") or {}
    if doc.get("schema_version") == FORMAT_12:
        half = HALF_PCT if results.get("basis") == "measured" else HALF_DERIVED_PCT
    else:
        half = HALF_ONE_DECIMAL
    fields = [("vs_fp16_energy_pct", half)]
    if DELTA_3DP in results and doc.get("schema_version") not in PUBLISHED_FORMATS:
        fields.append((DELTA_3DP, HALF_PCT))  # ours: never read from a published report
    return fields


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
    energy = _number(res.get("energy_per_token_mj"))
    fp16 = _number(res.get("fp16_energy_per_token_mj"))
    half_mj = HALF_ONE_DECIMAL if doc.get("schema_version") in PUBLISHED_FORMATS else HALF_MJ
    if energy is None or fp16 is None or fp16 <= half_mj:
        return []
    problems = []
    low, high = _pct_range(energy, fp16, half_mj)
    for key, half in delta_fields(doc):
        delta = _number(res.get(key))
        if delta is not None and not low - half - _SLACK <= delta <= high + half + _SLACK:
            problems.append(
                f"$.results.{key}: {delta:g}%, but its energies ({energy:g} vs FP16 "
                f"{fp16:g} mJ/token) give {100 * (energy / fp16 - 1):.3f}%"
            )
    return problems


def _pct_range(value: float, base: float, half: float) -> tuple[float, float]:
    """The percent change of value vs base over every pair of numbers that round to
    them (each within +-half); base - half must be positive."""
    lo_base, hi_base = max(base - half, 1e-300), base + half
    lo_value, hi_value = max(value - half, 0.0), value + half
    return 100.0 * (lo_value / hi_base - 1.0), 100.0 * (hi_value / lo_base - 1.0)


# -- measured reports -------------------------------------------------------------------


def _measured(doc: Mapping[str, Any], res: Mapping[str, Any]) -> list[str]:
    sut = doc.get("system_under_test") or {}
    work = doc.get("workload") or {}
    problems = _gpus(sut)
    trials = [t for t in res.get("trials") or [] if isinstance(t, Mapping)]
    precision = str(work.get("precision"))
    per_format = res.get("per_format") or {}
    problems += _trial_arithmetic(trials, work)
    problems += _formats(trials, per_format, precision, doc, sut)
    problems += _headline(res, per_format, precision)
    if precision == FP16:
        problems += _fp16_alone(res)
    else:
        problems += _pairs(doc, res, trials, precision)
    return problems


def _gpus(sut: Mapping[str, Any]) -> list[str]:
    """A measured report names the GPU(s) it measured, and they agree with each other."""
    problems = []
    gpu = sut.get("gpu")
    count = sut.get("accelerator_count")
    gpus = [g for g in sut.get("gpus") or [] if isinstance(g, Mapping)]
    if not isinstance(gpu, str) or not gpu.strip():
        problems.append(f"$.system_under_test.gpu: {gpu!r}, but a measured report names its GPU")
    if not isinstance(count, int) or count < 1:
        problems.append(
            f"$.system_under_test.accelerator_count: {count!r}, but a measured report was "
            "measured on at least one GPU"
        )
    if "gpus" in sut and len(gpus) != count:
        problems.append(
            f"$.system_under_test.gpus: lists {len(gpus)} GPU(s), accelerator_count says {count!r}"
        )
    names = " + ".join(sorted({str(g.get("name")) for g in gpus}))
    if gpus and isinstance(gpu, str) and gpu != names:
        problems.append(f"$.system_under_test.gpu: {gpu!r}, but the GPUs it lists are {names!r}")
    return problems


def _trial_arithmetic(trials: Sequence[Mapping[str, Any]], work: Mapping[str, Any]) -> list[str]:
    """Each trial: positive energy, its tokens as the workload asked, energy per token
    equal to energy over tokens, its GPUs' energies adding up to its energy."""
    problems = []
    new_tokens, batch = work.get("max_new_tokens"), work.get("batch_size")
    expected_tokens = (
        new_tokens * batch if isinstance(new_tokens, int) and isinstance(batch, int) else None
    )
    indices = [t.get("index") for t in trials]
    if len(set(indices)) != len(indices):
        problems.append("$.results.trials: two trials share an index")
    for k, t in enumerate(trials):
        where = f"$.results.trials[{k}]"
        energy_j, tokens = _number(t.get("energy_joules")), t.get("tokens")
        per_token = _number(t.get("energy_per_token_mj"))
        if energy_j is None or per_token is None or not isinstance(tokens, int) or tokens < 1:
            continue
        if energy_j <= 0:
            problems.append(
                f"{where}.energy_joules: {energy_j:g} J, but a GPU decoding tokens draws power"
            )
        if expected_tokens is not None and tokens != expected_tokens:
            problems.append(
                f"{where}.tokens: {tokens}, but the workload generates {new_tokens} new tokens "
                f"x batch {batch} = {expected_tokens} per trial"
            )
        # energy_joules is rounded to 4 decimals, energy per token to 3
        if not _close(per_token, 1000.0 * energy_j / tokens, HALF_MJ + 1000.0 * HALF_J / tokens):
            problems.append(
                f"{where}.energy_per_token_mj: {per_token:g}, but {energy_j:g} J over {tokens} "
                f"tokens is {1000.0 * energy_j / tokens:.3f} mJ/token"
            )
        per_gpu = t.get("per_gpu_energy_joules")
        if isinstance(per_gpu, list) and per_gpu:
            total = sum(float(x) for x in per_gpu)
            if not _close(total, energy_j, HALF_J * (len(per_gpu) + 1)):
                problems.append(
                    f"{where}.per_gpu_energy_joules: add up to {total:.4f} J, the trial says "
                    f"{energy_j:g} J"
                )
    return problems


def _formats(
    trials: Sequence[Mapping[str, Any]],
    per_format: Mapping[str, Any],
    precision: str,
    doc: Mapping[str, Any],
    sut: Mapping[str, Any],
) -> list[str]:
    """per_format: one entry per format with trials, each recomputing from them."""
    problems = []
    by_format: dict[str, list[Mapping[str, Any]]] = {}
    for t in trials:
        by_format.setdefault(str(t.get("format")), []).append(t)
    expected = {FP16, precision}
    if set(by_format) != expected:
        problems.append(
            f"$.results.trials: formats {sorted(by_format)}, but a {precision} report holds "
            f"trials of {sorted(expected)}"
        )
    if set(per_format) != set(by_format):
        problems.append(
            f"$.results.per_format: formats {sorted(per_format)}, but its trials are of "
            f"{sorted(by_format)}"
        )
    measurement = doc.get("measurement") or {}
    rounds = (measurement.get("stopping") or {}).get("rounds", measurement.get("iterations"))
    known_gpus = {g.get("nvml_index") for g in sut.get("gpus") or [] if isinstance(g, Mapping)}
    for fmt, stats in per_format.items():
        if not isinstance(stats, Mapping):
            continue
        mine = by_format.get(fmt, [])
        where = f"$.results.per_format.{fmt}"
        n = stats.get("n_trials")
        if n != len(mine):
            problems.append(
                f"{where}.n_trials: {n!r}, but the report holds {len(mine)} {fmt} trial(s)"
            )
        if isinstance(rounds, int) and len(mine) != rounds:
            problems.append(
                f"{where}: {len(mine)} trial(s), but the measurement ran {rounds} round(s)"
            )
        tokens = sum(t.get("tokens", 0) for t in mine if isinstance(t.get("tokens"), int))
        if "tokens_generated" in stats and stats["tokens_generated"] != tokens:
            problems.append(
                f"{where}.tokens_generated: {stats['tokens_generated']!r}, but its trials "
                f"generated {tokens}"
            )
        energies = [_number(t.get("energy_joules")) for t in mine]
        total = _number(stats.get("total_energy_joules"))
        if total is not None and None not in energies:
            summed = sum(e for e in energies if e is not None)
            if not _close(total, summed, HALF_MJ + HALF_J * len(mine)):
                problems.append(
                    f"{where}.total_energy_joules: {total:g}, but its trials add up to "
                    f"{summed:.3f} J"
                )
        per_token = [_number(t.get("energy_per_token_mj")) for t in mine]
        mean = _number(stats.get("energy_per_token_mj"))
        if mine and mean is not None and None not in per_token:
            recomputed = math.fsum(x for x in per_token if x is not None) / len(per_token)
            if not _close(mean, recomputed, 2 * HALF_MJ):
                problems.append(
                    f"{where}.energy_per_token_mj: {mean:g}, but the mean of its trials is "
                    f"{recomputed:.3f}"
                )
        indices = stats.get("nvml_indices")
        if isinstance(indices, list) and known_gpus and not set(indices) <= known_gpus:
            problems.append(
                f"{where}.nvml_indices: {indices}, but the report lists GPUs "
                f"{sorted(known_gpus, key=str)}"
            )
    return problems


def _headline(res: Mapping[str, Any], per_format: Mapping[str, Any], precision: str) -> list[str]:
    """The headline figures are the per-format ones of the report's format and FP16."""
    problems = []
    pairs = (
        ("energy_per_token_mj", precision, "energy_per_token_mj"),
        ("fp16_energy_per_token_mj", FP16, "energy_per_token_mj"),
        ("total_energy_joules", precision, "total_energy_joules"),
        ("tokens_generated", precision, "tokens_generated"),
    )
    for key, fmt, source in pairs:
        stats = per_format.get(fmt)
        if not isinstance(stats, Mapping) or source not in stats:
            continue
        if res.get(key) != stats[source]:
            problems.append(
                f"$.results.{key}: {res.get(key)!r}, but per_format.{fmt}.{source} is "
                f"{stats[source]!r}"
            )
    return problems


def _fp16_alone(res: Mapping[str, Any]) -> list[str]:
    problems = []
    for key, expected in (("vs_fp16_ci95_pct", None), ("n_pairs", None), ("verdict", None)):
        if res.get(key) != expected:
            problems.append(f"$.results.{key}: {res.get(key)!r}, but FP16 alone has no pairs")
    if res.get("pairs"):
        problems.append("$.results.pairs: present, but FP16 alone has no pairs")
    for key in ("vs_fp16_energy_pct", DELTA_3DP):
        if _number(res.get(key)) not in (0.0, None):
            problems.append(f"$.results.{key}: {res.get(key)!r}, but FP16 vs itself is 0")
    return problems


def _pairs(
    doc: Mapping[str, Any],
    res: Mapping[str, Any],
    trials: Sequence[Mapping[str, Any]],
    precision: str,
) -> list[str]:
    """Pairs from the trials of the same round; the delta, interval and verdict from them."""
    problems: list[str] = []
    fp16 = {t["pair"]: t for t in trials if t.get("format") == FP16 and _is_index(t.get("pair"))}
    quant = {
        t["pair"]: t for t in trials if t.get("format") == precision and _is_index(t.get("pair"))
    }
    common = sorted(k for k in fp16 if k in quant)
    pairs = [p for p in res.get("pairs") or [] if isinstance(p, Mapping)]
    listed = [p.get("pair") for p in pairs]
    if listed != common:
        problems.append(f"$.results.pairs: pairs {listed}, but the trials pair up as {common}")
        return problems
    n_pairs = res.get("n_pairs")
    if n_pairs != len(pairs):
        problems.append(
            f"$.results.n_pairs: {n_pairs!r}, but the report holds {len(pairs)} pair(s)"
        )
    deltas: list[float] = []
    for k, (p, key) in enumerate(zip(pairs, common, strict=True)):
        problems += _one_pair(f"$.results.pairs[{k}]", p, fp16[key], quant[key])
        d = _number(p.get("delta_pct"))
        if d is not None:
            deltas.append(d)
    if problems or len(deltas) != len(pairs) or not deltas:
        return problems
    return _estimate(doc, res, deltas)


def _is_index(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _one_pair(
    where: str, p: Mapping[str, Any], f_trial: Mapping[str, Any], q_trial: Mapping[str, Any]
) -> list[str]:
    problems = []
    f, q = _number(p.get("fp16_energy_per_token_mj")), _number(p.get("energy_per_token_mj"))
    for key, value, trial in (
        ("fp16_energy_per_token_mj", f, f_trial),
        ("energy_per_token_mj", q, q_trial),
    ):
        source = _number(trial.get("energy_per_token_mj"))
        if value is None or source is None or not _close(value, source, 0.0):
            problems.append(f"{where}.{key}: {value!r}, but its trial says {source!r}")
    d = _number(p.get("delta_pct"))
    if f is None or q is None or d is None or problems:
        return problems
    if f <= HALF_MJ:
        return [f"{where}.fp16_energy_per_token_mj: {f:g}, too small to compare against"]
    low, high = _pct_range(q, f, HALF_MJ)
    if not low - HALF_PCT - _SLACK <= d <= high + HALF_PCT + _SLACK:
        problems.append(
            f"{where}.delta_pct: {d:g}%, but its energies ({q:g} vs FP16 {f:g} mJ/token) "
            f"give {100 * (q / f - 1):.3f}%"
        )
    return problems


def _estimate(doc: Mapping[str, Any], res: Mapping[str, Any], deltas: Sequence[float]) -> list[str]:
    """The mean delta, interval and verdict, recomputed from the pairs' (rounded) deltas
    with the writer's own estimator (stats.estimate_delta)."""
    problems = []
    n = len(deltas)
    estimate = estimate_delta(deltas)
    for key, half in delta_fields(doc):  # the pairs' deltas are rounded too
        mean = _number(res.get(key))
        if mean is None or not _close(mean, estimate.mean_pct, half + HALF_PCT):
            problems.append(
                f"$.results.{key}: {mean!r}, but the mean of its pairs is {estimate.mean_pct:.3f}%"
            )
    ci = res.get("vs_fp16_ci95_pct")
    verdict = res.get("verdict")
    if estimate.ci95_pct is None:
        if ci is not None:
            problems.append(f"$.results.vs_fp16_ci95_pct: {ci}, but one pair has no interval")
        if verdict != "inconclusive":
            problems.append(f"$.results.verdict: {verdict!r}, but one pair is inconclusive")
        return problems
    # Each pair's delta is rounded (+-HALF_PCT): the mean moves by at most that, the
    # half-width by t * HALF_PCT / sqrt(n - 1) (the sample sd is 1-Lipschitz in the
    # deltas' L2 norm over sqrt(n - 1)); the bounds themselves are rounded too.
    tolerance = HALF_PCT * (2.0 + t_quantile(0.975, n - 1) / math.sqrt(n - 1))
    if not (isinstance(ci, list) and len(ci) == 2 and all(_number(x) is not None for x in ci)):
        problems.append(f"$.results.vs_fp16_ci95_pct: {ci!r}, but {n} pairs have an interval")
        return problems
    lo, hi = float(ci[0]), float(ci[1])
    want_lo, want_hi = estimate.ci95_pct
    if not (_close(lo, want_lo, tolerance) and _close(hi, want_hi, tolerance)):
        problems.append(
            f"$.results.vs_fp16_ci95_pct: [{lo:g}, {hi:g}], but its pairs give "
            f"[{want_lo:.3f}, {want_hi:.3f}]"
        )
        return problems
    # the writer decides the verdict on the unrounded bounds: near 0 either side may hold
    possible = {
        verdict_for((lo + a, hi + b))
        for a in (-tolerance, 0.0, tolerance)
        for b in (-tolerance, 0.0, tolerance)
    }
    if verdict not in possible:
        problems.append(
            f"$.results.verdict: {verdict!r}, but its interval [{lo:g}, {hi:g}] says "
            f"{verdict_for((lo, hi))!r}"
        )
    return problems
