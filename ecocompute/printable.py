"""Text from outside (paths, file contents, library messages) made safe to print as part
of one line: control characters (a newline in a file name) and characters that cannot
be encoded (a lone surrogate from an undecodable file name) are shown as escapes."""

from __future__ import annotations


def printable(text: object) -> str:
    """str(text) with every non-printable character written as its Python escape."""
    raw = str(text)
    if raw.isprintable():
        return raw
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in raw)
