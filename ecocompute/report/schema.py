"""The report's contract as JSON schemas: this tool's own (format 2.0) generated from the
report model, and the files of the formats it reads, kept as they were written.

schema/ at the top of the repository is the home people read; the wheel carries a copy
inside the package (ecocompute/schema/) so an installed tool validates without the repo.
energy.schema.json is generated
(`python -m ecocompute.cli.schema_command > schema/energy.schema.json`;
tests/report/test_report_model.py fails when the committed file and the model differ). The
published container's schema (its facts, draft-07) stays the published format's: every
report we write whose precision it names is validated against it too.
"""

from __future__ import annotations

import functools
import json
import logging
from collections.abc import Iterable
from importlib import resources
from pathlib import Path
from typing import Any

from ecocompute.core.json_types import JsonObject
from ecocompute.report.model import (
    COMPLETE,
    FORMAT,
    LEGACY_BENCHMARK,
    MEASURED_SOURCE,
    NO_LOCAL_GPU,
    Report,
)

log = logging.getLogger(__name__)

ENERGY_SCHEMA = "energy.schema.json"  # format 2.0, generated from the model
SWEEP_SCHEMA = "sweep.schema.json"
PUBLISHED_SCHEMA = "energy-published.schema.json"
# The published container's strict schema of its 1.0, 1.2 and 1.3 (commit e52f878 of
# hongping-zh/ecocompute-mlcube, rebuilt): its 1.2 and 1.3 reports are read against it,
# and every report we write that it can take (a precision it names, >= 10 Hz) passes it.
PUBLISHED_13_SCHEMA = "energy-published-1.3.schema.json"
PUBLISHED_OLD = ("ecocompute-energy/1.0", "ecocompute-energy/1.1")
PUBLISHED_NEW = ("ecocompute-energy/1.2", "ecocompute-energy/1.3")
PUBLISHED_FORMATS = PUBLISHED_OLD + PUBLISHED_NEW
PUBLISHED_PRECISIONS = ("FP16", "NF4", "INT8")
PUBLISHED_MIN_RATE_HZ = 10  # Protocol v1.1's floor, in the strict schema
# This tool's own older formats (benchmark LEGACY_BENCHMARK), and the schema each is
# first checked against: 1.2 (ecocompute 0.2), 1.3 (0.3) and 1.4 (0.4-0.5). Their names
# collide with the container's 1.2 and 1.3: the benchmark field tells them apart.
LEGACY_SCHEMAS = {
    "ecocompute-energy/1.4": "energy-1.4.schema.json",
    "ecocompute-energy/1.3": "energy-1.3.schema.json",
    "ecocompute-energy/1.2": "energy-1.2.schema.json",
}
# Every older format by what a reader sees: (schema_version, ours) -> its schema.
OLDER_FORMATS = {
    **{(v, True): name for v, name in LEGACY_SCHEMAS.items()},
    **{(v, False): PUBLISHED_SCHEMA for v in PUBLISHED_OLD},
    **{(v, False): PUBLISHED_13_SCHEMA for v in PUBLISHED_NEW},
}


def older_format(document: JsonObject) -> tuple[str, str] | None:
    """(a document's format as this tool names it, the schema it is checked against),
    for a document of an older format; None for one it does not know. This tool's own
    older reports carry LEGACY_BENCHMARK; the published container's (1.0-1.3) any other.
    A published 1.0 or 1.1 report is read whatever its benchmark (the round-2 rule)."""
    version = document.get("schema_version")
    if not isinstance(version, str):
        return None
    ours = document.get("benchmark") == LEGACY_BENCHMARK
    name = OLDER_FORMATS.get((version, ours)) or (
        OLDER_FORMATS.get((version, False)) if version in PUBLISHED_OLD else None
    )
    if name is None:
        return None
    return (f"ecocompute {version}" if ours else f"published {version}"), name


