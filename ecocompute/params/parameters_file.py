"""The parameters file (YAML) read and checked, and the run's parameters resolved:
defaults <- parameters file <- flags, then validated."""

from __future__ import annotations

import dataclasses
import difflib
import os
import stat
from collections.abc import Mapping
from pathlib import Path

from ecocompute.boundary.user_paths import kind_of, stat_or_none
from ecocompute.errors import InputError
from ecocompute.params.coercion import coerce_value
from ecocompute.params.run_params import (
    DEFAULTS,
    FIELDS,
    MAX_PARAMETERS_BYTES,
    YAML_KEYS,
    RunParams,
)
from ecocompute.params.validation import validated
from ecocompute.params.yaml_loader import DuplicateKey, parameters_loader


def read_parameters_file(path: str | os.PathLike[str]) -> dict[str, object]:
    """Read and check the YAML mapping of parameters. Raises InputError (exit 2)."""
    import yaml  # light, but only the file path needs it

    file = Path(path)
    st = stat_or_none("parameters_file", path)  # a name too long, a NUL byte: InputError
    if st is None or not stat.S_ISREG(st.st_mode):
        what = {"folder": "is a folder", "missing": "does not exist"}.get(
            kind_of(st), "is not a regular file"
        )
        raise InputError("parameters_file", str(path), f"{what}; give a YAML file")
    if st.st_size > MAX_PARAMETERS_BYTES:
        raise InputError(
            "parameters_file",
            str(path),
            f"is larger than {MAX_PARAMETERS_BYTES // 1024} KiB; not a parameters file",
        )
    try:
        raw = file.read_bytes()
    except OSError as exc:
        raise InputError("parameters_file", str(path), f"cannot be read ({exc.strerror})") from None
    if not raw.strip():
        raise InputError("parameters_file", str(path), "is empty; expected a YAML mapping")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise InputError("parameters_file", str(path), "is not text (binary?)") from None
    if "\x00" in text:
        raise InputError("parameters_file", str(path), "is not text (binary?)")
    try:
        data = yaml.load(text, Loader=parameters_loader())  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        at = f" at line {where.line + 1}" if where is not None else ""
        raise InputError("parameters_file", str(path), f"is not valid YAML{at}") from None
    except RecursionError:
        raise InputError(
            "parameters_file", str(path), "is nested too deeply to be a parameters file"
        ) from None
    except DuplicateKey as exc:
        raise InputError("parameters_file", str(path), f"{exc}; give each key once") from None
    if data is None:
        raise InputError("parameters_file", str(path), "holds no parameters")
    if not isinstance(data, Mapping):
        raise InputError(
            "parameters_file",
            str(path),
            f"must be a mapping of key: value, got a YAML {type(data).__name__}",
        )
    for key in data:
        if not isinstance(key, str) or key not in YAML_KEYS:
            close = difflib.get_close_matches(str(key), YAML_KEYS, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise InputError(
                "parameters_file key", key, hint + "known keys: " + ", ".join(YAML_KEYS)
            )
    return dict(data)


def resolve(parameters_file: str | None, flags: Mapping[str, object]) -> RunParams:
    """Defaults <- parameters file <- flags, then validated. Raises InputError."""
    values: dict[str, object] = {}
    if parameters_file is not None:
        values.update(read_parameters_file(parameters_file))
    values.update({k: v for k, v in flags.items() if v is not None})
    unknown = set(values) - set(FIELDS)
    if unknown:  # a programming error in the CLI, not user input
        raise KeyError(f"not run parameters: {sorted(unknown)}")
    coerced = {name: coerce_value(name, value) for name, value in values.items()}
    if "precision" in coerced:  # one precision, or a session of several
        chosen = coerced["precision"]
        assert isinstance(chosen, tuple)
        coerced["precision"] = chosen[0]
        coerced["formats"] = chosen if len(chosen) > 1 else ()
    return validated(dataclasses.replace(DEFAULTS, **coerced))  # type: ignore[arg-type]
