"""A measured unit beside its card model: where this project measured units of the card
in the run's regime, at its size and batch size, the report holds their spread
(results.reference_units) and says where this unit lies among them."""

from __future__ import annotations

import contextlib
import copy
from collections.abc import Iterator

import pytest

from ecocompute.published import project
from ecocompute.published.project import card_model_spread
from ecocompute.report.checks import report_problems
from ecocompute.report.model import Report
from ecocompute.report.references import beside_unit
from ecocompute.report.results_model import ReferenceUnits
from ecocompute.summary.report import render

from ..fakes import FakeTelemetry, fake_devices, small_nf4_report

L7 = "synthetic:llama-2-7b"  # the model of every unit this project measured


def _measured(name: str = "NVIDIA H200", **flags: str) -> dict:
    return small_nf4_report(open_telemetry=lambda: FakeTelemetry(fake_devices(1, name)), **flags)


@contextlib.contextmanager
def _tiny_as_units() -> Iterator[None]:
    """The committed units are of synthetic:llama-2-7b, more than the CPU stand-ins can
    run: here the tiny model's runs stand for it, the units' blocks renamed to it."""
    real = project.project_measurements

    def renamed(arch: str) -> dict | None:
        own = copy.deepcopy(real(arch))
        blocks = [own["unit_spread_pct"]] if own else []
        blocks += [b for bs in (own or {}).get("regime_unit_spread_pct", {}).values() for b in bs]
        for b in blocks:
            b["model_name"] = "synthetic:tiny-test"
        return own

    with pytest.MonkeyPatch.context() as m:
        m.setattr(project, "project_measurements", renamed)
        yield


@pytest.fixture(scope="module")
def at_7b() -> dict:
    """An eager NF4 run on a fake H200 that says it is of 7B, 256 tokens a run (the
    units' size and length)."""
    with _tiny_as_units():
        return _measured(params_b="7", tokens="256")


def test_a_unit_at_the_units_size_states_their_spread_and_where_it_lies(at_7b):
    res = at_7b["results"]
    units = res["reference_units"]
    eager = card_model_spread("hopper", "NF4", "eager", "NVIDIA H200", L7, 7.0, 1, 256)
    assert (
        eager is not None and units["source"] == eager.source == "docs/validation/h200-eager-units"
    )
    assert (units["card"], units["regime"], units["precision"]) == ("NVIDIA H200", "eager", "NF4")
    assert units["pooled_pct"] == eager.pooled_pct and units["n_units"] == eager.n_units
    assert "Between units of this card model: NF4 over 6 NVIDIA H200 units (eager" in res["note"]
    # the fakes' FP16 (about 0.7 J a token) lies far below the H200 units' 4.6-5.9 J
    text = render(at_7b, "x/energy.json")
    assert "  units      NF4 over 6 NVIDIA H200 units (eager" in text
    assert "  caution    this unit's" in text
    assert "below their FP16 prediction interval [4,153, 6,894]" in text
    # the fakes' stack is not the units': said as a cause beside the unit and its host
    assert "; its software (" in text and "nvidia_driver 580.00.00-fake" in text
    assert ": not the units') or something of this unit or its host sets it apart" in text
    assert report_problems(Report.model_validate(at_7b)) == []


