"""The parameters file (YAML) read and checked, and the run's parameters resolved:
defaults <- parameters file <- flags, through the model (run_params.py).

Its loader is yaml.SafeLoader, stricter where a parameters file would otherwise say
something other than what its author meant:

- An integer too long for Python to convert (more digits than
  sys.get_int_max_str_digits()) is kept as its text (TooLongNumber), so the field it
  was given for is named when it is refused, instead of a ValueError from the parser.
- A number is read as the flag reads the same text: YAML 1.1 reads `0256` as octal
  (174), `010` as 8, `0x0a` as 10 and `4:16` or `1:30` as base 60 (256, 90.0), where
  `--tokens 0256` is 256 and the others are refused. A plain decimal integer is read in
  base 10 (leading zeros and all); any other integer or a base-60 float is kept as its
  text, which the field reads as it reads a flag's.
- A key given twice in one mapping (`precision: NF4` ... `precision: INT8`) is refused
  (DuplicateKey): YAML says keys are unique, and PyYAML would silently keep the last.
  Keys merged in with `<<:` may still be overridden, as YAML allows.

PyYAML is imported inside the functions, so a run without a parameters file never
imports it.
"""

from __future__ import annotations

import difflib
import os
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from ecocompute.boundary.user_paths import regular_file
from ecocompute.errors import InputError
from ecocompute.params.path_checks import quality_text_problem
from ecocompute.params.run_params import YAML_KEYS, RunParams, from_text
from ecocompute.params.text_values import TooLongNumber

MAX_PARAMETERS_BYTES = 1024 * 1024  # a parameters file is a few hundred bytes
_MERGE_TAG = "tag:yaml.org,2002:merge"
_DECIMAL = re.compile(r"[-+]?[0-9]+(?:_[0-9]+)*")  # an integer as int(text, 10) reads it


class DuplicateKey(ValueError):
    """A mapping names one key twice."""


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


def parameters_loader() -> type:
    """The loader class (a yaml.SafeLoader subclass)."""
    import yaml

    class ParametersLoader(yaml.SafeLoader):
        def construct_int_or_text(self, node: Any) -> object:
            text = self.construct_scalar(node)
            if not _DECIMAL.fullmatch(text):
                return str(text)  # 0x0a, 0o17, 0b1, 4:16: the field reads it as a flag's
            try:
                return int(text, 10)  # 0256 is 256, as --tokens 0256 is
            except ValueError:
                return TooLongNumber(text)

        def construct_float_or_text(self, node: Any) -> object:
            text = self.construct_scalar(node)
            if ":" in text:  # base 60 (1:30 = 90.0): read as the flag reads it
                return str(text)
            return self.construct_yaml_float(node)

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            """DuplicateKey when one of the mapping's own scalar keys appears twice."""
            seen: dict[object, int] = {}  # key: its line, 1-based
            for key_node, _ in node.value if isinstance(node, yaml.MappingNode) else []:
                if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
                    continue  # merged keys may be overridden; a complex key is refused elsewhere
                key = self.construct_object(key_node, deep=False)
                line = key_node.start_mark.line + 1
                try:
                    if key in seen:
                        why = f"key {key!r} is given twice (lines {seen[key]} and {line})"
                        raise DuplicateKey(why)
                    seen[key] = line
                except TypeError:  # unhashable: PyYAML refuses it itself
                    continue
            return super().construct_mapping(node, deep=deep)

    ParametersLoader.add_constructor(
        "tag:yaml.org,2002:int", ParametersLoader.construct_int_or_text
    )
    ParametersLoader.add_constructor(
        "tag:yaml.org,2002:float", ParametersLoader.construct_float_or_text
    )
    return ParametersLoader
