"""The report's contract: the JSON schemas shipped with the package, and validation.

schema/ at the top of the repository is the home people read; the wheel carries a copy
inside the package (ecocompute/schema/) so an installed tool validates without the repo.
"""

from __future__ import annotations

import functools
import json
from typing import Any

from ecocompute.report.packaged import packaged_text

ENERGY_SCHEMA = "energy.schema.json"
SWEEP_SCHEMA = "sweep.schema.json"
SCHEMA_VERSION = "ecocompute-energy/1.2"
SWEEP_SCHEMA_VERSION = "ecocompute-sweep/1.0"


@functools.lru_cache(maxsize=4)
def load_schema(name: str = ENERGY_SCHEMA) -> dict[str, Any]:
    text = packaged_text(f"schema/{name}")
    if text is None:
        raise FileNotFoundError(f"schema {name} is neither shipped nor in the checkout")
    schema: dict[str, Any] = json.loads(text)
    return schema


def schema_errors(document: object, name: str) -> list[str]:
    """Every violation of schema `name` as "json.path: message"; empty when valid."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(load_schema(name))
    problems = []
    for error in sorted(validator.iter_errors(document), key=lambda e: list(e.absolute_path)):
        path = "$" + "".join(
            f"[{p}]" if isinstance(p, int) else f".{p}" for p in error.absolute_path
        )
        problems.append(f"{path}: {error.message}")
    return problems


def validation_errors(document: object) -> list[str]:
    """Every energy-report schema violation; empty when valid."""
    return schema_errors(document, ENERGY_SCHEMA)


def sweep_errors(document: object) -> list[str]:
    return schema_errors(document, SWEEP_SCHEMA)
