"""`ecocompute sweep`: one energy_estimate per model and format, then a fit of the
published curve's form to this card's own measured points, and the crossover size.

Layout under the output folder (one point is one session: a model at one batch size,
every format asked for against one FP16 baseline):
  <model-slug>-<precision>/energy.json   one format: one report per point
  <model-slug>/<format>/energy.json      several formats: one session, a report each
  ...-b<batch>                           with --batch_sizes, each batch size's point
  sweep.json                             the summary (schema/sweep.schema.json)
  sweep.png                              the plot (with the fit), when matplotlib exists

With --batch_sizes the points of one model share its loaded models (results/resident.py)
and the summary adds the batch axis: per format, the delta against the batch size and
the batch size where it crosses zero (results/batch_axis.py), and the map in words.

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
import time
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
from ecocompute.report.session_job import SessionJob
from ecocompute.report.write import REPORT_NAME
from ecocompute.results.batch_axis import BatchPoint, axis_entry
from ecocompute.results.collect import Report, read_one, read_reports
from ecocompute.results.curvefit import Point, crossover_of, fit_points, se_from_ci
from ecocompute.results.records import new_record, run_fields, written_record
from ecocompute.results.records import relative as _relative
from ecocompute.results.resident import ResidentModels
from ecocompute.user_paths import check_creatable

if TYPE_CHECKING:
    from ecocompute.results.fleet import FleetOptions  # imports Dask only when it runs

SWEEP_NAME = "sweep.json"
PLOT_NAME = "sweep.png"
SWEEP_FORMATS = ("NF4", "INT8", "INT4", "FP8")


def model_slug(model_name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", model_name.strip()).strip("-.") or "model"


def slug(model_name: str, precision: str) -> str:
    """A folder name for one run: synthetic:qwen2.5-0.5b + NF4 -> synthetic-qwen2.5-0.5b-NF4."""
    return f"{model_slug(model_name)}-{precision}"


def point_folder(model_name: str, formats: Sequence[str], batch_size: int | None) -> str:
    """A point's folder: <model>-<format> for one format, <model> for a session of
    several (a subfolder per format), with -b<batch> on a batch axis."""
    name = slug(model_name, formats[0]) if len(formats) == 1 else model_slug(model_name)
    return name if batch_size is None else f"{name}-b{batch_size}"


def split_batches(text: str | None) -> list[int] | None:
    """--batch_sizes 1,4,16,64: whole numbers >= 1, each once, in increasing order."""
    if text is None:
        return None
    items = split_list("batch_sizes", text)
    sizes = []
    for item in items:
        if not item.isdigit() or int(item) < 1 or len(item) > 6:
            raise InputError("batch_sizes", text, "give whole numbers >= 1, e.g. 1,4,16,64")
        sizes.append(int(item))
    if sizes != sorted(sizes):
        raise InputError("batch_sizes", text, "give the batch sizes in increasing order")
    return sizes


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
    runs: tuple[RunParams, ...]  # one per point (a session of its formats)
    batch_axis: bool = False  # several batch sizes


def plan(
    models: Sequence[str],
    precisions: Sequence[str],
    flags: Mapping[str, object],
    output_dir: str,
    parameters_file: str | None = None,
    *,
    batch_sizes: Sequence[int] | None = None,
    sessions: bool = True,
) -> Plan:
    """Every point's parameters, validated before anything runs. Raises InputError.
    sessions False (the fleet, which spreads points over GPUs): one point per format."""
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
    if batch_sizes is not None and "batch_size" in {k for k, v in flags.items() if v is not None}:
        raise InputError("batch_size", flags["batch_size"], "give --batch_sizes or --batch_size")
    groups = [formats] if sessions else [[fmt] for fmt in formats]
    batches: list[int | None] = list(batch_sizes) if batch_sizes else [None]
    out = Path(output_dir)
    folders: dict[str, str] = {}
    for model in models:
        folder = model_slug(model).lower()
        if folder in folders:
            raise InputError(
                "models",
                model,
                f"would write into the same folder as '{folders[folder]}' "
                f"({slug(model, formats[0])}); name each model so that its folder differs",
            )
        folders[folder] = model
        for group in groups:  # a folder name longer than the file system allows: now
            for batch in batches:
                check_creatable("models", out / point_folder(model, group, batch), room=64)
    runs = []
    for model in models:
        for batch in batches:
            for group in groups:
                # one format of several on the fleet: the folder its session would use
                target = (
                    out / point_folder(model, formats, batch) / group[0]
                    if len(group) < len(formats)
                    else out / point_folder(model, group, batch)
                )
                values = {
                    **flags,
                    "model_name": model,
                    "precision": ",".join(group),
                    "output_dir": str(target),
                    **({} if batch is None else {"batch_size": batch}),
                }
                runs.append(resolve(parameters_file, values))
    return Plan(out, tuple(runs), batch_sizes is not None and len(batch_sizes) > 1)


def missing_fit_stack() -> list[str]:
    return [name for name in ("numpy", "scipy", "matplotlib") if find_spec(name) is None]


def run_sweep(
    the_plan: Plan,
    progress: Progress,
    *,
    machine: Machine | None = None,
    command: list[str] | None = None,
) -> list[dict[str, Any]]:
    """Run and write every point's reports (through report.job / report.session_job, as
    energy_estimate does); a point that fails is recorded and the sweep goes on. The
    points of one model share its loaded models. machine: the real one unless a test
    hands in stand-ins."""
    from ecocompute.estimate import run as estimate_run  # this_machine, at call time

    base = machine or estimate_run.this_machine()
    resident = ResidentModels(base.backend)
    shared = dataclasses.replace(base, backend=resident)
    records: list[dict[str, Any]] = []
    total = len(the_plan.runs)
    try:
        for i, params in enumerate(the_plan.runs, 1):
            formats = ",".join(map(str, params.session_formats)) or str(params.precision)
            progress(
                f"sweep {i}/{total}: {params.model_name} {formats} batch {params.batch_size} "
                f"-> {params.output_dir}"
            )
            records += _run_point(params, shared, command, the_plan.output_dir, progress, i, total)
            _free_device_memory()
    finally:
        resident.clear()
        _free_device_memory()
    return records


def _run_point(
    params: RunParams,
    machine: Machine,
    command: list[str] | None,
    root: Path,
    progress: Progress,
    i: int,
    total: int,
) -> list[dict[str, Any]]:
    """One point's records, one per format (each failed, with why, if the point failed)."""
    singles = [
        dataclasses.replace(params, precision=f, formats=()) for f in params.session_formats
    ] or [params]
    records = [new_record(p) for p in singles]
    started = time.monotonic()
    try:
        if len(singles) > 1:
            written = list(
                SessionJob(params)
                .run(Progress(params.quiet), machine=machine, command=command)
                .reports
            )
        else:
            one = ReportJob(params).run(Progress(params.quiet), machine=machine, command=command)
            written = [one]
    except EcoComputeError as exc:  # this point failed; the others still answer
        for record in records:
            record["error"] = str(exc)
        progress(f"sweep {i}/{total}: {params.model_name} FAILED: {exc}")
        return records
    elapsed = round(time.monotonic() - started, 2)
    for record, w in zip(records, written, strict=True):
        record.update(run_fields(written_record(w.path, w.report), root))
        record["status"] = "ok"
        record["elapsed_s"] = elapsed
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
    batches = sorted({_batch(r) for r in reports})
    card = _one_of({r.card for r in measured}, "card")
    software = _one_of({r.fingerprint for r in measured}, "software")
    protocol = _one_of({_across_batches(r.protocol, batches) for r in measured}, "protocol")
    arch = measured[0].arch if measured else (reports[0].arch if reports else None)
    if not measured and reports:
        card = reports[0].card

    missing = missing_fit_stack()
    formats = sorted({r.precision for r in reports if r.quantized}, key=SWEEP_FORMATS.index)
    if len(batches) > 1:
        fits = [_skipped_fit(fmt, arch, batches) for fmt in formats]
    else:
        fits = [_fit_entry(fmt, reports, output_dir, arch, missing, n_boot) for fmt in formats]
    axis = batch_axis(reports, output_dir, formats, n_boot) if len(batches) > 1 else []

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
    if axis:
        doc["batch_axis"] = axis
        doc["map"] = [entry["map"] for entry in axis]
    return doc, reports