def known_formats() -> str:
    """The formats a reader takes, for a message that names them."""
    return (
        f"{FORMAT} (ecocompute_format); this tool's older "
        + ", ".join(sorted(LEGACY_SCHEMAS))
        + f" (benchmark {LEGACY_BENCHMARK}); the published container's "
        + ", ".join(PUBLISHED_FORMATS)
    )


SWEEP_SCHEMA_VERSION = "ecocompute-sweep/1.0"
_CHECKOUT = Path(__file__).resolve().parents[2]


def packaged_text(name: str) -> str | None:
    """ecocompute/<name> as shipped in the wheel (the schemas, the container image's
    lock), else <checkout>/<name>, where a checkout keeps it; None when neither exists."""
    shipped = resources.files("ecocompute").joinpath(name)
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    checkout = _CHECKOUT / name
    return checkout.read_text(encoding="utf-8") if checkout.is_file() else None


def generated_schema() -> JsonObject:
    """Format 2.0's schema: the model's, with the rules its validators hold as JSON
    schema conditions (a measured report's source, a derived one's claiming no match with
    the pins; what format 2.0 requires)."""
    schema = Report.model_json_schema()
    required_2 = [_required_at(path) for path in COMPLETE]
    return {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "$id": "https://ecocompute.example/schema/energy.schema.json",
        **schema,
        "title": "EcoCompute energy report, format " + FORMAT,
        "allOf": [
            {
                "if": {
                    "properties": {"ecocompute_format": {"const": FORMAT}},
                    "required": ["ecocompute_format"],
                },
                "then": {"allOf": required_2},
            },
            {
                "if": {"properties": {"results": {"properties": {"basis": {"const": "measured"}}}}},
                "then": {
                    "properties": {
                        "measurement_source": {"const": MEASURED_SOURCE},
                        "measurement_source_reason": {"type": "null"},
                    }
                },
                "else": {  # a derived figure ran no stack: it claims no match with the pins
                    "required": ["measurement_source_reason"],
                    "properties": {
                        "measurement_source": {"const": NO_LOCAL_GPU},
                        "measurement_source_reason": {"type": "string"},
                        "software": {
                            "properties": {"matches_reference_pins": {"not": {"const": True}}}
                        },
                    },
                },
            },
        ],
    }


def _required_at(path: tuple[str, ...]) -> JsonObject:
    """The JSON schema condition that path's last field is present (and not null)
    wherever its parents are objects."""
    rule: JsonObject = {
        "required": [path[-1]],
        "properties": {path[-1]: {"not": {"type": "null"}}},
    }
    for key in reversed(path[:-1]):
        rule = {"properties": {key: {"if": {"type": "object"}, "then": rule}}}
    return rule


def schema_text() -> str:
    return json.dumps(generated_schema(), indent=2, ensure_ascii=False) + "\n"


def require_validator() -> None:
    """Before a run measures anything: the library that validates against the published
    format's schema must be importable, or a measurement would be lost at the end.
    Raises RunError."""
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        from ecocompute.errors import RunError

        raise RunError(
            "jsonschema is not installed, so no report could be validated: pip install "
            "jsonschema (a dependency of ecocompute); nothing was measured"
        ) from None


@functools.lru_cache(maxsize=8)
def load_schema(name: str = ENERGY_SCHEMA) -> JsonObject:
    text = packaged_text(f"schema/{name}")
    if text is None:
        raise FileNotFoundError(f"schema {name} is neither shipped nor in the checkout")
    schema: JsonObject = json.loads(text)
    return schema


@functools.lru_cache(maxsize=8)
def _validator(name: str) -> Any:
    """jsonschema's validator for schema `name`, by the draft it names ($schema): made
    once per process, not once per file."""
    from jsonschema.validators import validator_for

    schema = load_schema(name)
    return validator_for(schema)(schema)


