"""--share: a link that overlays one report's point on the site's curve.

The point travels inside the link itself (the published container's format): the site
base, then `/?tab=run&overlay=`, then the unpadded base64url of the compact JSON
{"m": model, "N": params_b, "a": arch class, "p": precision, "e": the report's
results.vs_fp16_energy_pct (one decimal, as the published container puts it there),
"b": basis, "g": the card's name: the GPU measured, or for a derived figure the card
whose published measurements it comes from}. Opening the link draws the point in the
browser; nothing is sent anywhere by this tool.

The link is computed from the report before it is validated and written, so
energy.json's share_url and share_url.txt always hold the same link.
"""

from __future__ import annotations

import base64
import json
import urllib.parse
from collections.abc import Mapping
from typing import Any

from ecocompute.core.json_types import JsonObject
from ecocompute.report.model import Report

SHARE_FILE = "share_url.txt"
OVERLAY_PATH = "/?tab=run&overlay="


def overlay_point(report: Report) -> dict[str, str | float | None] | None:
    """The point a link carries, from report fields only; None when the report has no
    delta vs FP16 to draw (basis unavailable)."""
    res, work, sut = report.results, report.workload, report.system_under_test
    if res.vs_fp16_energy_pct is None:
        return None
    card = sut.gpu if res.basis == "measured" else res.reference_card or sut.gpu
    return {
        "m": work.model_name,
        "N": work.params_b,
        "a": sut.gpu_arch,
        "p": work.precision,
        "e": round(float(res.vs_fp16_energy_pct), 2),
        "b": res.basis,
        "g": card,
    }


def encode_overlay(point: Mapping[str, Any]) -> str:
    """Compact JSON, base64url without padding (safe in a query string as is)."""
    compact = json.dumps(point, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(compact).rstrip(b"=").decode("ascii")


def share_url(site: str, point: Mapping[str, Any]) -> str:
    return site.rstrip("/") + OVERLAY_PATH + encode_overlay(point)


def decode_overlay(url: str) -> JsonObject:
    """The point inside a share link. Raises ValueError for a link without a readable
    overlay."""
    values = urllib.parse.parse_qs(urllib.parse.urlsplit(url).query).get("overlay")
    if not values:
        raise ValueError(f"no overlay in {url!r}")
    blob = values[0]
    try:
        raw = base64.urlsafe_b64decode(blob + "=" * (-len(blob) % 4))
        point = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError) as exc:  # binascii.Error is a ValueError
        raise ValueError(f"unreadable overlay in {url!r}: {exc}") from None
    if not isinstance(point, dict):
        raise ValueError(f"the overlay in {url!r} is not a JSON object")
    return point


def with_share_url(report: Report, site: str) -> tuple[Report, str | None]:
    """The report with its share_url set to the link for it, and the link; the report
    unchanged and None when there is no delta to draw."""
    point = overlay_point(report)
    if point is None:
        return report, None
    url = share_url(site, point)
    return report.model_copy(update={"share_url": url}), url