def test_no_units_stand_beside_another_size_another_card_or_a_card_never_measured():
    with _tiny_as_units():
        assert "reference_units" not in _measured()["results"]  # tiny-test: not 7B
        assert "reference_units" not in _measured(params_b="7")["results"]  # 4 tokens a run
        h100 = _measured("NVIDIA H100 80GB HBM3", params_b="7", tokens="256")  # no eager units
    assert "reference_units" not in h100["results"]
    assert card_model_spread("hopper", "NF4", "eager", "NVIDIA H200", L7, 7.0, 4, 256) is None
    assert card_model_spread("hopper", "NF4", "eager", "NVIDIA H200", L7, 13.0, 1, 256) is None
    assert card_model_spread("hopper", "NF4", "eager", "NVIDIA H200", L7, 7.0, 1, 64) is None
    h100 = "NVIDIA H100 80GB HBM3"
    h100_graphs = card_model_spread("hopper", "NF4", "graphs", h100, L7, 7.0, 1, 256)
    h200_graphs = card_model_spread("hopper", "NF4", "graphs", "NVIDIA H200", L7, 7.0, 1, 256)
    assert h100_graphs is not None and h100_graphs.card == "NVIDIA H100 80GB HBM3"
    assert h200_graphs is not None and h200_graphs.card == "NVIDIA H200"
    assert card_model_spread("hopper", "NF4", "graphs", "NVIDIA H20", L7, 7.0, 1, 256) is None
    # another card of the model's name: other power and memory, not the units' SXM boards
    for other in ("NVIDIA H100 PCIe", "NVIDIA H100 NVL", "NVIDIA H200 NVL"):
        assert card_model_spread("hopper", "NF4", "graphs", other, L7, 7.0, 1, 256) is None
    assert card_model_spread("hopper", "NF4", "eager", "NVIDIA H200 NVL", L7, 7.0, 1, 256) is None
    a100 = "NVIDIA A100-SXM4-80GB"
    assert card_model_spread("ampere", "NF4", "eager", a100, L7, 7.0, 1, 256) is None


@pytest.mark.parametrize(
    ("renamed", "flags", "beside"),
    [
        (False, {}, False),  # tiny-test: another model than the units'
        (True, {"prompt_tokens": "16"}, False),  # its own prompt length
        (True, {"decode": "graphs", "phases": "apart"}, False),  # its phases apart
        (True, {"decode": "graphs"}, True),  # the units' model, prompt and whole windows
    ],
)
def test_no_units_stand_beside_another_model_prompt_or_phases(renamed, flags, beside):
    """A review (2026-12-06): a run of another model said to be of 7B, and one with its
    own prompt length or its phases apart, was set beside the units of synthetic
    Llama-2-7B's 12-token prompt in whole windows."""
    with _tiny_as_units() if renamed else contextlib.nullcontext():
        doc = _measured(params_b="7", tokens="256", **flags)
    assert ("reference_units" in doc["results"]) is beside


def test_a_units_block_beside_a_chosen_prompt_is_refused(at_7b):
    chose = copy.deepcopy(at_7b)
    chose["workload"]["prompt_source"] = "prompt_tokens"
    problems = report_problems(Report.model_validate(chose))
    assert any("units of the published prompt in whole windows" in p for p in problems), problems


@pytest.mark.parametrize(
    ("flags", "units"),
    [
        ({}, True),  # LLM.int8() at its default threshold 6: the units' INT8
        ({"llm_int8_threshold": "0"}, False),  # pure INT8: another kernel path
        ({"backend": "torchao"}, False),  # torchao's weight-only INT8
    ],
)
def test_int8_units_stand_only_beside_their_own_int8(flags, units):
    """A review (2026-12-06): a threshold-0 run was set beside the threshold-6 units
    (+159%) and told that something of its unit sets it apart."""
    with _tiny_as_units():
        doc = _measured(params_b="7", tokens="256", precision="INT8", **flags)
    assert ("reference_units" in doc["results"]) is units
    if units:  # the same block is refused beside another INT8
        assert report_problems(Report.model_validate(doc)) == []
        doc["workload"]["llm_int8_threshold"] = 0.0
        problems = report_problems(Report.model_validate(doc))
        said = "reference_units.precision: 'INT8', but the report is of INT8 (threshold 0)"
        assert any(said in p for p in problems), problems


@pytest.mark.parametrize(
    ("edit", "says"),
    [
        ({"regime": "graphs"}, "reference_units.regime: 'graphs', but the run decoded 'eager'"),
        ({"card": "NVIDIA H100 80GB HBM3"}, "reference_units.card: 'NVIDIA H100 80GB HBM3'"),
        ({"params_b": 13.0}, "measured at 13B batch 1, but the report is of 7.0B batch 1"),
        ({"batch_size": 4}, "measured at 7B batch 4"),
        ({"tokens_per_run": 64}, "tokens_per_run: 64, but the run decoded 256 tokens a run"),
        ({"precision": "INT8"}, "reference_units.precision: 'INT8', but the report is of NF4"),
        ({"model_name": L7}, f"model_name: '{L7}', but the run measured 'synthetic:tiny-test'"),
        ({"pooled_pct": 30.0}, "reference_units.ci95_pct: [7.948, 19.204] does not hold"),
    ],
)
def test_a_units_block_that_does_not_fit_the_run_is_refused(at_7b, edit, says):
    doc = copy.deepcopy(at_7b)
    doc["results"]["reference_units"].update(edit)
    problems = report_problems(Report.model_validate(doc))
    assert any(says in p for p in problems), problems


