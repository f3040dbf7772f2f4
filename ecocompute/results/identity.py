"""One report is counted once, however many files hold it.

A copy of a report (`cp -r r r2`, a second download) is the same measurement: pooled
with itself it would read as n = 2 with a spread of zero, and a sweep would fit it as
two points. Reports are the same when their content is: the same document, compared
in a canonical form (keys sorted, no whitespace), so a reformatted copy is the same
report too. The same file named twice never reaches this far (boundary/finding.py finds
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


def repeats(items: Sequence[tuple[Path, str]]) -> dict[int, str]:
    """For each item (path, content_key of its document) that repeats an earlier one: its
    index and why, naming the first file that holds it."""
    first: dict[str, Path] = {}
    found: dict[int, str] = {}
    for k, (path, key) in enumerate(items):
        if key in first:
            found[k] = f"{REPEATED} {first[key]} (identical content): counted once"
        else:
            first[key] = path
    return found
