"""Typed access to a report document's fields for results/record.py: every field that is
not what it must be becomes a problem ("$.path: what it is, what it must be"), never an
exception, so a hostile file is refused with its reasons."""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any


class Reader:
    """Typed access to a document's fields; every field that is not what it must be is
    a problem ("$.path: what it is, what it must be"), never an exception."""

    def __init__(self, doc: Mapping[str, Any]) -> None:
        self.doc = doc
        self.problems: list[str] = []

    def _get(self, path: tuple[str, ...]) -> Any:
        node: Any = self.doc
        for i, key in enumerate(path):
            if node is None and i > 0:  # an optional object left null: nothing under it
                return None
            if not isinstance(node, Mapping):
                where = "$." + ".".join(path[:i]) if i else "$"
                self.problems.append(f"{where}: {type(node).__name__}, not an object")
                return None
            node = node.get(key)
        return node

    def _bad(self, path: tuple[str, ...], value: Any, must: str) -> None:
        shown = repr(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        self.problems.append(f"$.{'.'.join(path)}: {shown} is not {must}")

    def obj(self, *path: str) -> Mapping[str, Any]:
        value = self._get(path)
        if value is None:
            return {}
        if not isinstance(value, Mapping):
            self._bad(path, value, "an object")
            return {}
        return value

    def text(self, *path: str, required: bool = False) -> str | None:
        value = self._get(path)
        if value is None and not required:
            return None
        if not isinstance(value, str) or (required and not value.strip()):
            self._bad(path, value, "a text" if not required else "a non-empty text")
            return None
        return value

    def number(self, *path: str) -> float | None:
        value = self._get(path)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self._bad(path, value, "a number")
            return None
        if not math.isfinite(float(value)):
            self._bad(path, value, "a finite number")
            return None
        return float(value)

    def integer(self, *path: str, minimum: int = 0) -> int | None:
        value = self._get(path)
        if value is None:
            return None
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            self._bad(path, value, f"an integer >= {minimum}")
            return None
        return value

    def interval(self, *path: str) -> tuple[float, float] | None:
        value = self._get(path)
        if value is None:
            return None
        ok = (
            isinstance(value, list)
            and len(value) == 2
            and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value)
            and all(math.isfinite(float(v)) for v in value)
            and float(value[0]) <= float(value[1])
        )
        if not ok:
            self._bad(path, value, "an interval [low, high] of two numbers")
            return None
        return float(value[0]), float(value[1])

    def choice(self, *path: str, allowed: tuple[str, ...]) -> str | None:
        value = self._get(path)
        if value not in allowed:
            self._bad(path, value, "one of " + ", ".join(allowed))
            return None
        return str(value)
