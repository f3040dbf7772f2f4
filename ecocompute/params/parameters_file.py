"""The parameters file (YAML) read and checked, and the run's parameters resolved:
defaults <- parameters file <- flags, through the model (run_params.py)."""

from __future__ import annotations

import difflib
import os
from collections.abc import Mapping
from pathlib import Path

from ecocompute.boundary.user_paths import regular_file
from ecocompute.errors import InputError
from ecocompute.params.path_checks import quality_text_problem
from ecocompute.params.run_params import YAML_KEYS, RunParams, from_text
from ecocompute.params.yaml_loader import DuplicateKey, parameters_loader

MAX_PARAMETERS_BYTES = 1024 * 1024  # a parameters file is a few hundred bytes


def read_parameters_file(path: str | os.PathLike[str]) -> dict[str, object]:
    """Read and check the YAML mapping of parameters. Raises InputError (exit 2)."""
    import yaml  # light, but only the file path needs it

    def refuse(why: str) -> InputError:
        return InputError("parameters_file", str(path), why)

    st = regular_file("parameters_file", path, "a YAML file")  # a NUL byte: InputError too
    if st.st_size > MAX_PARAMETERS_BYTES:
        raise refuse(f"is larger than {MAX_PARAMETERS_BYTES // 1024} KiB; not a parameters file")
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise refuse(f"cannot be read ({exc.strerror})") from None
    if not raw.strip():
        raise refuse("is empty; expected a YAML mapping")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise refuse("is not text (binary?)") from None
    if "\x00" in text:
        raise refuse("is not text (binary?)")
    try:
        data = yaml.load(text, Loader=parameters_loader())  # a SafeLoader subclass
    except yaml.YAMLError as exc:
        where = getattr(exc, "problem_mark", None)
        raise refuse(
            "is not valid YAML" + (f" at line {where.line + 1}" if where else "")
        ) from None
    except RecursionError:
        raise refuse("is nested too deeply to be a parameters file") from None
    except DuplicateKey as exc:
        raise refuse(f"{exc}; give each key once") from None
    if data is None:
        raise refuse("holds no parameters")
    if not isinstance(data, Mapping):
        raise refuse(f"must be a mapping of key: value, got a YAML {type(data).__name__}")
    for key in data:
        if not isinstance(key, str) or key not in YAML_KEYS:
            close = difflib.get_close_matches(str(key), YAML_KEYS, n=1)
            hint = f"did you mean '{close[0]}'? " if close else ""
            raise InputError(
                "parameters_file key", key, hint + "known keys: " + ", ".join(YAML_KEYS)
            )
    return dict(data)


def resolve(parameters_file: str | None, flags: Mapping[str, object]) -> RunParams:
    """Defaults <- parameters file <- flags (None: not given), read as text, then
    checked, and the files they name too. Raises InputError."""
    values: dict[str, object] = {}
    if parameters_file is not None:
        values.update(read_parameters_file(parameters_file))
    values.update({k: v for k, v in flags.items() if v is not None})
    return check_files(from_text(values))


def check_files(params: RunParams) -> RunParams:
    """What the parameters name on this machine, before a run uses it (the output
    folder is checked where the report is written). Raises InputError. A --quality_text
    that cannot be scored is not refused: the run goes on without the probe and says so
    (quality_text_problem; jobs/report_job.py), as the published container does."""
    if params.quality_text is not None:
        quality_text_problem(params.quality_text)  # a name no path can have: InputError
    return params
