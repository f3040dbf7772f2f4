"""Files that ship inside the wheel but live at the repository's top in a checkout
(the schemas, the container image's lock): one lookup for both places."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

_CHECKOUT = Path(__file__).resolve().parents[2]


def packaged_text(name: str) -> str | None:
    """ecocompute/<name> as shipped in the wheel, else <checkout>/<name>; None when
    neither exists."""
    shipped = resources.files("ecocompute").joinpath(name)
    if shipped.is_file():
        return shipped.read_text(encoding="utf-8")
    checkout = _CHECKOUT / name
    return checkout.read_text(encoding="utf-8") if checkout.is_file() else None
