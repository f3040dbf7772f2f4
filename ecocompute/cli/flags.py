"""The run's flags, spelled once: every RunParams field a flag sets, the switches, and
the parser whose usage mistakes are one line (exit 2). Values stay strings here:
params/ converts and validates flags and YAML values the same way."""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from ecocompute.core.printable import printable, recordable
from ecocompute.params import FIELDS, help_for

# (flag spellings, RunParams field, metavar). Values stay strings here: params.py
# converts and validates flags and YAML values the same way.
_VALUE_FLAGS: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("--model", "--model_name", "--model-name"), "model_name", "ID"),
    (("--params_b", "--params-b"), "params_b", "B"),
    (("--precision",), "precision", "{FP16,NF4,INT8,INT4,FP8}[,...]"),
    (("--backend",), "backend", "{auto,bitsandbytes,torchao}"),
    (("--batch_size", "--batch-size"), "batch_size", "N"),
    (("--gpu_arch", "--gpu-arch"), "gpu_arch", "ARCH"),
    (("--context_length", "--context-length"), "context_length", "N"),
    (("--tokens",), "tokens", "N"),
    (("--iterations",), "iterations", "N"),
    (("--warmup",), "warmup", "N"),
    (("--sample_rate_hz", "--sample-rate-hz"), "sample_rate_hz", "HZ"),
    (("--quality_seq_len", "--quality-seq-len"), "quality_seq_len", "N"),
    (("--quality_text", "--quality-text"), "quality_text", "FILE"),
    (("--llm_int8_threshold", "--llm-int8-threshold"), "llm_int8_threshold", "X"),
    (("--idle_seconds", "--idle-seconds"), "idle_seconds", "S"),
    (("--max_gpu_memory_gib", "--max-gpu-memory-gib"), "max_gpu_memory_gib", "GIB"),
    (("--decode",), "decode", "{eager,graphs,compiled}"),
    (("--ci_target_pts", "--ci-target-pts"), "ci_target_pts", "PTS"),
    (("--max_rounds", "--max-rounds"), "max_rounds", "N"),
    (("--max_minutes", "--max-minutes"), "max_minutes", "MIN"),
    (("--output_dir", "--output-dir"), "output_dir", "DIR"),
    (("--site",), "site", "URL"),
    (("--api_base", "--api-base"), "api_base", "URL"),
)
_SWITCHES: tuple[tuple[tuple[str, ...], str, bool, str], ...] = (
    (("--dry_run", "--dry-run"), "dry_run", True, help_for("dry_run")),
    (
        ("--no_quality_probe", "--no-quality-probe"),
        "quality_probe",
        False,
        "skip the perplexity probe",
    ),
    (("--quiet", "-q"), "quiet", True, help_for("quiet")),
    (("--share",), "share", True, help_for("share")),
    (("--prefetch",), "prefetch", True, help_for("prefetch")),
)


class OneLineParser(argparse.ArgumentParser):
    """Usage mistakes are one `ecocompute: error:` line and exit 2; usage is in --help."""

    def error(self, message: str) -> NoReturn:
        print(
            f"ecocompute: error: {printable(message)} (see `{self.prog} --help`)", file=sys.stderr
        )
        raise SystemExit(2)


def add_run_flags(p: argparse.ArgumentParser, skip: tuple[str, ...] = ()) -> None:
    """energy_estimate's flags (all strings here; params.py converts them)."""
    for names, dest, metavar in _VALUE_FLAGS:
        if dest in skip:
            continue
        text = help_for(dest)
        if "default:" not in text:
            text += f" (default: {FIELDS[dest].default})"
        help_text = text.replace("%", "%%")  # argparse %-formats help
        p.add_argument(*names, dest=dest, metavar=metavar, default=None, help=help_text)
    for names, dest, value, text in _SWITCHES:
        p.add_argument(
            *names, dest=dest, action="store_const", const=value, default=None, help=text
        )


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
