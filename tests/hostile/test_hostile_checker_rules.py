"""The checker's rules that nothing derives, each forged once on a committed report: a
mutation test found each of them could be deleted with no test failing (and the writer's
own check with them)."""

from __future__ import annotations

import copy
import json

import pytest

from ecocompute.errors import ReportInvalid
from ecocompute.report.read import energy_report_problems
from ecocompute.report.write import write_report

from ..conftest import REPO
from ..made_reports import _v2_base

VALIDATION = REPO / "docs" / "validation"
EAGER = VALIDATION / "h200-real-weights" / "nf4" / "energy.json"
PHASES = VALIDATION / "h200-map-whole/phases-b1/p1024/synthetic-llama-2-7b-b1/NF4/energy.json"
GRAPHS = VALIDATION / "h100-units" / "12540358f057" / "session" / "FP8" / "energy.json"  # 2.0
COMPILED = VALIDATION / "h200-compiled" / "7b-b1" / "compiled-7b" / "INT4" / "energy.json"  # 1.4


def _forged(path, edit):
    doc = json.loads(path.read_text())
    assert energy_report_problems(doc) == []  # as committed
    edit(doc)
    return energy_report_problems(doc)


def _same_index(doc):
    doc["results"]["trials"][1]["index"] = doc["results"]["trials"][0]["index"]


def _sampled_with_a_counter(doc):
    t = doc["results"]["trials"][0]
    t["energy_source"], t["energy_joules"] = "sampled_power", t["sampled_energy_joules"]


def _prefill_prompt(doc):
    doc["results"]["trials"][0]["prefill"]["prompt_tokens"] += 1


def _prefill_gpus(doc):
    doc["results"]["trials"][0]["prefill"]["per_gpu_energy_joules"][0] *= 1.01


def _prefill_on_a_together_run(doc):
    doc["measurement"]["decode"]["phases"] = "together"


def _regime(regime):
    """Another regime's label on a report's decode record (its units would pool there)."""

    def edit(doc):
        doc["measurement"]["decode"]["regime"] = regime

    return edit


def _no_graph_captured(doc):
    del doc["measurement"]["decode"]["graph_captured"]


def _params_b(size):
    """A size its stated source (the model name) does not give: plotted and graded at it."""

    def edit(doc):
        doc["workload"]["params_b"] = size

    return edit


@pytest.mark.parametrize(
    ("path", "edit", "says"),
    [
        (EAGER, _same_index, "$.results.trials: two trials share an index"),
        (EAGER, _sampled_with_a_counter, "but it has no counter"),
        (PHASES, _prefill_prompt, ".prefill.prompt_tokens: "),
        (PHASES, _prefill_gpus, ".prefill.energy_joules: "),
        (PHASES, _prefill_on_a_together_run, "present, but measurement.decode.phases is not"),
        (GRAPHS, _regime("eager"), "$.measurement.decode.regime: 'eager', but its record is"),
        (COMPILED, _regime("eager"), "$.measurement.decode.regime: 'eager', but its record is"),
        (COMPILED, _regime("graphs"), "$.measurement.decode.compiler: present, but the regime"),
        (GRAPHS, _regime("compiled"), "$.measurement.decode.compiler: absent, but the regime"),
        (GRAPHS, _no_graph_captured, "$.measurement.decode.graph_captured: absent, but"),
        (GRAPHS, _params_b(70.0), "params_b: 70.0, but its source, the model name 'synthetic:"),
        (EAGER, _params_b(1.35), "params_b: 1.35, but its source, the model name '/tmp/Smol"),
    ],
)
def test_each_rule_refuses_its_forgery(path, edit, says):
    problems = _forged(path, edit)
    assert any(says in p for p in problems), problems


def test_a_derived_reports_size_is_the_one_its_model_name_states():
    import ecocompute

    doc = ecocompute.estimate("synthetic:llama-2-7b", dry_run=True, gpu_arch="hopper").report
    doc = doc.model_dump(mode="json")
    assert doc["workload"]["params_b_source"] == "model name"
    assert energy_report_problems(doc) == []
    doc["workload"]["params_b"] = 7.1
    assert (
        "$.workload.params_b: 7.1, but its source, the model name 'synthetic:llama-2-7b', "
        "states 7" in energy_report_problems(doc)
    )


def test_the_writer_refuses_a_report_whose_arithmetic_its_own_check_refuses(tmp_path):
    """A report the model takes but whose trial does not add up to its counter: written,
    the file would be one validate refuses. The writer checks the text it writes."""
    doc = json.loads(_v2_base())
    forged = copy.deepcopy(doc)
    trial = forged["results"]["trials"][0]
    trial["energy_joules"] *= 1.5
    with pytest.raises(ReportInvalid, match="energy_joules"):
        write_report(forged, tmp_path)
    assert list(tmp_path.iterdir()) == []
    assert write_report(doc, tmp_path).is_file()  # the same report unforged is written
