"""Installed package versions, read from package metadata (never by importing them)."""

from __future__ import annotations

from importlib import metadata


def installed_version(name: str) -> str | None:
    """The installed distribution's version, or None when it is not installed."""
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None
