"""A model's size in billions of parameters: the bounds every size must keep, the size a
model's name states, and the nominal size a report records.

A size is checked the same way wherever it comes from. `--params_b 0` is refused, so a
model named `gpt-0b` must be too: its name states 0 B, and the published path would
otherwise divide by it. A name's size is read only where it is written in the name as
a person reads it: text after a control character (an ANSI colour code, `\\x1b[0m`,
ends in "0m", which would read as 0 million) is no part of a size.
"""

from __future__ import annotations

import re

from ecocompute.errors import InputError

MIN_PARAMS_B = 1e-4  # 100,000 parameters
MAX_PARAMS_B = 1e5  # 100 trillion parameters: far beyond any model, and within a report's bounds

_SIZE_IN_NAME = re.compile(r"(?<![\w.])(\d+(?:\.\d+)?)\s*([bBmM])(?![a-zA-Z0-9])")
# An escape sequence (CSI ... final byte, or ESC and one character), or any other
# control character: none of them, nor what they carry, is part of a size.
_CONTROL = re.compile(r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]|\x1b.?|[\x00-\x1f\x7f-\x9f]")


def params_b_problem(params_b: float) -> str | None:
    """Why a size in billions cannot be a model's; None when it can."""
    if params_b <= 0:
        return "must be a positive number of billions"
    if params_b < MIN_PARAMS_B:
        return f"must be at least {MIN_PARAMS_B:g} (100,000 parameters)"
    if params_b > MAX_PARAMS_B:
        return f"must be at most {MAX_PARAMS_B:g}"
    return None


def params_b_from_model_name(model_name: str) -> float | None:
    """A size written in a model name, in billions: "TinyLlama-1.1B-Chat" 1.1,
    "llama-2-7b" 7, "SmolLM2-135M-Instruct" 0.135. Not checked: see name_size_b."""
    tail = model_name.replace("\\", "/").rsplit("/", 1)[-1]
    matches = _SIZE_IN_NAME.findall(_CONTROL.sub(" ", tail).replace("_", "-"))
    if not matches:
        return None
    number, unit = matches[-1]
    return float(number) / (1000.0 if unit in "mM" else 1.0)


# The published container derives a no-GPU figure at the size its run was given, else the
# first size in billions its model's name holds ("...B", never millions), else 1.1.
CONTAINER_DEFAULT_PARAMS_B = 1.1
_CONTAINER_SIZE = re.compile(r"(\d+(?:\.\d+)?)\s*[bB](?!\w)")


def container_params_b(model_name: str) -> float | None:
    """The size the published container took for a figure its report gives no size for:
    "Qwen2.5-3B" 3, "SmolLM2-135M" 1.1 (not 0.135: it reads billions only); None where
    the name's size is no model's (its figure could not have been derived)."""
    found = _CONTAINER_SIZE.search(model_name)
    size = float(found.group(1)) if found else CONTAINER_DEFAULT_PARAMS_B
    return size if params_b_problem(size) is None else None


def name_size_b(model_name: str) -> float | None:
    """The size a model's name states, checked as --params_b is; None when it states
    none. Raises InputError (naming the model and --params_b) for a size no model has."""
    size = params_b_from_model_name(model_name)
    if size is None:
        return None
    why = params_b_problem(size)
    if why is not None:
        raise InputError(
            "params_b",
            size,
            f"read from model name {model_name!r}: {why}; pass --params_b with the "
            "model's size in billions",
        )
    return size


def nominal_params_b(
    model_name: str, given_b: float | None, counted_b: float | None = None
) -> tuple[float, str]:
    """The nominal size in billions (1.1, not 1.100048: consumers match anchors by exact
    size) and where it came from: the one given, else the model name, else the counted
    parameters to 3 significant digits (also where the name states a size no model
    has). Raises InputError when none is known, or when the name's size is impossible
    and nothing was counted."""
    if given_b is not None:
        return given_b, "flag or parameters file"
    from_name = params_b_from_model_name(model_name)
    if from_name is not None and params_b_problem(from_name) is None:
        return from_name, "model name"
    if from_name is not None and counted_b is None:
        name_size_b(model_name)  # raises: the name's size is impossible
    if counted_b is None:
        raise InputError(
            "params_b",
            None,
            f"no size found in model name '{model_name}'; pass --params_b "
            "(billions of parameters, e.g. --params_b 1.1)",
        )
    return float(f"{counted_b:.3g}"), "counted from the loaded weights"
