"""Flag and YAML values made typed: one function per kind of value, the same for both."""

from __future__ import annotations

import math

from ecocompute.core.precision import Precision
from ecocompute.errors import InputError
from ecocompute.params.run_params import (
    FIELDS,
    PRECISIONS,
)
from ecocompute.params.yaml_loader import TooLongNumber


def _as_int(name: str, value: object) -> int:
    if isinstance(value, bool):
        raise InputError(name, value, "expected a whole number, not true/false")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            pass
    raise InputError(name, value, "expected a whole number")


def _as_float(name: str, value: object) -> float:
    if isinstance(value, bool):
        raise InputError(name, value, "expected a number, not true/false")
    number: float | None = None
    if isinstance(value, (int, float)):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            number = None
    if number is None or not math.isfinite(number):
        raise InputError(name, value, "expected a finite number")
    return number


def _as_bool(name: str, value: object) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.strip().lower() in ("true", "false", "yes", "no"):
        return value.strip().lower() in ("true", "yes")
    raise InputError(name, value, "expected true or false")


def _as_str(name: str, value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise InputError(name, value, "expected a non-empty string")
    return value.strip()


def _as_precision(name: str, value: object) -> Precision:
    text = _as_str(name, value).upper()
    if text not in PRECISIONS:
        raise InputError(name, value, "allowed: " + ", ".join(PRECISIONS))
    return Precision(text)


def _as_precisions(name: str, value: object) -> tuple[Precision, ...]:
    """One precision, or a comma-separated list of quantized ones (a session)."""
    if isinstance(value, Precision):
        return (value,)
    text = _as_str(name, value)
    items = [item.strip() for item in text.split(",")]
    if len(items) == 1:
        return (_as_precision(name, items[0]),)
    if any(not item for item in items):
        raise InputError(name, value, "an empty item in the list; give e.g. NF4,INT4,FP8")
    chosen = tuple(_as_precision(name, item) for item in items)
    if Precision.FP16 in chosen:
        raise InputError(
            name, value, "FP16 is every format's baseline: list only quantized formats"
        )
    if len(set(chosen)) != len(chosen):
        raise InputError(name, value, "lists a format twice")
    return chosen


def coerce_value(name: str, value: object) -> object:
    if isinstance(value, TooLongNumber):
        raise InputError(name, str(value), "a number far too long to be this value")
    if name in ("params_b", "max_gpu_memory_gib", "ci_target_pts"):
        return None if value is None else _as_float(name, value)
    if name == "quality_text":
        return None if value is None else _as_str(name, value)
    if name == "precision":
        return _as_precisions(name, value)
    if name == "formats":
        return tuple(value) if isinstance(value, (list, tuple)) else _as_precisions(name, value)
    kind = {int: _as_int, float: _as_float, bool: _as_bool, str: _as_str}
    default = FIELDS[name].default
    return kind[type(default)](name, value)
