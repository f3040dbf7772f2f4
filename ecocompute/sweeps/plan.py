"""A sweep's plan: its points (one session per model and batch size, or per format on the
fleet), their folders, and the lists the command line gives, all validated before
anything runs."""

from __future__ import annotations

import dataclasses
import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path

from ecocompute.boundary.user_paths import check_creatable
from ecocompute.errors import InputError
from ecocompute.params import FIELDS, RunParams, resolve

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


def split_list(field: str, text: str | None) -> list[str]:
    items = [item.strip() for item in (text or "").split(",") if item.strip()]
    if not items:
        raise InputError(field, text, "give a comma-separated list, e.g. A,B,C")
    if len(set(items)) != len(items):
        raise InputError(field, text, "lists an item twice")
    return items


def names_list(field: str, value: object) -> list[str]:
    """models= or precisions= of the Python API: a list of names, or one text that the
    command line would split ("gpt-1b", "NF4,INT8"), never its letters one by one.
    Raises InputError."""
    if isinstance(value, str):
        return split_list(field, value)
    if not isinstance(value, Sequence) or not all(isinstance(v, str) for v in value):
        raise InputError(field, value, "give a list of names, e.g. ['NF4', 'INT8']")
    return split_list(field, ",".join(value))


@dataclasses.dataclass(frozen=True)
class _Axis:
    """A sweep's axis of whole numbers (batch sizes, prompt lengths) and its words."""

    field: str
    one: str  # "a batch size"
    many: str  # "the batch sizes"
    digits: int  # as many as the command line reads
    example: str  # as the command line writes them
    list_example: str  # as the Python API takes them

    @property
    def whole(self) -> str:
        return f"give whole numbers >= 1, e.g. {self.example}"


_BATCH_AXIS = _Axis("batch_sizes", "a batch size", "the batch sizes", 6, "1,4,16,64", "1,4,16,64")
_PROMPT_AXIS = _Axis(
    "prompt_tokens", "a prompt length", "the prompt lengths", 7, "128,1024,4096", "[128, 1024]"
)


def _checked_axis(axis: _Axis, value: object) -> list[int]:
    """The command line's text (1,4,16) or the Python API's list: a non-empty list of
    whole numbers (not bools, not floats: 1.0 beside 1 is one value twice) from 1 to the
    axis's digits, each once, in increasing order. Raises InputError."""
    if isinstance(value, str):
        items = split_list(axis.field, value)
        if not all(
            item.isascii() and item.isdigit() and len(item) <= axis.digits for item in items
        ):
            raise InputError(axis.field, value, axis.whole)
        values = [int(item) for item in items]
    elif isinstance(value, Sequence) and value:
        values = list(value)
    else:
        raise InputError(
            axis.field, value, f"give a list of whole numbers >= 1, e.g. {axis.list_example}"
        )
    if not all(type(n) is int and 1 <= n < 10**axis.digits for n in values):
        raise InputError(axis.field, value, axis.whole)
    if len(set(values)) != len(values):
        raise InputError(axis.field, value, f"lists {axis.one} twice")
    if values != sorted(values):
        raise InputError(axis.field, value, f"give {axis.many} in increasing order")
    return values


def split_batches(value: object) -> list[int] | None:
    """--batch_sizes 1,4,16,64, or the Python API's list: whole numbers from 1 to 999999,
    each once, in increasing order; None where not given. Raises InputError."""
    return None if value is None else _checked_axis(_BATCH_AXIS, value)


def split_prompt_lengths(text: str | None) -> list[int] | None:
    """sweep --prompt_tokens 128,1024,4096: whole numbers >= 1, each once, increasing."""
    return None if text is None else _checked_axis(_PROMPT_AXIS, text)


def checked_prompt_lengths(value: object) -> list[int]:
    """Prompt lengths from the command line or the Python API (_checked_axis). Raises
    InputError."""
    return _checked_axis(_PROMPT_AXIS, value)


def prompt_folder(prompt_tokens: int) -> str:
    """The folder of one prompt length's points and its sweep.json: p128, p1024 ..."""
    return f"p{prompt_tokens}"


