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
from typing import Any

SHARE_FILE = "share_url.txt"
OVERLAY_PATH = "/?tab=run&overlay="


def overlay_point(report: dict[str, Any]) -> dict[str, Any] | None:
    """The point a link carries, from report fields only; None when the report has no
    delta vs FP16 to draw (basis unavailable)."""
    res = report["results"]
    delta = res.get("vs_fp16_energy_pct")
    if delta is None:
        return None
    work, sut = report["workload"], report["system_under_test"]
    card = sut["gpu"] if res["basis"] == "measured" else res.get("reference_card") or sut["gpu"]
    return {
        "m": work["model_name"],
        "N": work["params_b"],
        "a": sut["gpu_arch"],
        "p": str(work["precision"]),
        "e": round(float(delta), 2),
        "b": res["basis"],
        "g": card,
    }


def encode_overlay(point: dict[str, Any]) -> str:
    """Compact JSON, base64url without padding (safe in a query string as is)."""
    compact = json.dumps(point, separators=(",", ":")).encode("utf-8")
    return base64.urlsafe_b64encode(compact).rstrip(b"=").decode("ascii")


def share_url(site: str, point: dict[str, Any]) -> str:
    return site.rstrip("/") + OVERLAY_PATH + encode_overlay(point)


def decode_overlay(url: str) -> dict[str, Any]:
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


def attach_share_url(report: dict[str, Any], site: str) -> str | None:
    """Set report["share_url"] to the link for this report and return it; leave it null
    and return None when there is no delta to draw."""
    point = overlay_point(report)
    if point is None:
        return None
    url = share_url(site, point)
    report["share_url"] = url
    return url