def _batch(r: Report) -> int:
    return r.batch_size


def _across_batches(protocol: str, batches: Sequence[int]) -> str:
    """The protocol with the batch size left out where the sweep has a batch axis."""
    if len(batches) < 2:
        return protocol
    return re.sub(r"batch \d+", "batch " + ",".join(map(str, batches)), protocol)


def _skipped_fit(fmt: str, arch: str | None, batches: Sequence[int]) -> dict[str, Any]:
    return {
        "precision": fmt,
        "points": [],
        "left_out": [],
        "status": "skipped",
        "reason": f"the sweep has a batch axis ({', '.join(map(str, batches))}): the size "
        "curve is fitted at one batch size (sweep --fit_only --reports over one batch's "
        "reports); see batch_axis",
        "published_curve": _published_curve(arch, fmt),
    }


def batch_axis(
    reports: Sequence[Report], output_dir: Path, formats: Sequence[str], n_boot: int | None
) -> list[dict[str, Any]]:
    """Per model and format: the delta against the batch size, its crossover and the
    map in words. Only measured points (a derived figure does not depend on the batch)."""
    entries = []
    for model in dict.fromkeys(r.model for r in reports):
        for fmt in formats:
            points = [
                _batch_point(r, output_dir)
                for r in reports
                if r.model == model
                and r.precision == fmt
                and r.measured
                and r.delta_pct is not None
            ]
            if points:
                entries.append(axis_entry(model, fmt, points, n_boot))
    return entries


