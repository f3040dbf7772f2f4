"""`ecocompute sweep`: one energy_estimate per model and format, then a fit of the
published curve's form to this card's own measured points, and the crossover size.

Layout under the output folder:
  <model-slug>-<precision>/energy.json   one report per run (the full record)
  sweep.json                             the summary (schema/sweep.schema.json)
  sweep.png                              the plot (with the fit), when matplotlib exists

Only measured points are fitted: a report derived from the published dataset (a
--dry_run, or a run that fell back) is the published curve itself, so fitting it would
be circular; such a sweep says the fit was skipped and why. `--fit_only` reads the
reports already under the output folder (e.g. written by two sweeps run side by side
on two GPUs) and fits those without running anything.
"""

from __future__ import annotations

import dataclasses
import gc
import re
import sys
from collections.abc import Mapping, Sequence
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ecocompute import __version__
from ecocompute.errors import EcoComputeError, InputError, ReportInvalid, RunError
from ecocompute.estimate.machine import Machine
from ecocompute.params import RunParams, resolve
from ecocompute.printing import print_after_write
from ecocompute.progress import Progress, quiet_library_progress_bars
from ecocompute.published.figures import anchors_for, curve_for
from ecocompute.report.atomic import write_text_atomic
from ecocompute.report.build import SCOPE, utc_now
from ecocompute.report.checks import sweep_problems
from ecocompute.report.job import ReportJob
from ecocompute.report.labels import card_with_arch
from ecocompute.report.numbers import dumps_strict
from ecocompute.report.schema import SWEEP_SCHEMA_VERSION
from ecocompute.report.write import REPORT_NAME
from ecocompute.results.collect import Report, read_one, read_reports
from ecocompute.results.curvefit import Point, crossover_of, fit_points, se_from_ci
from ecocompute.results.records import new_record, run_fields, written_record
from ecocompute.results.records import relative as _relative
from ecocompute.user_paths import check_creatable

if TYPE_CHECKING:
    from ecocompute.results.fleet import FleetOptions  # imports Dask only when it runs

SWEEP_NAME = "sweep.json"
PLOT_NAME = "sweep.png"
SWEEP_FORMATS = ("NF4", "INT8")


def slug(model_name: str, precision: str) -> str:
    """A folder name for one run: synthetic:qwen2.5-0.5b + NF4 -> synthetic-qwen2.5-0.5b-NF4."""
    text = re.sub(r"[^A-Za-z0-9._-]+", "-", model_name.strip()).strip("-.") or "model"
    return f"{text}-{precision}"


def split_list(field: str, text: str | None) -> list[str]:
    items = [item.strip() for item in (text or "").split(",") if item.strip()]
    if not items:
        raise InputError(field, text, "give a comma-separated list, e.g. A,B,C")
    if len(set(items)) != len(items):
        raise InputError(field, text, "lists an item twice")
    return items


@dataclasses.dataclass(frozen=True)
class Plan:
    output_dir: Path
    runs: tuple[RunParams, ...]


def plan(
    models: Sequence[str],
    precisions: Sequence[str],
    flags: Mapping[str, object],
    output_dir: str,
    parameters_file: str | None = None,
) -> Plan:
    """Every run's parameters, validated before anything runs. Raises InputError."""
    formats = [p.upper() for p in precisions]
    if len(set(formats)) != len(formats):  # "NF4,nf4": one folder, written twice
        raise InputError("precisions", ",".join(precisions), "lists a format twice")
    for fmt in formats:
        if fmt not in SWEEP_FORMATS:
            raise InputError(
                "precisions",
                fmt,
                "allowed: " + ", ".join(SWEEP_FORMATS) + " (FP16 is every run's baseline)",
            )
    out = Path(output_dir)
    folders: dict[str, str] = {}
    for model in models:
        folder = slug(model, "").lower()
        if folder in folders:
            raise InputError(
                "models",
                model,
                f"would write into the same folder as '{folders[folder]}' "
                f"({slug(model, formats[0])}); name each model so that its folder differs",
            )
        folders[folder] = model
        for fmt in formats:  # a folder name longer than the file system allows: refused now
            check_creatable("models", out / slug(model, fmt), room=64)
    runs = []
    for model in models:
        for fmt in formats:
            values = {
                **flags,
                "model_name": model,
                "precision": fmt,
                "output_dir": str(out / slug(model, fmt)),
            }
            runs.append(resolve(parameters_file, values))
    return Plan(out, tuple(runs))


