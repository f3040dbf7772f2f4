"""energy_estimate as a plain function, and the one place that decides measured or
published: the measured path either returns a measurement or raises CannotMeasure with
its reason, and then the published path answers, labelled with that reason."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence

from ecocompute.boundary.progress import Progress
from ecocompute.errors import CannotMeasure, InputError
from ecocompute.llm.synthetic import PRESETS, is_synthetic, preset_for
from ecocompute.params import RunParams
from ecocompute.task.hardware import Hardware
from ecocompute.task.machine import Machine, this_machine
from ecocompute.task.measured_path import measure
from ecocompute.task.outcome import MeasuredRun
from ecocompute.task.published_path import FallbackReason, PublishedRun, published_run

Outcome = MeasuredRun | PublishedRun


def run_energy_estimate(
    params: RunParams, progress: Progress, *, machine: Machine | None = None
) -> Outcome:
    """Measure on this machine's GPU(s), or derive the published figure where that cannot
    be done. Raises InputError (bad input) or RunError (a measurement that started and
    failed in a way the published figure must not hide, e.g. out of memory)."""
    check_model_name(params.model_name)
    try:
        return measure(params, progress, machine or this_machine())
    except CannotMeasure as exc:
        progress(f"published path: {exc.reason}")
        hardware = exc.hardware if isinstance(exc.hardware, Hardware) else Hardware()
        return _published(params, FallbackReason(exc.code, exc.reason), hardware)


def _published(params: RunParams, reason: FallbackReason, hardware: Hardware) -> PublishedRun:
    """The one call that makes a published-path outcome."""
    return published_run(params, reason, hardware)


def run_session(
    params: RunParams, progress: Progress, *, machine: Machine | None = None
) -> list[Outcome]:
    """energy_estimate for every format of the run: one outcome per quantized format
    (one for FP16 alone), in the order given. A session of several formats measures
    them together against one FP16 baseline; on the published path each format gets
    its own published figure (or none, labelled), never another format's. A format the
    measured session's regime refused has no outcome (session.refused says why)."""
    outcome = run_energy_estimate(params, progress, machine=machine)
    if len(params.session_formats) < 2:
        return [outcome]
    if isinstance(outcome, MeasuredRun):
        refused = outcome.session.refused if outcome.session else {}
        return [
            outcome.for_format(f)
            for f in params.session_formats
            if params.spec(f).key not in refused
        ]
    return [
        _published(
            dataclasses.replace(params, precision=f, formats=()), outcome.reason, outcome.hardware
        )
        for f in params.session_formats
    ]


def session_refusals(outcomes: Sequence[Outcome]) -> Mapping[str, str]:
    """The formats a measured session's regime refused, and why (run_session gave them
    no outcome); none for the published path."""
    session = outcomes[0].session if isinstance(outcomes[0], MeasuredRun) else None
    return session.refused if session is not None else {}


def check_model_name(model_name: str) -> None:
    """A synthetic:<preset> must name a preset, whichever path answers. Raises
    InputError listing the presets."""
    if not is_synthetic(model_name):
        return
    try:
        preset_for(model_name)
    except KeyError:
        presets = ", ".join(f"synthetic:{name}" for name in PRESETS)
        raise InputError(
            "model_name", model_name, f"unknown synthetic preset; presets: {presets}"
        ) from None


def arch_before_run(params: RunParams, machine: Machine | None = None) -> str:
    """The arch class the run will answer for, known before it starts (--prefetch asks
    the site with it): the class given; on a dry run or without NVML, the published
    headline card's (as the published path takes it); else the class of the first
    GPU's NVML name. Opens NVML only to read the name, outside every window."""
    from ecocompute.errors import TelemetryUnavailable
    from ecocompute.published.archs import arch_from_product_name, normalise_arch_choice
    from ecocompute.published.reference_data import headline

    arch, _ = normalise_arch_choice(params.gpu_arch)
    if arch != "auto":
        return arch
    if params.dry_run:
        return headline()["arch"]
    try:
        telemetry = (machine or this_machine()).open_telemetry()
    except TelemetryUnavailable:
        return headline()["arch"]
    try:
        devices = telemetry.devices()
        return arch_from_product_name(devices[0].name) if devices else headline()["arch"]
    finally:
        telemetry.close()