def test_units_of_another_card_of_the_model_name_are_refused(at_7b):
    doc = copy.deepcopy(at_7b)
    sut = doc["system_under_test"]
    sut["gpu"] = sut["gpus"][0]["name"] = "NVIDIA H200 NVL"
    problems = report_problems(Report.model_validate(doc))
    said = "reference_units.card: 'NVIDIA H200', but the run measured 'NVIDIA H200 NVL'"
    assert any(said in p for p in problems), problems


def _units(**over: object) -> ReferenceUnits:
    fields: dict[str, object] = {
        "source": "docs/validation/x",
        "card": "NVIDIA H200",
        "regime": "compiled",
        "model_name": "synthetic:llama-2-7b",
        "params_b": 7.0,
        "batch_size": 1,
        "tokens_per_run": 256,
        "precision": "NF4",
        "n_units": 6,
        "n_pairs": 20,
        "pooled_pct": -27.5,
        "ci95_pct": [-31.6, -23.4],
        "between_unit_sd_pts": 3.9,
        "pi95_pct": [-39.2, -15.8],
        "fp16_energy_per_token_mj_range": [2463.4, 3042.7],
        **over,
    }
    return ReferenceUnits.model_validate(fields)


def test_where_a_unit_lies_among_the_units_in_words():
    words, outside = beside_unit(_units(), -24.2, [-25.0, -23.4], 2600.7)
    assert not outside
    assert words == (
        "this unit's -24.2% lies inside their prediction interval, its FP16 (2,601 "
        "mJ/token) inside their FP16 range"
    )
    words, outside = beside_unit(_units(), -41.0, [-41.8, -40.2], 3300.0)
    assert outside
    assert "lies below their prediction interval [-39.2, -15.8], its own interval " in words
    assert "[-41.8, -40.2] wholly below" in words
    assert "above their FP16 range [2,463, 3,043]" in words
    assert "something of this unit, its host or its compile sets it apart" in words
    # fewer than three units: their pooled interval; no FP16 range: the delta alone
    two = _units(n_units=2, pi95_pct=None, fp16_energy_per_token_mj_range=None, regime="graphs")
    words, outside = beside_unit(two, -41.0, [-41.8, -40.2], 2600.0)
    assert outside and words.startswith("this unit's -41.0% lies below their pooled interval")
    assert "FP16" not in words and "this unit or its host" in words


def test_a_units_fp16_sets_it_apart_only_outside_their_fp16_prediction_interval():
    """A review (2026-12-06): a unit's FP16 outside the bare range of n units' FP16 told
    about 2 of every n + 1 ordinary units that something sets them apart (each of the
    committed units judged against the others: 2 of 6 eager, 2 of 13 graphs, 2 of 16
    compiled). Their prediction interval for another unit does now; the range is
    stated, never a cause."""
    pi = _units(fp16_energy_per_token_mj_pi95=[2429.9, 3142.0])
    words, outside = beside_unit(pi, -24.2, [-25.0, -23.4], 3100.0)  # above the range
    assert not outside and words.endswith(
        "its FP16 (3,100 mJ/token) inside their FP16 prediction interval"
    )
    words, outside = beside_unit(pi, -24.2, [-25.0, -23.4], 3300.0)
    assert outside and "above their FP16 prediction interval [2,430, 3,142]; some" in words
    words, outside = beside_unit(_units(), -24.2, [-25.0, -23.4], 3300.0)  # a range alone
    assert not outside and words.endswith("above their FP16 range [2,463, 3,043]")


