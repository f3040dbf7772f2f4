"""JSON data as a type: what a record that goes into a report as it stands (a library's
quantization config, a compile's settings, a kernel fingerprint) may hold. Narrower than
Any: mypy refuses a value JSON cannot carry (an object, a tensor, a path)."""

from __future__ import annotations

from typing import TypeAlias

Json: TypeAlias = "bool | int | float | str | list[Json] | dict[str, Json] | None"
JsonObject: TypeAlias = "dict[str, Json]"
