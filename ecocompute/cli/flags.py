"""The run's flags, one per RunParams field that has one (the model says how each is
spelled: params.flag_for), and the parser whose usage mistakes are one line (exit 2).
Values stay strings here: params/ reads flags and YAML values the same way."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from ecocompute.core.printable import printable, recordable
from ecocompute.params import FIELDS, flag_for


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes are one `ecocompute: error:` line and exit 2; usage is in --help."""

    def error(self, message: str) -> NoReturn:
        print(
            f"ecocompute: error: {printable(message)} (see `{self.prog} --help`)", file=sys.stderr
        )
        raise SystemExit(2)


def add_run_flags(p: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """energy_estimate's flags: those with a value (all strings here), then the switches."""
    flags = [(n, flag) for n in FIELDS if n not in skip and (flag := flag_for(n)) is not None]
    for dest, flag in flags:
        if flag.metavar is not None:
            text = str(FIELDS[dest].description)
            if "default:" not in text:
                text += f" (default: {FIELDS[dest].default})"
            help_text = text.replace("%", "%%")  # argparse %-formats help
            names = (*flag.also, *_spellings(dest))
            p.add_argument(*names, dest=dest, metavar=flag.metavar, default=None, help=help_text)
    for dest, flag in flags:
        if flag.metavar is None:
            on = not FIELDS[dest].default  # a field on by default is switched off
            names = (*flag.also, *_spellings(dest if on else f"no_{dest}"))
            text = flag.help or str(FIELDS[dest].description)
            p.add_argument(
                *names, dest=dest, action="store_const", const=on, default=None, help=text
            )


def _spellings(name: str) -> tuple[str, ...]:
    return (f"--{name}", f"--{name.replace('_', '-')}") if "_" in name else (f"--{name}",)


def parameters_file_flag(p: argparse.ArgumentParser, text: str) -> None:
    p.add_argument(
        "--parameters_file", "--parameters-file", metavar="YAML", default=None, help=text
    )


def run_flags_given(args: argparse.Namespace, *, leave_out: tuple[str, ...] = ()) -> dict:
    return {n: getattr(args, n) for n in FIELDS if hasattr(args, n) and n not in leave_out}


def recorded_command() -> list[str]:
    """The command line as a report records it: a path argument with bytes that are not
    UTF-8 (legal in a Linux file name) keeps them as \\xNN escapes."""
    return [recordable(arg) for arg in sys.argv[1:]]