def test_a_unit_with_no_interval_of_its_own_is_not_set_apart():
    """A review (2026-12-06): a run of one pair, whose point lay outside the units' band,
    was told that something sets it apart, though only an own interval wholly outside
    theirs does."""
    words, outside = beside_unit(_units(), -10.0, None, None)
    assert not outside and "sets it apart" not in words
    assert words == (
        "this unit's -10.0% lies above their prediction interval [-39.2, -15.8], with no "
        "interval of its own: it cannot be placed at this run's precision"
    )


def test_a_unit_whose_own_interval_reaches_into_the_units_band_is_not_set_apart():
    """A review (2026-12-05): an eager session's own interval is +-10-30 points; its point
    outside the units' prediction interval (which is for a unit's true delta) told two of
    the six units that make up the pool that something sets them apart. Only an own
    interval wholly outside the band does now."""
    eager = _units(regime="eager", pi95_pct=[7.5, 19.7], fp16_energy_per_token_mj_range=None)
    words, outside = beside_unit(eager, 4.35, [-17.4, 26.1], None)
    assert not outside and "sets it apart" not in words
    assert words == (
        "this unit's +4.3% lies below their prediction interval [+7.5, +19.7], its own "
        "interval [-17.4, +26.1] reaching into it: not apart at this run's precision"
    )
    words, outside = beside_unit(eager, 4.35, [2.0, 6.7], None)
    assert outside and "[+2.0, +6.7] wholly below; something of this unit or its host" in words


@pytest.fixture(scope="module", params=["max-autotune-no-cudagraphs", "default"])
def compiled_at_7b(request) -> tuple[str, dict]:
    """A compiled NF4 run on a fake H200 at the units' size and length, in each of
    inductor's two modes."""
    mode = request.param
    with _tiny_as_units():
        return mode, _measured(params_b="7", tokens="256", decode="compiled", compile_mode=mode)


def test_units_beside_a_compiled_run_are_of_its_compile_mode(compiled_at_7b):
    """On one H200 the default mode's FP16 spent 11-16% less a token than max-autotune's
    (docs/validation/h200-compile-mode), so the NF4 delta moved from -30% to -18%: the
    units beside a run are those compiled as it was, and say so."""
    mode, doc = compiled_at_7b
    units = doc["results"]["reference_units"]
    notes = ["mode default"] if mode == "default" else None
    assert units.get("compile_notes") == notes
    spread = card_model_spread(
        "hopper", "NF4", "compiled", "NVIDIA H200", L7, 7.0, 1, 256, tuple(notes or ())
    )
    assert spread is not None and units["n_units"] == spread.n_units
    assert units["pooled_pct"] == spread.pooled_pct
    said = "(compiled, mode default, " if notes else "(compiled, synthetic:tiny-test"
    assert f"NF4 over {spread.n_units} NVIDIA H200 units {said}" in doc["results"]["note"]
    assert report_problems(Report.model_validate(doc)) == []
    # one compile's summary names what makes max-autotune's kernels a draw, only there
    text = render(doc, "x")
    timed = "max-autotune keeps the kernels it timed fastest at each compile" in text
    assert timed is (mode == "max-autotune-no-cudagraphs")
    # and where the other mode held across units, and where it did not (docs/units.md)
    pointer = "default's NF4 agreed within 1.2 points over twelve H100s" in text
    assert ("on H200s default's units still split by board" in text) is timed
    assert pointer is timed
    # a block of the other mode's units is refused
    wrong = copy.deepcopy(doc)
    wrong["results"]["reference_units"]["compile_notes"] = None if notes else ["mode default"]
    problems = report_problems(Report.model_validate(wrong))
    assert any("reference_units.compile_notes" in p for p in problems), problems


def test_no_units_stand_beside_a_compile_none_were_measured_in():
    for notes in (("dynamic batch",), ("layers compiled",), ("dynamic batch", "mode default")):
        assert (
            card_model_spread("hopper", "NF4", "compiled", "NVIDIA H200", L7, 7.0, 1, 256, notes)
            is None
        )


