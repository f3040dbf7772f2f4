"""Every committed report's parse answer, and those of edited copies of each older-format
one: a record to diff before and after a change to the readers that claims the same
behaviour (report/read.py, report/checks.py, report/compare.py).

For each committed JSON document with a results block: parse_report's problems; for each
one of an older format (no ecocompute_format), up to 25 of its results' numbers (chosen by a
seed of its path) each edited four ways (x(1+1e-6), x(1+1e-4), x*1.01+0.001, +0.0005) and
the problems of each copy. One JSON line per answer.

    PYTHONPATH=. python benchmarks/parse_answers.py /tmp/after.jsonl
    (cd <checkout before> && PYTHONPATH=. python <this file> /tmp/before.jsonl)
    cmp /tmp/before.jsonl /tmp/after.jsonl
"""

from __future__ import annotations

import copy
import json
import random
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ecocompute.report.read import parse_report

REPO = Path(__file__).resolve().parent.parent
EDITS = (
    ("1e-6", lambda v: v * (1 + 1e-6)),
    ("1e-4", lambda v: v * (1 + 1e-4)),
    ("1pct", lambda v: v * 1.01 + 0.001),
    ("+5e-4", lambda v: v + 0.0005),
)


def numbers(x: Any, path: tuple[Any, ...] = ()) -> Iterator[tuple[Any, ...]]:
    if isinstance(x, dict):
        for k, v in x.items():
            yield from numbers(v, (*path, k))
    elif isinstance(x, list):
        for i, v in enumerate(x):
            yield from numbers(v, (*path, i))
    elif isinstance(x, (int, float)) and not isinstance(x, bool):
        yield path


def edited(doc: dict[str, Any], path: tuple[Any, ...], edit: Any) -> dict[str, Any]:
    out = copy.deepcopy(doc)
    at = out["results"]
    for key in path[:-1]:
        at = at[key]
    at[path[-1]] = edit(at[path[-1]])
    return out


def main() -> int:
    files = sorted(
        p
        for p in REPO.rglob("*.json")
        if not any(part.startswith(".") for part in p.relative_to(REPO).parts)
        and "schema" not in p.name
    )
    count = 0
    with open(sys.argv[1], "w") as out:
        for path in files:
            try:
                doc = json.loads(path.read_text())
            except ValueError:
                continue
            if not isinstance(doc, dict) or "results" not in doc:
                continue
            name = str(path.relative_to(REPO))
            out.write(json.dumps([name, "as committed", parse_report(doc)[1]]) + "\n")
            count += 1
            if doc.get("ecocompute_format") is not None:
                continue
            found = list(numbers(doc["results"]))
            for where in random.Random(name).sample(found, min(25, len(found))):
                for label, edit in EDITS:
                    problems = parse_report(edited(doc, where, edit))[1]
                    out.write(json.dumps([name, label, list(map(str, where)), problems]) + "\n")
                    count += 1
    print(f"{count} answers", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
