"""The YAML loader of a parameters file: yaml.SafeLoader, stricter where a parameters file
would otherwise say something other than what its author meant.

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

PyYAML is imported inside the function, so a run without a parameters file never
imports it.
"""

from __future__ import annotations

import re
from typing import Any

_MERGE_TAG = "tag:yaml.org,2002:merge"
_DECIMAL = re.compile(r"[-+]?[0-9]+(?:_[0-9]+)*")  # an integer as int(text, 10) reads it


class TooLongNumber(str):
    """A YAML integer too long to convert, kept as its text."""


class DuplicateKey(ValueError):
    """A mapping names one key twice; lines are 1-based."""

    def __init__(self, key: object, first_line: int, again_line: int) -> None:
        self.key = key
        self.first_line = first_line
        self.again_line = again_line
        super().__init__(f"key {key!r} is given twice (lines {first_line} and {again_line})")


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
            if isinstance(node, yaml.MappingNode):
                _refuse_duplicates(self, node)
            return super().construct_mapping(node, deep=deep)

    ParametersLoader.add_constructor(
        "tag:yaml.org,2002:int", ParametersLoader.construct_int_or_text
    )
    ParametersLoader.add_constructor(
        "tag:yaml.org,2002:float", ParametersLoader.construct_float_or_text
    )
    return ParametersLoader


def _refuse_duplicates(loader: Any, node: Any) -> None:
    """Raise DuplicateKey when one of the mapping's own scalar keys appears twice."""
    import yaml

    seen: dict[object, int] = {}
    for key_node, _ in node.value:
        if key_node.tag == _MERGE_TAG or not isinstance(key_node, yaml.ScalarNode):
            continue  # merged keys may be overridden; a complex key is refused elsewhere
        key = loader.construct_object(key_node, deep=False)
        line = key_node.start_mark.line + 1
        try:
            if key in seen:
                raise DuplicateKey(key, seen[key], line)
            seen[key] = line
        except TypeError:  # unhashable: PyYAML refuses it itself
            continue
