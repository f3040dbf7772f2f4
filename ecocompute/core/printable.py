"""Text from outside (paths, file contents, library messages) made safe to print as part
of one line: control characters (a newline in a file name) and characters that cannot
be encoded (a lone surrogate from an undecodable file name) are shown as escapes.

A Linux file name may hold bytes that are not UTF-8; Python reads them (from argv, from
the file system) as lone surrogates, which no report, JSON consumer or UTF-8 terminal
can take. recordable() keeps such bytes as \\xNN escapes: the text a report records
and a line prints for a path the user gave."""

from __future__ import annotations


def is_text(text: str) -> bool:
    """Whether text is valid Unicode throughout (no lone surrogate)."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def recordable(text: str) -> str:
    """text, with the bytes of an undecodable name (lone surrogates) as \\xNN escapes."""
    if is_text(text):
        return text
    try:
        raw = text.encode("utf-8", "surrogateescape")  # the name's own bytes
    except UnicodeEncodeError:  # a surrogate that stands for no byte (JSON's \\ud800)
        return text.encode("utf-8", "backslashreplace").decode("utf-8")
    return raw.decode("utf-8", "backslashreplace")


def printable(text: object) -> str:
    """str(text) with every non-printable character written as its Python escape (and
    the bytes of an undecodable name as \\xNN)."""
    raw = recordable(str(text))
    if raw.isprintable():
        return raw
    return "".join(ch if ch.isprintable() else repr(ch)[1:-1] for ch in raw)
