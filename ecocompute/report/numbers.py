"""What a report may hold beyond its schema's shape: finite numbers of a sane size,
text that is valid Unicode, and a shallow nesting. Read and written strictly.

Python's json module writes NaN and Infinity as bare words and reads them back by
default, but they are not JSON (RFC 8259): other parsers refuse such a file. Reports
are written with allow_nan=False and read with hooks that refuse those words, a number
too large for a float (1e999 would read as inf) and an integer too long to convert.

The bounds below are far beyond any real report (its largest number is a GPU's memory
in MiB, its nesting six levels deep) and keep every tool that reads reports safe:
MAX_MAGNITUDE keeps sums, squares and ratios of a million report values far from
float overflow; MAX_DEPTH keeps the schema validator's recursion shallow; a string must
encode as UTF-8 (JSON's \\ud800 escape reads as a lone surrogate, which cannot be
printed or written back).
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterator
from typing import Any

from ecocompute.core.json_types import JsonObject
from ecocompute.core.limits import MAX_MAGNITUDE

MAX_DEPTH = 32
MAX_INT_DIGITS = 20  # a JSON integer longer than this is no report's count
_MAX_LISTED = 5


class NotReportJson(ValueError):
    """A JSON text or value a report may not hold; the message says where and why."""


def _refuse_constant(word: str) -> float:
    raise NotReportJson(f"holds {word}, which is not a JSON number (RFC 8259)")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise NotReportJson(f"holds the number {text[:40]}, too large for a float")
    return value


def _short_int(text: str) -> int:
    digits = text.lstrip("-")
    if len(digits) > MAX_INT_DIGITS:
        raise NotReportJson(f"holds an integer of {len(digits)} digits, too long to be a count")
    return int(text)


def _one_of_each_key(pairs: list[tuple[str, Any]]) -> JsonObject:
    """An object whose keys are each given once: json.loads keeps the last of a repeated
    key, so `"basis": "measured"` before `"basis": "extrapolated"` would read as one
    report to this tool and another to a reader that keeps the first."""
    document: JsonObject = {}
    for key, value in pairs:
        if key in document:
            shown = key if len(key) <= 40 else key[:37] + "..."
            raise NotReportJson(f"gives the key {json.dumps(shown)} twice in one object")
        document[key] = value
    return document


def loads_strict(text: str) -> Any:
    """json.loads refusing NaN, Infinity, float overflow, over-long integers and a key
    given twice in one object. Raises NotReportJson, json.JSONDecodeError or
    RecursionError."""
    return json.loads(
        text,
        parse_constant=_refuse_constant,
        parse_float=_finite_float,
        parse_int=_short_int,
        object_pairs_hook=_one_of_each_key,
    )


def dumps_strict(document: Any, **kwargs: Any) -> str:
    """json.dumps of a document that passes unsafe_values; raises NotReportJson."""
    problems = unsafe_values(document)
    if problems:
        raise NotReportJson("; ".join(problems))
    return json.dumps(document, allow_nan=False, **kwargs)


def _path(parent: str, key: object) -> str:
    return f"{parent}[{key}]" if isinstance(key, int) else f"{parent}.{key}"


def _walk(document: Any) -> Iterator[tuple[str, Any, int]]:
    """(json path, value, depth) of every value, iteratively (no recursion limit)."""
    stack: list[tuple[str, Any, int]] = [("$", document, 0)]
    while stack:
        path, value, depth = stack.pop()
        yield path, value, depth
        if depth >= MAX_DEPTH:
            continue
        if isinstance(value, dict):
            stack.extend((_path(path, k), v, depth + 1) for k, v in reversed(value.items()))
        elif isinstance(value, list):
            stack.extend(
                (_path(path, i), v, depth + 1) for i, v in reversed(list(enumerate(value)))
            )


def _text_problem(text: str) -> str | None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        return f"holds text that is not valid Unicode ({exc.reason} at character {exc.start})"
    return None


def value_problem(value: Any) -> str | None:
    """Why one scalar may not stand in a report; None when it may."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float) and not math.isfinite(value):
        return f"holds {value!r}, which is not a JSON number (RFC 8259)"
    if isinstance(value, (int, float)) and abs(value) > MAX_MAGNITUDE:
        shown = (
            f"{value:.3g}"
            if isinstance(value, float)
            else f"an integer of about {int(value.bit_length() * math.log10(2)) + 1} digits"
        )
        return f"holds {shown}, larger than any report's figure (limit {MAX_MAGNITUDE:g})"
    if isinstance(value, str):
        return _text_problem(value)
    return None


def _all_safe(document: Any) -> bool:
    """unsafe_values(document) == [], decided without building a path per value (the
    common case, a sound report, in a fraction of the time). Exact JSON types first;
    anything else (a str or int subclass, a tuple) by value_problem, as the full scan."""
    stack: list[tuple[Any, int]] = [(document, 0)]
    push = stack.append
    while stack:
        value, depth = stack.pop()
        kind = type(value)
        if kind is float:
            if not -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE:  # NaN compares False too
                return False
        elif kind is str:
            if not value.isascii() and _text_problem(value) is not None:
                return False
        elif kind is dict:
            if depth >= MAX_DEPTH and value:
                return False
            for k, v in value.items():
                if type(k) is str and not k.isascii() and _text_problem(k) is not None:
                    return False
                push((v, depth + 1))
        elif kind is list:
            if depth >= MAX_DEPTH and value:
                return False
            stack.extend((v, depth + 1) for v in value)
        elif kind is int:
            if not -MAX_MAGNITUDE <= value <= MAX_MAGNITUDE:
                return False
        elif kind is bool or value is None:
            continue
        elif isinstance(value, (dict, list)):
            return False  # a container subclass: the full scan says what it holds
        elif value_problem(value) is not None:
            return False
    return True


def unsafe_values(document: Any) -> list[str]:
    """Every place where a document holds a non-finite or huge number, text that is not
    valid Unicode (keys included), or nesting deeper than MAX_DEPTH; empty when none."""
    if _all_safe(document):
        return []
    problems: list[str] = []
    for path, value, depth in _walk(document):
        if depth >= MAX_DEPTH and isinstance(value, (dict, list)) and value:
            problems.append(f"{path}: nested deeper than {MAX_DEPTH} levels (no report is)")
        if isinstance(value, dict):
            bad_keys = [k for k in value if isinstance(k, str) and _text_problem(k)]
            if bad_keys:
                problems.append(f"{path}: a key {_text_problem(bad_keys[0])}")
        why = value_problem(value)
        if why is not None:
            problems.append(f"{path}: {why}")
        if len(problems) >= _MAX_LISTED:
            break
    return problems
