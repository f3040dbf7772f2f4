"""data/published_reference.json: the datasets' DOIs, the headline card, the published
repeatability, the page's single-card points, the curves kept only for comparison, and
this project's own H200 measurements (project_measurements, not published).

The site's fitted curves and FP16 anchors are not here: they are the site's own file,
data/site/curves.json (site_curves.py).
"""

from __future__ import annotations

import functools
import json
from importlib import resources
from typing import Any

REFERENCE_FILE = "data/published_reference.json"


@functools.cache
def packaged_json(path: str) -> dict[str, Any]:
    """A JSON file of the package (path under ecocompute/), read once."""
    data: dict[str, Any] = json.loads(
        resources.files("ecocompute").joinpath(path).read_text(encoding="utf-8")
    )
    return data


def published() -> dict[str, Any]:
    """The reference data file (and this project's own figures, in project_measurements)."""
    return packaged_json(REFERENCE_FILE)


def dataset_dois() -> list[str]:
    return [source["doi"] for source in published()["sources"]]


def headline() -> dict[str, str]:
    """The published headline card: {"arch": ..., "card": ...}."""
    return dict(published()["headline"])