@dataclasses.dataclass(frozen=True)
class Plan:
    output_dir: Path
    runs: tuple[RunParams, ...]  # one per point (a session of its formats)


# What a sweep sets per point: every other run parameter is shared by all of them.
PER_POINT = ("model_name", "precision", "formats", "output_dir")


def options_of(params: RunParams | Mapping[str, object] | None) -> dict[str, object]:
    """The run parameters every point shares, as field values: those of a RunParams
    that differ from its defaults (a default is no choice, and so no conflict with
    batch_sizes), or the fields given. Raises InputError naming a field the sweep sets
    itself, or one that is not a run parameter."""
    if params is None:
        return {}
    if isinstance(params, RunParams):
        default = RunParams()
        values = {n: getattr(params, n) for n in FIELDS if n not in PER_POINT}
        return {n: v for n, v in values.items() if v != getattr(default, n)}
    for name in params:
        if name not in FIELDS or name in PER_POINT:
            why = "set per point by the sweep" if name in PER_POINT else "not a run parameter"
            raise InputError(name, params[name], why)
    return dict(params)


def plan(
    models: Sequence[str] | str,
    precisions: Sequence[str] | str,
    options: Mapping[str, object],
    output_dir: str | os.PathLike[str],
    parameters_file: str | None = None,
    *,
    batch_sizes: Sequence[int] | None = None,
    sessions: bool = True,
) -> Plan:
    """Every point's parameters, validated before anything runs. options: the run
    parameters every point shares (options_of). Raises InputError. sessions False (the
    fleet, which spreads points over GPUs): one point per format."""
    models = names_list("models", models)
    formats = [p.upper() for p in names_list("precisions", precisions)]
    batch_sizes = split_batches(batch_sizes)
    if len(set(formats)) != len(formats):  # "NF4,nf4": one folder, written twice
        shown = precisions if isinstance(precisions, str) else ",".join(precisions)
        raise InputError("precisions", shown, "lists a format twice")
    for fmt in formats:
        if fmt not in SWEEP_FORMATS:
            raise InputError(
                "precisions",
                fmt,
                "allowed: " + ", ".join(SWEEP_FORMATS) + " (FP16 is every run's baseline)",
            )
    if batch_sizes is not None and options.get("batch_size") is not None:
        raise InputError("batch_size", options["batch_size"], "give --batch_sizes or --batch_size")
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
                    **options,
                    "model_name": model,
                    "precision": ",".join(group),
                    "output_dir": str(target),
                    **({} if batch is None else {"batch_size": batch}),
                }
                runs.append(resolve(parameters_file, values))
    return Plan(out, tuple(runs))


def compiles_ahead(the_plan: Plan) -> str | None:
    """What a compiled sweep of several points will compile, in a line for its progress
    (None where it compiles nothing, a dry run, or one point's formats only): static
    shapes compile every format, FP16 with them, once per batch size (and prompt length);
    a dynamic batch once for batch 1 and once for every batch of 2 or more
    (llm/compiled.py), per prompt length."""
    runs = [r for r in the_plan.runs if r.decode == "compiled" and not r.dry_run]
    if len(runs) < 2:
        return None
    steps = [1 + len(r.session_formats) for r in runs]  # FP16's and each format's
    static = sum(steps)
    # the cache's length (prompt + new tokens) is a shape of the step too: a compile per
    # prompt length, whatever the batch
    shapes = {
        (r.model_name, r.prompt_tokens, r.batch_size == 1): n
        for r, n in zip(runs, steps, strict=True)
    }
    dynamic = sum(shapes.values())
    each = "30 s to 3 minutes each at 7B on an H200, docs/map.md"
    if runs[0].compile_batch == "dynamic":
        return (
            f"compiled, dynamic batch: {dynamic} compiles ahead, FP16's and each format's "
            f"step for batch 1 and for every batch of 2 or more ({each})"
        )
    hint = f"; --compile_batch dynamic compiles {dynamic}" if dynamic < static else ""
    return (
        f"compiled: {static} compiles ahead, FP16's and each format's step at every batch "
        f"size ({each}){hint}"
    )
