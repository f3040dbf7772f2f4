"""An older report of ours in today's published envelope, and back again (issue 29).

`ecocompute upgrade` (report/upgrade.py) copies a report of this tool's 1.2, 1.3 or 1.4
under the names the published container's strict 1.3 schema takes (to_current):
schema_version ecocompute-energy/1.3 and benchmark ecocompute-energy-methodology, plus
the records of Protocol v1.1 its validator reads, where the old report already states
them elsewhere: greedy decoding (measurement.decode) as workload.decoding, the decode
window its energies integrate (measurement.method) as measurement.window "generation".
Every other field, every figure among them, is the file's. provenance.upgraded_from
names the format it came from as this tool names its formats (schema.older_format:
"ecocompute ecocompute-energy/1.4"), ahead of any earlier upgrade the file recorded
("ecocompute ecocompute-energy/1.3 < ecocompute-energy/1.2": a 1.3 file that was a 1.2
one). That name is what tells a copy from the container's own 1.3, and from an old 1.3
of ours whose bare "ecocompute-energy/1.2" says only that it once was a 1.2.

The reader (report/read.py) takes such a copy back to its source (source_of) and reads
that as ours, against its own format's schema and within its rounding: a figure edited
in the copy is refused as it would be in the source, and so is a record (decoding,
window) that its source does not state.
"""

from __future__ import annotations

from typing import Any

from ecocompute.core.json_types import JsonObject, json_copy
from ecocompute.report.legacy import recorded_records
from ecocompute.report.model import BENCHMARK, LEGACY_BENCHMARK, SCHEMA_VERSION
from ecocompute.report.schema import LEGACY_SCHEMAS

CHAIN = " < "  # upgraded_from "A < B": upgraded from A, which was itself upgraded from B
OURS = "ecocompute "  # the name of an older format of ours: "ecocompute " + its version
# The fields to_current adds (none of our older formats' schemas allows them).
ADDED = (("workload", "decoding"), ("measurement", "window"))


# quality's texts, which our 1.3 and 1.4 may hold as null and the published 1.3 schema
# allows only as strings (absent where there is none)
TEXTS_NOT_NULL = ("note", "delta_note", "error")


def to_current(doc: JsonObject) -> JsonObject:
    """A valid report of one of our older formats (the caller read it) in today's
    published envelope; the document itself is untouched."""
    version = str(doc["schema_version"])
    new = json_copy(doc)
    new["schema_version"], new["benchmark"] = SCHEMA_VERSION, BENCHMARK
    provenance = _section(new, "provenance")  # every older format of ours requires it
    earlier = provenance.get("upgraded_from")
    name = OURS + version
    provenance["upgraded_from"] = f"{name}{CHAIN}{earlier}" if earlier else name
    for (block, key), value in recorded_records(doc).items():
        _section(new, block)[key] = value
    quality = new.get("quality")
    if isinstance(quality, dict):  # our older formats allow a null text; the published, none
        for key in TEXTS_NOT_NULL:
            if key in quality and quality[key] is None:
                del quality[key]
    return new


def _section(doc: JsonObject, block: str) -> JsonObject:
    """The object at doc[block] (a valid report of ours has it), to edit in place."""
    section = doc[block]
    if not isinstance(section, dict):
        raise ValueError(f"$.{block} is not an object")
    return section


def upgraded_source(document: JsonObject) -> str | None:
    """The older format of ours that a copy made by to_current came from; None for any
    other document (format 2.0 names ecocompute_format, and the published container's
    1.3 names no upgraded_from of ours)."""
    if "ecocompute_format" in document:
        return None
    if document.get("schema_version") != SCHEMA_VERSION or document.get("benchmark") != BENCHMARK:
        return None
    provenance = document.get("provenance")
    chain = provenance.get("upgraded_from") if isinstance(provenance, dict) else None
    if not isinstance(chain, str):
        return None
    first = chain.split(CHAIN, 1)[0]
    version = first.removeprefix(OURS)
    return version if first == OURS + version and version in LEGACY_SCHEMAS else None


def source_of(document: JsonObject) -> tuple[JsonObject, list[str]]:
    """(the report a copy was made from, why the copy is not what to_current makes of
    it: empty when it is), for a document upgraded_source names."""
    version = upgraded_source(document)
    if version is None:
        raise ValueError("not an upgraded copy")
    old = json_copy(document)
    old["schema_version"], old["benchmark"] = version, LEGACY_BENCHMARK
    provenance = _section(old, "provenance")
    earlier = str(provenance["upgraded_from"]).partition(CHAIN)[2]
    if earlier:
        provenance["upgraded_from"] = earlier
    else:
        del provenance["upgraded_from"]
    for block, key in ADDED:
        section = old.get(block)
        if isinstance(section, dict):
            section.pop(key, None)
    stated = recorded_records(old)
    problems = [
        f"$.{block}.{key}: {_shown(_at(document, block, key))}, but the {version} report it "
        f"was upgraded from states {_shown(stated.get((block, key)))}"
        for block, key in ADDED
        if _at(document, block, key) != stated.get((block, key))
    ]
    return old, problems


def _at(document: JsonObject, block: str, key: str) -> Any:
    section = document.get(block)
    return section.get(key) if isinstance(section, dict) else None


def _shown(value: Any) -> str:
    return "none" if value is None else repr(value)