def _batch_point(r: Report, output_dir: Path) -> BatchPoint:
    return BatchPoint(
        batch_size=r.batch_size,
        delta_pct=float(r.delta_pct or 0.0),
        ci95_pct=r.ci95_pct,
        n_pairs=r.n_pairs,
        verdict=r.verdict,
        report=_relative(r.path, output_dir),
        throughput_tokens_per_s=r.throughput_tokens_per_s,
        fp16_throughput_tokens_per_s=r.fp16_throughput_tokens_per_s,
    )


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
        if doc.get("batch_axis"):
            from ecocompute.results.batch_plot import plot_batch_axis

            path = plot_batch_axis(doc, reports, output_dir / name)
        else:
            path = plot_reports(reports, output_dir / name, fits=fits)
    except InputError as exc:
        doc["plot_note"] = f"no plot: {exc}"
        return
    doc["plot"] = _relative(path, output_dir)


def _card_text(doc: dict[str, Any]) -> str:
    return card_with_arch(doc["card"] or "no card", doc["gpu_arch"])


def render(doc: dict[str, Any], path: Path) -> str:
    """The human summary on stdout, from the document itself."""
    axis = bool(doc.get("batch_axis"))
    lines = [
        f"EcoCompute sweep: {_card_text(doc)}"
        + (f", {doc['software']}" if doc["software"] else "")
        + (f", {doc['protocol']}" if doc["protocol"] else ""),
        f"  {'model':<30} {'batch' if axis else 'size B':>7} {'fmt':<4} {'vs FP16':>8} "
        f"{'95% CI':>17}  {'verdict':<12} basis",
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
        size = run.get("batch_size") if axis else run.get("params_b")
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
    lines.extend(_axis_lines(doc))
    lines.append(f"  sweep      {path}")
    lines.append(
        f"  plot       {path.parent / doc['plot']}"
        if doc["plot"]
        else f"  plot       {doc.get('plot_note', 'none')}"
    )
    return "\n".join(lines)


def _axis_lines(doc: dict[str, Any]) -> list[str]:
    """The batch axis: each format's crossover, then the map in words."""
    lines = []
    for entry in doc.get("batch_axis") or []:
        cross = entry["crossover"]
        where = (
            f"crosses zero at batch {cross['batch_size']:.3g}"
            if cross["batch_size"] is not None
            else (cross.get("note") or "no crossover")
        )
        ci = f" (95% CI {cross['ci95_text']})" if cross.get("ci95_text") else ""
        lines.append(f"  {entry['precision']:<4} {entry['model_name']}: {where}{ci}")
    if doc.get("map"):
        lines.append("  map        " + "; ".join(doc["map"]))
    return lines


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
    batch_sizes: Sequence[int] | None = None,
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
            batch_sizes=batch_sizes,
            sessions=fleet is None,  # the fleet spreads each format over its own GPU
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
