"""The 1.1 compatibility check used by the tests: the reconstructed schema
(schema/energy-1.1.schema.json) plus what a schema cannot say reliably."""

from __future__ import annotations

import functools
import json
from pathlib import Path
from typing import Any

SCHEMA_PATH = Path(__file__).resolve().parent.parent / "schema" / "energy-1.1.schema.json"
EXAMPLES = Path(__file__).resolve().parent / "data" / "reports-1.1"


@functools.lru_cache(maxsize=1)
def compat_schema() -> dict[str, Any]:
    schema: dict[str, Any] = json.loads(SCHEMA_PATH.read_text())
    return schema


def has_at_most_one_decimal(value: float) -> bool:
    """True for 36.6, 0.3, -28.0; False for 36.57. Done on the decimal rounding, not
    with multipleOf 0.1, which rejects binary floats such as 0.3 (0.3 / 0.1 is not 3)."""
    return round(value, 1) == value


# Integer fields of 1.1. JSON Schema's "integer" accepts 10.0 (a number whose fraction
# is zero), so the schema cannot tell 10.0 from 10; the issue says 1.1 writes an integer
# where ours wrote 10.0, so a float there is checked here, on the parsed JSON.
INTEGER_FIELDS = (
    ("measurement", "sample_rate_hz"),
    ("system_under_test", "accelerator_count"),
    ("quality", "tokens_evaluated"),
)


def compat_problems(doc: dict[str, Any]) -> list[str]:
    """Every way doc breaks the 1.1 facts: schema errors (path: message), then the
    rules a schema cannot state reliably (integers written as 10.0, one decimal).
    Empty when doc is 1.1-compatible."""
    from jsonschema import Draft202012Validator

    validator = Draft202012Validator(compat_schema())
    problems = [
        f"{'/'.join(str(p) for p in e.absolute_path) or '$'}: {e.message}"
        for e in sorted(validator.iter_errors(doc), key=lambda e: list(e.absolute_path))
    ]
    for block, field in INTEGER_FIELDS:
        value = (doc.get(block) or {}).get(field)
        if isinstance(value, float) and value.is_integer():
            problems.append(f"{block}/{field}: {value} is written as a float, not an integer")
    pct = (doc.get("results") or {}).get("vs_fp16_energy_pct")
    if isinstance(pct, float) and not has_at_most_one_decimal(pct):
        problems.append(f"results/vs_fp16_energy_pct: {pct} has more than one decimal")
    return problems
