"""One report is counted once, however many files hold it.

A copy of a report (`cp -r r r2`, a second download) is the same measurement: pooled
with itself it would read as n = 2 with a spread of zero, and a sweep would fit it as
two points. Reports are the same when their content is: the same document, compared
in a canonical form (keys sorted, no whitespace), so a reformatted copy is the same
report too. A measured report is also the same as any other holding the same
measurement, whatever else differs (an `upgrade`d copy in another format, a timestamp
edited, its trials listed in another order, the GPU's UUID edited): the same format of
one model on one card model, in trials of the same readings (two GPUs never read the
same: report/checks.py refuses repeated readings within one report), or, for one run
without trials (the published container's), the same figures. The same file named
twice never reaches this far (boundary/finding.py finds each file once)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPEATED = "the same report as"  # how a repeat's reason starts (results/aggregate.py)


def content_key(doc: Mapping[str, Any]) -> str:
    """A digest of the document's content, the same for any copy of it."""
    return _digest(doc)


def measurement_key(doc: Mapping[str, Any], what: str) -> str:
    """A digest of what a measured report measured (what: its card, model, format and
    protocol, as its record names them), the same for every copy of one measurement:
    its trials' readings in any order (energy to 0.01 J and duration to 1 ms, the
    coarsest any of this tool's formats stores: a copy in an older format rounds them),
    or, without trials, its results' figures (energies, totals, speeds; not its note).
    Prefixed with what it compares ("trials:", "figures:")."""
    results = doc.get("results")
    results = results if isinstance(results, Mapping) else {}
    trials = results.get("trials")
    if not trials or not isinstance(trials, list):
        figures = {k: v for k, v in results.items() if isinstance(v, (int, float))}
        return "figures:" + _digest([what, figures])
    readings = sorted(
        (
            (t.get("format"), t.get("pair"), t.get("tokens"), _rounded(t.get("energy_joules"), 2),
             _rounded(t.get("duration_s"), 3))
            for t in trials
            if isinstance(t, Mapping)
        ),
        key=str,
    )  # fmt: skip
    return "trials:" + _digest([what, readings])


def _rounded(value: object, places: int) -> object:
    return round(value, places) if isinstance(value, float) else value


def _digest(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def repeats(items: Sequence[tuple[Path, str, str]]) -> dict[int, str]:
    """For each item (path, its key: the measurement_key of a measured report, else the
    content_key; the content_key) that repeats an earlier one: its index and why, naming
    the first file that holds it."""
    first: dict[str, tuple[Path, str]] = {}
    found: dict[int, str] = {}
    for k, (path, key, content) in enumerate(items):
        if key in first:
            earlier, earlier_content = first[key]
            how = (
                "identical content"
                if content == earlier_content
                else f"the same measurement: one format, the same {key.split(':')[0]}"
            )
            found[k] = f"{REPEATED} {earlier} ({how}): counted once"
        else:
            first[key] = (path, content)
    return found
