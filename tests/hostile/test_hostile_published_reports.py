"""Reports in the published format, bent out of shape (issue 20, cause 6): one reader
turns an accepted report into one typed record, refusing what it cannot, so validate
and every consumer (aggregate, plot, check, sweep --fit_only) agree on every file, and
none of them ends in an internal error.

On ecocompute 0.3.0 validate said "valid" to each of these, and then aggregate, plot,
check or sweep --fit_only failed with an internal error (a missing results.basis, an
interval of one element or of strings, a string count or delta, a list where an object
goes), validate itself crashed on a string per_format, and an unknown basis passed.
"""

from __future__ import annotations

import copy
from collections.abc import Callable
from typing import Any

import pytest

from ecocompute.cli import main
from ecocompute.results.collect import Invalid, read_one

from ..published_reports import measured_report, write

Doc = dict[str, Any]


def _set(*keys: str, value: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        node = doc
        for key in keys[:-1]:
            node = node[key]
        node[keys[-1]] = value

    return mutate


def _drop(*keys: str) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        node = doc
        for key in keys[:-1]:
            node = node[key]
        del node[keys[-1]]

    return mutate


def _trials_and(per_format: Any) -> Callable[[Doc], None]:
    def mutate(doc: Doc) -> None:
        doc["results"].update(trials=[{"index": 0, "format": "NF4"}], per_format=per_format)

    return mutate


def _no_gpu(mutate: Callable[[Doc], None]) -> Callable[[Doc], None]:
    """The mutation, on a no-GPU report (a derived figure: no total energy) instead."""

    def on_no_gpu(doc: Doc) -> None:
        for key in ("total_energy_joules", "tokens_generated", "avg_power_watts"):
            doc["results"].pop(key)
        doc["results"].update(throughput_tokens_per_s=None, basis="interpolated")
        doc["measurement_source"] = "ecocompute-dataset (no local GPU)"
        del doc["quality"]
        del doc["software"]["matches_reference_pins"]  # no kernels ran: nothing to match
        mutate(doc)

    return on_no_gpu


# (name, mutation, whether the published format accepts the result)
ATTACKS = [
    ("no results.basis", _drop("results", "basis"), False),
    ("no basis, no GPU", _no_gpu(_drop("results", "basis")), False),
    ("an unknown basis", _set("results", "basis", value="guessed"), False),
    ("an unknown basis, no GPU", _no_gpu(_set("results", "basis", value="guessed")), False),
    ("a string delta", _set("results", "vs_fp16_energy_pct", value="0.8"), False),
    ("a list for software", _set("software", value=[]), False),
    ("a list for results", _set("results", value=[1, 2]), False),
    ("a list for quality", _set("quality", value=[]), False),
    ("a string count of GPUs", _set("system_under_test", "accelerator_count", value="1"), False),
    # fields of ours in a published-format report: never read, so never trusted
    ("an interval of one element", _set("results", "vs_fp16_ci95_pct", value=[1.0]), True),
    ("an interval of strings", _set("results", "vs_fp16_ci95_pct", value=["a", "b"]), True),
    ("a string count of pairs", _set("results", "n_pairs", value="3"), True),
    ("a string 3-decimal delta", _set("results", "vs_fp16_energy_pct_3dp", value="x"), True),
    ("a list for per_format", _set("results", "per_format", value=[1]), True),
    ("trials and a string per_format", _trials_and("x"), True),
    ("trials and a list per_format", _trials_and([{}]), True),
    ("a number for trials", _set("results", "trials", value=5), True),
    ("a list for decode", _set("measurement", "decode", value=[]), True),
    ("a number for gpus", _set("system_under_test", "gpus", value=5), True),
    ("a string verdict list", _set("results", "verdict", value=["saves"]), True),
    ("a list for reference_curve", _set("results", "reference_curve", value=[1]), True),
]


def _base() -> Doc:
    """A measured 1.1 report that also holds every field 0.3.0's rebuilt 1.1 schema
    required (the published format allows them), so that 0.3.0 called it valid too."""
    doc = measured_report()
    doc["share_url"] = None
    doc["software"]["comparability_note"] = "same protocol and versions only"
    doc["provenance"].update(
        rtx4090_deep_dive_doi="10.5281/zenodo.22037483", paper_ssrn="ssrn", code="container"
    )
    return doc


def _attacked(mutate: Callable[[Doc], None]) -> Doc:
    doc = _base()
    mutate(doc)
    return doc


def _run(capsys, *argv: str) -> tuple[int, str]:
    status = main(list(argv))
    captured = capsys.readouterr()
    text = captured.out + captured.err
    assert "internal error" not in text and "Traceback" not in text, (argv, text)
    return status, text


@pytest.mark.parametrize(("name", "mutate", "accepted"), ATTACKS, ids=[a[0] for a in ATTACKS])
def test_validate_and_every_consumer_agree_without_an_internal_error(
    tmp_path, capsys, name, mutate, accepted
):
    path = write(_attacked(mutate), tmp_path / "r")
    status, text = _run(capsys, "validate", str(path))
    assert (status == 0) is accepted, text
    one = read_one(path)
    assert isinstance(one, Invalid) is not accepted  # validate's verdict is the reader's
    if accepted:
        # a published report is one run: whatever of ours it carries, no interval, n = 1
        assert one.ci95_pct is None and one.n_pairs is None and one.verdict is None
        assert one.delta_pct == 0.8 and one.measured and one.protocol == "256 tok, batch 1"

    status, text = _run(capsys, "aggregate", str(tmp_path))
    assert status == (0 if accepted else 1)
    assert ("skipped 1 invalid file(s)" in text) is not accepted

    status, text = _run(capsys, "check", str(path))
    assert status == (0 if accepted else 2), text

    pytest.importorskip("matplotlib")
    status, text = _run(capsys, "plot", str(tmp_path), "-o", str(tmp_path / "c.png"))
    assert status == (0 if accepted else 2), text

    pytest.importorskip("scipy")
    status, text = _run(capsys, "sweep", "--fit_only", "--output_dir", str(tmp_path))
    assert status == (0 if accepted else 2), text


def test_the_reader_refuses_what_it_cannot_type_in_our_own_format(tmp_path):
    """Our format's schema is strict; the reader still checks every field it uses, so
    a consumer never gets a value of the wrong type even from a document that reached
    it some other way (sweep and fleet hand it the report they just wrote)."""
    from ecocompute.results.record import to_record

    from ..made_reports import measured

    doc = measured()
    record, problems = to_record(tmp_path / "energy.json", doc)
    assert record is not None and problems == []
    assert record.ci95_pct is not None and record.n_pairs == 10
    for bad, where in (
        ({"vs_fp16_ci95_pct": [1.0]}, "$.results.vs_fp16_ci95_pct"),
        ({"vs_fp16_ci95_pct": [2.0, 1.0]}, "$.results.vs_fp16_ci95_pct"),
        ({"n_pairs": "3"}, "$.results.n_pairs"),
        ({"vs_fp16_energy_pct_3dp": "x"}, "$.results.vs_fp16_energy_pct_3dp"),
        ({"basis": "guessed"}, "$.results.basis"),
        ({"per_format": {"NF4": "x", "FP16": {}}}, "$.results.per_format.NF4"),
    ):
        broken = copy.deepcopy(doc)
        broken["results"].update(bad)
        record, problems = to_record(tmp_path / "energy.json", broken)
        assert record is None and any(p.startswith(where) for p in problems), (bad, problems)
