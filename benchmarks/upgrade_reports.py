"""Rewrite ecocompute-energy/1.2 reports in the current format, in place (atomically),
and leave out the quality block's null text fields of 1.3 reports written by ecocompute
0.3.0 (the published schema types them as strings: null is refused there).

The numbers stay as they were; see ecocompute/results/upgrade.py for what moves where.
Used on docs/validation when the format became 1.3 (1.1-compatible), and again when
reports were made to pass the published schema (issue 19):

    python benchmarks/upgrade_reports.py docs/validation

Prints one line per file: upgraded, null text left out, already current, or why not.
"""

from __future__ import annotations

import argparse
import json
import sys

from ecocompute.results.upgrade import PREVIOUS, upgrade, without_empty_text

from ecocompute.report.atomic import write_text_atomic
from ecocompute.report.files import files_under, read_document
from ecocompute.report.schema import validation_errors


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    args = parser.parse_args()
    status = 0
    for path in files_under(args.paths, ("energy.json",)):
        doc, problems = read_document(path)
        if doc is None or validation_errors(doc):
            print(f"{path}: not a valid report, left alone {problems[:1]}")
            status = 1
            continue
        new = without_empty_text(upgrade(doc))
        if new is doc:
            print(f"{path}: already {doc.get('schema_version')}")
            continue
        problems = validation_errors(new)
        if problems:
            print(f"{path}: upgrade would be invalid, left alone: {problems[:3]}")
            status = 1
            continue
        write_text_atomic(path, json.dumps(new, indent=2) + "\n", create_dir=False)
        what = f"upgraded from {PREVIOUS}" if doc.get("schema_version") == PREVIOUS else ""
        print(f"{path}: {what or 'null quality text fields left out'}")
    return status


if __name__ == "__main__":
    sys.exit(main())
