"""Flag and YAML values read as their field's type, the same for both, before the model
checks them: "8" and 8.0 are the whole number 8 ("1.0" is not, nor 2.5), "true", "yes",
"false" and "no" (any case) are booleans, "nan" and "inf" are no number at all. A value
that does not read as its type is left as it is, for the model to refuse and name.
Typed values (the Python API) skip this: they must already be of their field's type."""

from __future__ import annotations

import contextlib
import math
from types import NoneType, UnionType
from typing import Any, Union, get_args, get_origin

from ecocompute.core.precision import Precision
from ecocompute.errors import InputError

PRECISIONS = tuple(p.value for p in Precision)
_BOOLEANS = {"true": True, "yes": True, "false": False, "no": False}


class TooLongNumber(str):
    """A YAML integer too long to convert, kept as its text (parameters_file.py)."""


def read_as(name: str, kind: Any, value: object) -> object:
    """`value` as `kind` (the field's type) where it reads as one."""
    if isinstance(value, TooLongNumber):
        raise InputError(name, str(value), "a number far too long to be this value")
    if kind is Precision and not isinstance(value, str):  # a YAML list is not a precision
        raise InputError(name, value, "expected a non-empty string")
    if get_origin(kind) in (Union, UnionType):  # X | None
        kind = next(k for k in get_args(kind) if k is not NoneType)
    if kind is int and isinstance(value, float) and value.is_integer():
        return int(value)
    with contextlib.suppress(ValueError):  # not a number, or too many digits to convert
        if kind is int and isinstance(value, str):
            return int(value)
        if kind is float and isinstance(value, str) and math.isfinite(number := float(value)):
            return number
    if kind is bool and isinstance(value, str):
        return _BOOLEANS.get(value.strip().lower(), value)
    return value


def session_formats(value: object) -> tuple[Precision, ...]:
    """One precision, or several quantized ones (a session), from "NF4" or "NF4,INT4,FP8"
    (any case), a Precision or a list of them. Raises InputError naming precision."""
    if isinstance(value, Precision):
        return (value,)
    if isinstance(value, str) and not value.strip():
        raise InputError("precision", value, "expected a non-empty string")
    if isinstance(value, str):
        items: list[object] = [item.strip() for item in value.split(",")]
    elif isinstance(value, list | tuple) and value:
        items = list(value)
    else:
        raise InputError("precision", value, "expected a non-empty string")
    if len(items) == 1:
        return (_precision(items[0]),)
    if any(item == "" for item in items):
        raise InputError("precision", value, "an empty item in the list; give e.g. NF4,INT4,FP8")
    chosen = tuple(_precision(item) for item in items)
    if Precision.FP16 in chosen:
        raise InputError(
            "precision", value, "FP16 is every format's baseline: list only quantized formats"
        )
    if len(set(chosen)) != len(chosen):
        raise InputError("precision", value, "lists a format twice")
    return chosen


def _precision(item: object) -> Precision:
    if isinstance(item, Precision):
        return item
    if not isinstance(item, str) or not item.strip():
        raise InputError("precision", item, "expected a non-empty string")
    if item.strip().upper() not in PRECISIONS:
        raise InputError("precision", item, "allowed: " + ", ".join(PRECISIONS))
    return Precision(item.strip().upper())
