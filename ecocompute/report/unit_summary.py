"""The summary's lines on which unit of the card was measured and the state it was in.

A report's interval holds for this one card (and one compile); units of one card model
differ (docs/units.md), so a measured summary names the unit: the tail of its NVML UUID,
its board part number and VBIOS, its idle power before the session, and every window
that ran throttled.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ecocompute.monitor.conditions import throttle_words

UUID_TAIL = 12  # characters of the UUID's last group: enough to tell units apart


def uuid_tail(uuid: str | None) -> str | None:
    """ "GPU-1af0ae31-...-bebcef2e2e82" -> "bebcef2e2e82" """
    if not uuid:
        return None
    return uuid.rsplit("-", 1)[-1][-UUID_TAIL:]


def unit_words(gpu: Mapping[str, Any]) -> str:
    """One GPU of a measured report as the summary names it."""
    parts = [f"...{uuid_tail(gpu.get('uuid'))}"]
    details = []
    if gpu.get("board_part_number"):
        details.append(f"board {gpu['board_part_number']}")
    if gpu.get("vbios_version"):
        details.append(f"VBIOS {gpu['vbios_version']}")
    before = gpu.get("before_session") or {}
    if before.get("idle_power_watts") is not None:
        idle = f"idle {before['idle_power_watts']:.0f} W before loading"
        if before.get("temperature_c") is not None:
            idle += f" at {before['temperature_c']:.0f} C"
        details.append(idle)
    if details:
        parts.append(f"({', '.join(details)})")
    return " ".join(parts)


def unit_lines(report: Mapping[str, Any]) -> list[str]:
    """The unit line(s) and the throttle line of a measured report; none otherwise."""
    if report["results"].get("basis") != "measured":
        return []
    gpus = report["system_under_test"].get("gpus") or []
    lines = []
    if gpus:
        units = "; ".join(unit_words(g) for g in gpus)
        lines.append(f"  unit       {units}: figures for this card, not the card model")
    conditions = report["results"].get("conditions")
    if conditions:
        lines.append(f"  throttle   {throttle_line(conditions)}")
    return lines


def throttle_line(conditions: Mapping[str, Any]) -> str:
    """How many windows ran throttled and why, or that none did; the highest power."""
    per = conditions.get("per_format") or {}
    peak = [s["power_of_limit_pct_max"] for s in per.values() if s.get("power_of_limit_pct_max")]
    peak_words = f"; power at most {max(peak):.0f}% of the limit" if peak else ""
    if not conditions["throttled_windows"]:
        return f"no window met the power cap or a slowdown{peak_words}"
    parts = [
        f"{fmt} {s['throttled_windows']} of {s['windows']} windows "
        f"({throttle_words(s['throttles'])})"
        for fmt, s in per.items()
        if s["throttled_windows"]
    ]
    return "; ".join(parts) + f"{peak_words}; the figures include them"