def test_a_local_build_tag_is_the_units_own_release_not_another_stack():
    """A review: torch 2.11.0+cu130 (the units' own build) was named as a departure from
    their torch 2.11.0, as if another stack set the unit apart."""
    from ecocompute.published.figures import project_measurements
    from ecocompute.report.model import Software
    from ecocompute.report.references import software_departures

    theirs = project_measurements("hopper")["software"]
    packages = {k: (v[0] if isinstance(v, list) else v) for k, v in theirs.items()}
    software = Software.model_validate(
        {
            "python": packages.pop("python"),
            "torch_cuda": packages.pop("torch_cuda", None),
            "nvidia_driver": packages.pop("nvidia_driver", None),
            "packages": {**packages, "torch": f"{packages['torch']}+cu130"},
        }
    )
    assert software_departures("hopper", software) == []
    other = software.model_copy(update={"packages": {**packages, "torch": "2.13.0+cu130"}})
    assert software_departures("hopper", other) == ["torch 2.13.0+cu130"]


def test_units_that_detect_no_spread_say_what_they_cannot_rule_out():
    """Where the units' spread is not detectable, their words give the most they cannot
    rule out (the spread their prediction interval assumes, core/meta.py); where it is
    detected, REML's sd alone."""
    undetected = _units(between_unit_sd_pts=0.0, between_unit_sd_upper_pts=0.61)
    assert (
        "no between-unit spread detectable at these units' precision (up to 0.6 points not "
        "ruled out), a unit not yet measured [-39.2, -15.8]"
    ) in undetected.words()
    small = _units(between_unit_sd_pts=0.2, between_unit_sd_upper_pts=0.61)
    assert "between-unit sd 0.2 points, not detectable at these units' precision (up to 0.6" in (
        small.words()
    )
    assert "between-unit sd 3.9 points, a unit not yet measured" in _units().words()
    closer = _units(between_unit_sd_pts=0.0, between_unit_sd_upper_pts=0.0)
    assert "(they agree more closely than their own errors predict)" in closer.words()
    with pytest.raises(ValueError):
        _units(between_unit_sd_upper_pts=-0.1)


def test_a_unit_whose_fp16_and_idle_power_lie_beyond_the_units_names_its_idle_power():
    """Eight H100 units' FP16 energy per token rose with their idle power before the
    session (r 0.93, docs/units.md): a unit dearer than their FP16 prediction interval and
    idler-hotter than all of them is told that its idle power is the likely cause; not
    where its idle power lies among theirs, lies on the other side, or where the units'
    correlation is weak."""
    idle = {
        "fp16_energy_per_token_mj_pi95": [2429.9, 3142.0],
        "idle_before_w_range": [116.0, 122.0],
        "idle_fp16_energy_r": 0.93,
    }
    clause = "its idle power before the session (126 W, above their 116-122 W, where their"
    words, outside = beside_unit(_units(**idle), -24.2, [-25.0, -23.4], 3300.0, idle_w=126.0)
    assert outside and clause in words and "r +0.93: a warmer or leakier chip" in words
    assert words.endswith("or something else of this unit, its host or its compile sets it "
                          "apart from them (docs/units.md)")  # fmt: skip
    for idle_w, over in ((119.0, {}), (110.0, {}), (126.0, {"idle_fp16_energy_r": 0.4})):
        words, outside = beside_unit(
            _units(**{**idle, **over}), -24.2, [-25.0, -23.4], 3300.0, idle_w=idle_w
        )
        assert outside and "idle power" not in words
        assert "; something of this unit, its host or its compile sets it apart" in words
    with pytest.raises(ValueError):
        _units(idle_fp16_energy_r=1.5)


def test_the_summary_passes_the_runs_idle_power_to_the_units_line(compiled_at_7b):
    """The summary's caution line reads the run's GPUs' idle power before the session."""
    _, doc = compiled_at_7b
    doc = copy.deepcopy(doc)
    units, res = doc["results"]["reference_units"], doc["results"]
    fp16 = res["fp16_energy_per_token_mj"]
    units.update(
        fp16_energy_per_token_mj_pi95=[fp16 * 0.5, fp16 * 0.9],
        idle_before_w_range=[10.0, 20.0],
        idle_fp16_energy_r=0.9,
    )
    for g in doc["system_under_test"]["gpus"]:
        g["before_session"]["idle_power_watts"] = 30.0 / len(doc["system_under_test"]["gpus"])
    text = render(doc, "x")
    assert "its idle power before the session (30 W, above their 10-20 W" in text