def missing_fit_stack() -> list[str]:
    return [name for name in ("numpy", "scipy", "matplotlib") if find_spec(name) is None]


def run_sweep(
    the_plan: Plan,
    progress: Progress,
    *,
    machine: Machine | None = None,
    command: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Run and write every report (each through report.job, as energy_estimate does);
    a run that fails is recorded and the sweep goes on. machine: the real one unless a
    test hands in stand-ins."""
    records = []
    total = len(the_plan.runs)
    for i, params in enumerate(the_plan.runs, 1):
        progress(
            f"sweep {i}/{total}: {params.model_name} {params.precision} -> {params.output_dir}"
        )
        record = new_record(params)
        try:
            written = ReportJob(params).run(
                Progress(params.quiet), machine=machine, command=command
            )
        except EcoComputeError as exc:  # this run failed; the others still answer
            record["error"] = str(exc)
            progress(f"sweep {i}/{total}: {params.model_name} {params.precision} FAILED: {exc}")
        else:
            record.update(
                run_fields(written_record(written.path, written.report), the_plan.output_dir)
            )
            record["status"] = "ok"
        finally:
            _free_device_memory()
        records.append(record)
    return records


def _free_device_memory() -> None:
    """Drop the last run's models before the next loads (torch only if already loaded)."""
    gc.collect()
    torch = sys.modules.get("torch")
    if torch is not None and torch.cuda.is_available():
        torch.cuda.empty_cache()


def existing_records(
    output_dir: Path, sources: Sequence[str] | None = None
) -> tuple[list[dict[str, Any]], list[str]]:
    """For --fit_only: the reports under sources (default: under output_dir), as run
    records."""
    reports, invalid = read_reports(list(sources) if sources else [output_dir])
    records = [
        {
            "model_name": r.model,
            "precision": r.precision,
            "status": "ok",
            "error": None,
            **run_fields(r, output_dir),
        }
        for r in reports
    ]
    skipped = [f"{bad.path}: {bad.problems[0]}" for bad in invalid]
    return records, skipped


def _published_curve(arch: str | None, precision: str) -> dict[str, Any] | None:
    if arch is None:
        return None
    curve = curve_for(arch, precision)
    if curve is None:
        return {
            "arch": arch,
            "note": f"the published dataset has no {precision} curve for {arch}",
        }
    anchors = anchors_for(curve.arch)
    cross = crossover_of(curve.a_pct, curve.s_pct, curve.nstar_b)
    out: dict[str, Any] = {
        "arch": curve.arch,
        "card": anchors.card if anchors else None,
        "A": curve.a_pct,
        "S": curve.s_pct,
        "Nstar": curve.nstar_b,
        "fitted_range_b": list(curve.fitted_range_b),
        "crossover_b": None if cross is None else round(cross, 4),
        "borrowed_for": arch if curve.borrowed_from else None,
    }
    if curve.borrowed_from:
        out["note"] = (
            f"{arch} has no published curve; this is {curve.arch}'s, borrowed, so it is not "
            f"a measurement of {arch}"
        )
    if cross is None:
        out["crossover_note"] = "the published curve never crosses zero"
    return out


def _one_of(values: set[str], what: str) -> str | None:
    if len(values) > 1:
        raise InputError(
            what,
            None,
            f"the measured reports disagree ({'; '.join(sorted(values))}); a sweep fits one "
            "card, one software stack and one protocol: fit them separately",
        )
    return next(iter(values), None)


def summarise(
    records: list[dict[str, Any]],
    output_dir: Path,
    *,
    command: list[str] | None = None,
    n_boot: int | None = None,
) -> tuple[dict[str, Any], list[Report]]:
    """The sweep document (not yet written) and the reports it was built from."""
    reports = []
    for rec in records:
        if rec["status"] == "ok" and rec["report"]:
            one = read_one(output_dir / rec["report"])
            if isinstance(one, Report):
                reports.append(one)
    measured = [r for r in reports if r.measured and r.quantized]
    card = _one_of({r.card for r in measured}, "card")
    software = _one_of({r.fingerprint for r in measured}, "software")
    protocol = _one_of({r.protocol for r in measured}, "protocol")
    arch = measured[0].arch if measured else (reports[0].arch if reports else None)
    if not measured and reports:
        card = reports[0].card

    missing = missing_fit_stack()
    formats = sorted({r.precision for r in reports if r.quantized}, key=SWEEP_FORMATS.index)
    fits = [_fit_entry(fmt, reports, output_dir, arch, missing, n_boot) for fmt in formats]

    doc: dict[str, Any] = {
        "schema_version": SWEEP_SCHEMA_VERSION,
        "timestamp_utc": utc_now(),
        "tool": f"ecocompute {__version__}",
        **({"command": command} if command else {}),
        "card": card,
        "gpu_arch": arch,
        "software": software,
        "protocol": protocol,
        "scope": SCOPE,
        "runs": records,
        "fits": fits,
        "plot": None,
    }
    return doc, reports


def _fit_entry(
    fmt: str,
    reports: Sequence[Report],
    output_dir: Path,
    arch: str | None,
    missing: Sequence[str],
    n_boot: int | None,
) -> dict[str, Any]:
    """One format's fit over the measured reports (or why it was skipped)."""
    ours = [r for r in reports if r.precision == fmt]
    used = [r for r in ours if r.measured and r.delta_pct is not None and r.params_b]
    left_out = [
        f"{r.model} (illustrative: the report says it is not a real measurement)"
        if r.kind == "illustrative"
        else f"{r.model} ({r.basis}: derived from the published dataset, not measured)"
        for r in ours
        if not r.measured
    ]
    points = [
        Point(
            float(r.params_b or 0.0),
            float(r.delta_pct or 0.0),
            se_from_ci(r.ci95_pct, r.n_pairs),
            r.model,
        )
        for r in used
    ]
    entry: dict[str, Any] = {
        "precision": fmt,
        "points": [
            {
                "model_name": r.model,
                "params_b": p.params_b,
                "delta_pct": p.delta_pct,
                "se_pct": None if p.se_pct is None else round(p.se_pct, 4),
                "ci95_pct": list(r.ci95_pct) if r.ci95_pct else None,
                "report": _relative(r.path, output_dir),
            }
            for r, p in zip(used, points, strict=True)
        ],
        "left_out": left_out,
    }
    if not used and left_out:
        entry.update(
            status="skipped",
            reason="every point is derived from the published curve (published path), "
            "not measured: fitting them would only give back the published curve"
            if all(r.kind == "derived" for r in ours)
            else "no point is a measurement (derived or illustrative): nothing to fit",
        )
    elif "scipy" in missing or "numpy" in missing:
        entry.update(
            status="skipped",
            reason="the fit needs numpy and scipy: pip install 'ecocompute[plot]', then "
            "run `ecocompute sweep --fit_only --output_dir` on this folder",
        )
    else:
        entry.update(fit_points(points, **({} if n_boot is None else {"n_boot": n_boot})))
    entry["published_curve"] = _published_curve(arch, fmt)
    return entry


def write_sweep(doc: dict[str, Any], output_dir: Path) -> Path:
    """Validate (schema, finite numbers: no NaN in a fit), then write atomically."""
    problems = sweep_problems(doc)
    if problems:
        raise ReportInvalid(problems)
    return write_text_atomic(output_dir / SWEEP_NAME, dumps_strict(doc, indent=2) + "\n")


def add_plot(doc: dict[str, Any], reports: list[Report], output_dir: Path, name: str) -> None:
    """Draw the sweep's plot into doc["plot"]; a missing matplotlib or nothing to plot
    is a note, not a failure (the numbers are in sweep.json)."""
    if "matplotlib" in missing_fit_stack():
        doc["plot_note"] = "no plot: matplotlib is not installed (pip install 'ecocompute[plot]')"
        return
    from ecocompute.results.plot import plot_reports

    fits = {f["precision"]: f for f in doc["fits"] if f.get("status") == "fitted"}
    try:
        path = plot_reports(reports, output_dir / name, fits=fits)
    except InputError as exc:
        doc["plot_note"] = f"no plot: {exc}"
        return
    doc["plot"] = _relative(path, output_dir)


def _card_text(doc: dict[str, Any]) -> str:
    return card_with_arch(doc["card"] or "no card", doc["gpu_arch"])


def render(doc: dict[str, Any], path: Path) -> str:
    """The human summary on stdout, from the document itself."""
    lines = [
        f"EcoCompute sweep: {_card_text(doc)}"
        + (f", {doc['software']}" if doc["software"] else "")
        + (f", {doc['protocol']}" if doc["protocol"] else ""),
        f"  {'model':<30} {'size B':>7} {'fmt':<4} {'vs FP16':>8} {'95% CI':>17}  "
        f"{'verdict':<12} basis",
    ]
    for run in doc["runs"]:
        if run["status"] != "ok":
            lines.append(
                f"  {run['model_name']:<30} {'':>7} {run['precision']:<4} FAILED: {run['error']}"
            )
            continue
        ci = run.get("vs_fp16_ci95_pct")
        ci_text = f"{ci[0]:+.1f} .. {ci[1]:+.1f}%" if ci else "-"
        delta = run.get("vs_fp16_energy_pct")
        size = run.get("params_b")
        lines.append(
            f"  {run['model_name'][:30]:<30} {'-' if size is None else format(size, '.3g'):>7} "
            f"{run['precision']:<4} {'-' if delta is None else format(delta, '+.1f') + '%':>8} "
            f"{ci_text:>17}  {run.get('verdict') or '-':<12} {run.get('basis')}"
        )
    for fit in doc["fits"]:
        fmt = fit["precision"]
        if fit["status"] != "fitted":
            lines.append(f"  {fmt} fit: skipped: {fit['reason']}")
        else:
            p = fit["parameters"]
            lines.append(
                f"  {fmt} fit: A={p['A']:.2f}, S={p['S']:.2f}, N*={p['Nstar']:.4g}B over "
                f"{fit['n_points']} points (dof {fit['dof']}; {fit['weighting']})"
            )
            cross = fit["crossover"]
            ci = cross.get("ci95_b")
            ci_text = (
                "95% CI " + " .. ".join("beyond" if v is None else f"{v:.3g}B" for v in ci)
                if ci
                else (cross.get("ci_note") or "no interval")
            )
            if cross["params_b"] is not None:
                lines.append(
                    f"  {fmt} crossover: {cross['params_b']:.3g}B ({cross['status']}); {ci_text}"
                )
            else:
                lines.append(f"  {fmt} crossover: {cross['note']}; {ci_text}")
            for note in fit["notes"]:
                lines.append(f"    note: {note}")
        pub = fit.get("published_curve") or {}
        if pub.get("note"):
            lines.append(f"  published: {pub['note']}")
    lines.append(f"  sweep      {path}")
    lines.append(
        f"  plot       {path.parent / doc['plot']}"
        if doc["plot"]
        else f"  plot       {doc.get('plot_note', 'none')}"
    )
    return "\n".join(lines)


def _run_on_fleet(
    the_plan: Plan,
    fleet: FleetOptions,
    progress: Progress,
    command: list[str] | None,
    n_boot: int | None,
) -> list[dict[str, Any]]:
    """The fleet's records; on Ctrl-C / SIGTERM, sweep.json with what finished (no plot),
    then the interrupt again (exit 130 / 143)."""
    from ecocompute.results.fleet import FleetInterrupted, run_fleet

    try:
        return run_fleet(the_plan.output_dir, the_plan.runs, fleet, progress)
    except FleetInterrupted as stop:
        kept = sum(r["status"] == "ok" for r in stop.records)
        try:
            doc, _ = summarise(stop.records, the_plan.output_dir, command=command, n_boot=n_boot)
            doc["plot_note"] = "no plot: the sweep was interrupted"
            written = f"; {write_sweep(doc, the_plan.output_dir)}"
        except EcoComputeError as exc:  # the interrupt is what the exit status must say
            written = f"; no {SWEEP_NAME}: {exc}"
        progress(f"sweep interrupted: {kept} of {len(stop.records)} point(s) finished{written}")
        raise stop.interrupt from None


def sweep(
    models: Sequence[str] | None,
    precisions: Sequence[str],
    flags: Mapping[str, object],
    output_dir: str,
    *,
    parameters_file: str | None = None,
    fit_only: bool = False,
    progress: Progress | None = None,
    command: list[str] | None = None,
    machine: Machine | None = None,
    n_boot: int | None = None,
    out: Any = None,
    fleet: FleetOptions | None = None,
    reports_from: Sequence[str] | None = None,
) -> int:
    """The whole command: run (unless fit_only), fit, plot, write sweep.json, summarise.
    Returns 0, or 3 when sweep.json was written but its summary could not be printed;
    raises RunError (exit 1) when a run failed (sweep.json is written either way).
    fleet: run the points on Dask workers (results/fleet.py) instead of one after
    another here; on Ctrl-C it writes sweep.json with the finished and cancelled
    points, then re-raises."""
    from ecocompute.params import check_output_dir

    if flags.get("quiet"):
        quiet_library_progress_bars()
    progress = progress or Progress(bool(flags.get("quiet")))
    root = check_output_dir(output_dir)
    missing = missing_fit_stack()
    if missing:
        progress(
            f"{', '.join(missing)} not installed: the fit and/or plot will be skipped "
            "(pip install 'ecocompute[plot]'; `sweep --fit_only` can fit later)"
        )
    if fit_only:
        if not root.is_dir() and not reports_from:
            raise InputError("output_dir", output_dir, "does not exist; nothing to fit")
        root.mkdir(parents=True, exist_ok=True)
        records, skipped = existing_records(root, reports_from)
        for line in skipped:
            progress(f"skipped invalid report {line}")
        if not records:
            raise InputError("output_dir", output_dir, f"holds no valid {REPORT_NAME} to fit")
    else:
        the_plan = plan(
            split_list("models", ",".join(models or [])),
            precisions,
            flags,
            output_dir,
            parameters_file,
        )
        if fleet is None:
            records = run_sweep(the_plan, progress, machine=machine, command=command)
        else:
            records = _run_on_fleet(the_plan, fleet, progress, command, n_boot)
    doc, reports = summarise(records, root, command=command, n_boot=n_boot)
    add_plot(doc, reports, root, PLOT_NAME)
    text = render(doc, root / SWEEP_NAME)  # rendered before the write: only printing after
    path = write_sweep(doc, root)
    status = print_after_write(text, [str(path)], out)
    if status:
        return status
    failed = [r for r in records if r["status"] != "ok"]
    if failed:
        raise RunError(
            f"{len(failed)} of {len(records)} run(s) failed (see {path}); the others were fitted"
        )
    return 0
