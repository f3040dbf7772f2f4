"""One report is counted once, however many files hold it.

A copy of a report (`cp -r r r2`, a second download) is the same measurement: pooled
with itself it would read as n = 2 with a spread of zero, and a sweep would fit it as
two points. Reports are the same when their content is: the same document, compared
in a canonical form (keys sorted, no whitespace), so a reformatted copy is the same
report too. The same file named twice never reaches this far (report/finding.py finds
each file once)."""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

REPEATED = "the same report as"  # how a repeat's reason starts (results/aggregate.py)


def content_key(doc: Mapping[str, Any]) -> str:
    """A digest of the document's content, the same for any copy of it."""
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _quick_key(doc: Mapping[str, Any]) -> str:
    """Two documents of the same content have the same quick key (their timestamp and
    results' headline, as text); documents that differ mostly differ in it too, so only
    those that share one are compared in full (content_key: JSON encoding every
    document of a large folder costs more than reading it)."""
    results = doc.get("results")
    head = (
        [results.get(k) for k in ("energy_per_token_mj", "fp16_energy_per_token_mj", "basis")]
        if isinstance(results, Mapping)
        else None
    )
    return repr((doc.get("timestamp_utc"), head))


def repeats(items: Sequence[tuple[Path, Mapping[str, Any]]]) -> dict[int, str]:
    """For each item (path, document) that repeats an earlier one: its index and why,
    naming the first file that holds it."""
    by_quick: dict[str, list[int]] = {}
    for k, (_path, doc) in enumerate(items):
        by_quick.setdefault(_quick_key(doc), []).append(k)
    found: dict[int, str] = {}
    for group in by_quick.values():
        if len(group) < 2:
            continue
        first: dict[str, Path] = {}
        for k in group:
            path, doc = items[k]
            key = content_key(doc)
            if key in first:
                found[k] = f"{REPEATED} {first[key]} (identical content): counted once"
            else:
                first[key] = path
    return found