@functools.lru_cache(maxsize=8)
def _compiled(name: str) -> Any:
    """schema `name` compiled to Python by fastjsonschema (about 20 times faster than
    jsonschema on a report), or None where it is not installed or cannot compile it."""
    try:
        import fastjsonschema
    except ImportError:
        return None
    try:
        return fastjsonschema.compile(load_schema(name))
    except Exception:  # a schema it cannot compile: jsonschema alone then
        log.debug("fastjsonschema cannot compile %s", name, exc_info=True)
        return None


def schema_errors(document: object, name: str, *, thorough: bool = False) -> list[str]:
    """Every violation of schema `name` as "$.json.path: message"; empty when valid. A
    document the compiled schema accepts is valid (both validators agree, document by
    document: tests); one it refuses, and with thorough every document, goes through
    jsonschema, whose messages say where and why."""
    compiled = None if thorough else _compiled(name)
    if compiled is not None:
        try:
            compiled(document)
            return []
        except Exception:  # JsonSchemaValueException, or anything odd: jsonschema decides
            pass
    return _problems(_validator(name), document)


def json_path(parts: Iterable[object]) -> str:
    """ "$.results.trials[3].tokens" from the keys and indices that lead there."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in parts)


_MESSAGE_CHARS = 300  # jsonschema quotes whole values: a trial list is kilobytes


def _problems(validator: Any, document: object) -> list[str]:
    """jsonschema's errors as "$.json.path: message": first those of the fields
    themselves, then those a condition drew from them (an `if`'s `then`: a basis that is
    not `measured` asks for the no-GPU source, which said first buried the basis), each
    in path order, each message cut to a line's length."""
    errors = sorted(
        validator.iter_errors(document),
        key=lambda e: (
            any(step in ("then", "else") for step in e.schema_path),
            list(e.absolute_path),
        ),
    )
    return [f"{json_path(e.absolute_path)}: {_short(e.message)}" for e in errors]


def _short(message: str) -> str:
    if len(message) <= _MESSAGE_CHARS:
        return message
    return message[: _MESSAGE_CHARS - 25] + f"... ({len(message):,} characters)"


def check_schema(schema: JsonObject) -> None:
    """Raises ValueError (one line) where schema is not a schema of its own draft."""
    from jsonschema.exceptions import SchemaError
    from jsonschema.validators import validator_for

    try:
        validator_for(schema).check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"not a valid JSON schema: {exc.message}") from None
    _check_refs(schema)


def _check_refs(schema: JsonObject) -> None:
    """Every $ref of the schema leads somewhere within it: validating would otherwise
    fail on the first report that reaches one (a pointer to nowhere, or another document,
    which is never fetched). Raises ValueError (one line)."""
    from referencing import Registry, Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    resolver = Registry().resolver_with_root(
        Resource.from_contents(schema, default_specification=DRAFT202012)
    )
    pending: list[object] = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            ref = node.get("$ref")
            if isinstance(ref, str):
                try:
                    resolver.lookup(ref)
                except Unresolvable:
                    raise ValueError(f"its $ref {ref!r} leads nowhere in it") from None
            pending.extend(node.values())
        elif isinstance(node, list):
            pending.extend(node)


def schema_errors_against(document: object, schema: JsonObject) -> list[str]:
    """Every violation of a schema given as a document (not one of ours), as
    "$.json.path: message"."""
    from jsonschema.validators import validator_for

    return _problems(validator_for(schema)(schema), document)


def published_facts_errors(document: object, *, thorough: bool = False) -> list[str]:
    """Every way a report breaks the published format's facts (what the published
    container's consumers accept); empty when they accept it."""
    return schema_errors(document, PUBLISHED_SCHEMA, thorough=thorough)


def published_13_errors(document: object, *, thorough: bool = False) -> list[str]:
    """Every way a report breaks the published container's strict 1.3 schema."""
    return schema_errors(document, PUBLISHED_13_SCHEMA, thorough=thorough)


def sweep_errors(document: object) -> list[str]:
    return schema_errors(document, SWEEP_SCHEMA)
