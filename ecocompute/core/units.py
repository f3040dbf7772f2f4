"""The one place where units are converted. Names elsewhere carry their unit."""

from __future__ import annotations

MJ_PER_J = 1000.0
MW_PER_W = 1000.0


def mj_to_j(energy_mj: float) -> float:
    return energy_mj / MJ_PER_J


def j_to_mj(energy_j: float) -> float:
    return energy_j * MJ_PER_J


def mw_to_w(power_mw: float) -> float:
    return power_mw / MW_PER_W


def energy_per_token_mj(energy_j: float, tokens: int) -> float:
    """Millijoules per generated token; tokens must be positive."""
    if tokens <= 0:
        raise ValueError(f"tokens must be positive, got {tokens}")
    return j_to_mj(energy_j) / tokens


def pct_change(new: float, base: float) -> float:
    """(new - base) / base in percent; base must be non-zero."""
    if base == 0:
        raise ValueError("percent change against a zero baseline")
    return (new - base) / base * 100.0
