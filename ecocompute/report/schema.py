"""The report's contract: the JSON schemas shipped with the package, and validation.

schema/ at the top of the repository is the home people read; the wheel carries a copy
inside the package (ecocompute/schema/) so an installed tool validates without the repo.
"""

from __future__ import annotations

import functools
import json
import logging
from typing import Any

from ecocompute.report.packaged import packaged_text

log = logging.getLogger(__name__)

ENERGY_SCHEMA = "energy.schema.json"
SWEEP_SCHEMA = "sweep.schema.json"
SCHEMA_VERSION = "ecocompute-energy/1.4"
# The published container's formats, and the schema of its published facts (draft-07):
# what its consumers accept, read back here as those reports' own schema.
PUBLISHED_SCHEMA = "energy-published.schema.json"
PUBLISHED_FORMATS = ("ecocompute-energy/1.0", "ecocompute-energy/1.1")
PUBLISHED_PRECISIONS = ("FP16", "NF4", "INT8")
# Every energy-report format this tool reads, and the schema each validates against:
# 1.4 is what it writes; 1.3 is what ecocompute 0.3 wrote (1.4 without the torchao
# formats, sessions and timing); 1.2 is what ecocompute 0.2 wrote; 1.0 and 1.1 are the
# published container's.
ENERGY_SCHEMAS = {
    SCHEMA_VERSION: ENERGY_SCHEMA,
    "ecocompute-energy/1.3": "energy-1.3.schema.json",
    "ecocompute-energy/1.2": "energy-1.2.schema.json",
    **dict.fromkeys(PUBLISHED_FORMATS, PUBLISHED_SCHEMA),
}
SWEEP_SCHEMA_VERSION = "ecocompute-sweep/1.0"


def require_validator() -> None:
    """Before a run measures anything: the library that validates every report must be
    importable, or a measurement would be lost at the end. Raises RunError."""
    try:
        import jsonschema  # noqa: F401
    except ImportError:
        from ecocompute.errors import RunError

        raise RunError(
            "jsonschema is not installed, so no report could be validated: pip install "
            "jsonschema (a dependency of ecocompute); nothing was measured"
        ) from None


@functools.lru_cache(maxsize=4)
def load_schema(name: str = ENERGY_SCHEMA) -> dict[str, Any]:
    text = packaged_text(f"schema/{name}")
    if text is None:
        raise FileNotFoundError(f"schema {name} is neither shipped nor in the checkout")
    schema: dict[str, Any] = json.loads(text)
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
    """Every violation of schema `name` as "json.path: message"; empty when valid. Each
    schema is checked by the draft it names ($schema).

    Reading many reports, a document that the compiled schema accepts is valid
    (tests/test_schema_speed.py shows both validators agree, document by document);
    one it refuses, and with thorough (the writer's check) every document, goes through
    jsonschema, whose messages say where and why."""
    compiled = None if thorough else _compiled(name)
    if compiled is not None:
        try:
            compiled(document)
            return []
        except Exception:  # JsonSchemaValueException, or anything odd: jsonschema decides
            pass
    problems = []
    errors = _validator(name).iter_errors(document)
    for error in sorted(errors, key=lambda e: list(e.absolute_path)):
        path = "$" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path
        )
        problems.append(f"{path}: {error.message}")
    return problems


def validation_errors(document: object, *, thorough: bool = False) -> list[str]:
    """Every violation of the schema of the report's own format version; empty when
    valid. A format this tool does not know is one problem."""
    version = document.get("schema_version") if isinstance(document, dict) else None
    name = ENERGY_SCHEMAS.get(version) if isinstance(version, str) else None
    if name is None:
        known = ", ".join(sorted(ENERGY_SCHEMAS))
        return [f"$.schema_version: {version!r} is not a report format this tool reads ({known})"]
    return schema_errors(document, name, thorough=thorough)


def published_facts_errors(document: object, *, thorough: bool = False) -> list[str]:
    """Every way a report breaks the published format's facts (what the published
    container's consumers accept); empty when they accept it."""
    return schema_errors(document, PUBLISHED_SCHEMA, thorough=thorough)


def sweep_errors(document: object) -> list[str]:
    return schema_errors(document, SWEEP_SCHEMA)
