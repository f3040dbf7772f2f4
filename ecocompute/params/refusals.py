"""pydantic's ValidationError as the project's one-line InputError, `invalid <field>
<value>: <allowed>` (exit 2), in the words the command line has always used. The value
shown is the one given, never pydantic's rendering of it."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, get_args

from pydantic import ValidationError
from pydantic.fields import FieldInfo

from ecocompute.errors import InputError


@dataclass(frozen=True)
class Says:
    """How a field words a value outside its range: below its lower bound, and above
    its upper one (default: "must be at most <bound>")."""

    low: str
    high: str | None = None


def one_line(exc: ValidationError, fields: Mapping[str, FieldInfo]) -> InputError:
    """The first refusal, in the order the fields are declared."""
    order = list(fields)

    def place(error: Any) -> int:
        loc = error["loc"]
        return order.index(loc[0]) if loc and loc[0] in order else len(order)

    error = min(exc.errors(include_url=False), key=place)
    name = str(error["loc"][0]) if error["loc"] else "parameters"
    return InputError(name, error["input"], _allowed(error, fields.get(name)))


def _allowed(error: Any, field: FieldInfo | None) -> str:
    kind, value, ctx = error["type"], error["input"], error.get("ctx") or {}
    yes_no = isinstance(value, bool)
    if kind.startswith("int_"):
        return "expected a whole number" + (", not true/false" if yes_no else "")
    if kind.startswith("float_") or kind == "finite_number":
        return "expected a number, not true/false" if yes_no else "expected a finite number"
    if kind.startswith("bool_"):
        return "expected true or false"
    if kind.startswith("string_") or (kind == "literal_error" and not isinstance(value, str)):
        return "expected a non-empty string"
    if kind in ("unexpected_keyword_argument", "extra_forbidden"):
        return "not a run parameter"
    if field is None:
        return str(error["msg"])
    if kind == "literal_error":
        return "allowed: " + ", ".join(map(str, get_args(field.annotation)))
    says = next((m for m in field.metadata if isinstance(m, Says)), None)
    if kind == "less_than_equal":
        return says.high if says and says.high else f"must be at most {ctx['le']:g}"
    if kind in ("greater_than", "greater_than_equal") and says:
        return says.low
    return str(error["msg"])
