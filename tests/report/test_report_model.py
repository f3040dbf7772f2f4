"""Format 2.0's schema is the model's: the committed schema/energy.schema.json is what
the model generates today, and over every field of a measured and a derived report,
bent the ways a hostile file bends it, the schema accepts whatever the model accepts
(so the published consumers, which read the schema, never refuse a report we write),
and a bend the schema refuses the model refuses too."""

from __future__ import annotations

import copy
import functools
import json

import jsonschema
import pytest
from pydantic import ValidationError

from ecocompute.report.model import Report
from ecocompute.report.schema import ENERGY_SCHEMA, load_schema, schema_text

from ..conftest import REPO
from ..made_reports import _v2_base

BENDS = (None, "x", -1, 1.5, True, [], {})


def test_the_committed_schema_is_the_models():
    committed = (REPO / "schema" / ENERGY_SCHEMA).read_text()
    assert committed == schema_text(), "run: python -m ecocompute.cli.schema_command > schema/..."


@functools.lru_cache(maxsize=1)
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(load_schema(ENERGY_SCHEMA))


def _derived() -> dict:
    from ecocompute.params import resolve
    from ecocompute.report.build import build_report
    from ecocompute.task.hardware import Hardware
    from ecocompute.task.published_path import FallbackReason, published_run

    params = resolve(None, {"gpu_arch": "ada", "params_b": "1.1", "precision": "NF4"})
    run = published_run(params, FallbackReason("dry_run", "--dry_run"), Hardware())
    return build_report(run, None).model_dump(mode="json")


def _paths(doc, path=()):
    yield path
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from _paths(v, (*path, k))
    elif isinstance(doc, list) and doc:
        yield from _paths(doc[0], (*path, 0))


def _bent(doc, path, value):
    bent = copy.deepcopy(doc)
    node = bent
    for key in path[:-1]:
        node = node[key]
    node[path[-1]] = value
    return bent


def _model_accepts(doc) -> bool:
    try:
        Report.model_validate(doc)
    except ValidationError:
        return False
    return True


@pytest.mark.parametrize("kind", ["measured", "derived"])
def test_the_schema_accepts_what_the_model_accepts_field_by_field(kind):
    doc = json.loads(_v2_base()) if kind == "measured" else _derived()
    assert _model_accepts(doc) and _validator().is_valid(doc)
    disagreements, checked = [], 0
    for path in list(_paths(doc))[1:]:
        for bend in BENDS:
            bent = _bent(doc, path, bend)
            checked += 1
            model, schema = _model_accepts(bent), _validator().is_valid(bent)
            if model != schema:
                disagreements.append(f"{'/'.join(map(str, path))} = {bend!r}: model {model}")
    assert disagreements == []
    assert checked > 500  # each of them was compared above


def test_a_windows_conditions_are_recorded_strictly():
    """A GPU's state over a window becomes the report's record in the model's strict
    mode (its tuples as lists): a count that is a float, a bool or a text is refused,
    never turned into a number (a review of the shrink pass, 2026-12-05)."""
    import dataclasses

    from pydantic import ValidationError

    from ecocompute.monitor.conditions import window_conditions
    from ecocompute.report.trial_records import _window
    from ecocompute.telemetry.base import ClockSample, EdgeState

    edge = EdgeState(41.0, 39.0, {"power_cap": 0})
    c = window_conditions(0, edge, edge, [ClockSample(1980, 3201, 0)], [300.0], 300.0, 1.0, 700.0)
    assert _window(c).temperature_c == [41.0, 41.0]
    for bad in ({"clock_samples": 3.0}, {"clock_samples": True}, {"sm_clock_mhz_mean": "1500"}):
        with pytest.raises(ValidationError):
            _window(dataclasses.replace(c, **bad))
