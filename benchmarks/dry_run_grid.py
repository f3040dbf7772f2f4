"""A grid of dry runs (every arch class x FP16/NF4/INT8 x model sizes), one report each.

Used to show that a change leaves the published-path reports as they were (compare two
grids with --strip-timestamps, then `diff -r`); it also says how many pass the published
schema (schema/energy-published.schema.json: what the published container's consumers
accept) and its strict 1.3 schema (schema/energy-published-1.3.schema.json).

    python benchmarks/dry_run_grid.py OUT_DIR [--sizes 0.5,1.1,3,7,13] [--strip-timestamps]

Runs the real CLI in this interpreter (ecocompute.cli.main), one energy_estimate per
point, into OUT_DIR/<arch>-<precision>-<size>b/energy.json.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
from pathlib import Path

ARCHS = ("turing", "ampere", "ada", "hopper", "blackwell", "volta")
PRECISIONS = ("FP16", "NF4", "INT8")


def main() -> int:
    from ecocompute.cli import main as cli_main
    from ecocompute.report.schema import published_13_errors, published_facts_errors

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path)
    parser.add_argument("--sizes", default="0.5,1.1,3,7,13")
    parser.add_argument(
        "--strip-timestamps", action="store_true", help="drop timestamp_utc from each report"
    )
    args = parser.parse_args()
    sizes = [s.strip() for s in args.sizes.split(",") if s.strip()]
    failures = accepted = strict = 0
    for arch in ARCHS:
        for precision in PRECISIONS:
            for size in sizes:
                folder = args.out / f"{arch}-{precision}-{size}b"
                argv = [
                    "energy_estimate",
                    "--dry_run",
                    "--quiet",
                    "--model",
                    f"grid-model-{size}b",
                    "--params_b",
                    size,
                    "--precision",
                    precision,
                    "--gpu_arch",
                    arch,
                    "--output_dir",
                    str(folder),
                ]
                with contextlib.redirect_stdout(io.StringIO()):
                    status = cli_main(argv)
                if status != 0:
                    failures += 1
                    print(f"{folder}: exit {status}", file=sys.stderr)
                    continue
                report = folder / "energy.json"
                doc = json.loads(report.read_text())
                accepted += not published_facts_errors(doc)
                strict += not published_13_errors(doc)
                if args.strip_timestamps:
                    doc.pop("timestamp_utc", None)
                    report.write_text(json.dumps(doc, indent=2) + "\n")
    total = len(ARCHS) * len(PRECISIONS) * len(sizes)
    print(f"{total - failures} of {total} dry runs written under {args.out}")
    print(f"{accepted} of {total} pass the published schema")
    print(f"{strict} of {total} pass the published container's strict 1.3 schema")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
