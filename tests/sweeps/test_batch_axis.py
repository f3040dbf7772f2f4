"""The batch axis: where a format's delta crosses zero against the batch size, with its
interval (open where the draws put it outside the sizes measured), the map in words,
the sweep over --batch_sizes on the CPU stand-ins (models loaded once for every batch
size), its plot, and the published path's honesty for formats it never measured."""

from __future__ import annotations

import json

import pytest

from ecocompute.boundary.progress import Progress
from ecocompute.cli import main
from ecocompute.errors import InputError
from ecocompute.sweeps.batch_axis import BatchPoint, crossover, first_crossing, map_words
from ecocompute.sweeps.plan import split_batches
from ecocompute.sweeps.sweep import sweep
from ecocompute.task.timing import read_cpu_times

from ..conftest import REPO
from ..fakes import CpuAccelerator, StandInQuantBackend, fake_machine


def pts(*rows):
    return [
        BatchPoint(batch_size=b, delta_pct=d, ci95_pct=[d - h, d + h], n_pairs=n, verdict=v,
                   report=f"b{b}")
        for b, d, h, n, v in rows
    ]  # fmt: skip


def test_the_crossing_is_log2_linear_between_the_sizes_that_change_sign():
    assert first_crossing([(1, -10.0), (4, 10.0)]) == pytest.approx(2.0)  # log2 midpoint
    assert first_crossing([(1, -30.0), (4, -10.0), (16, 10.0)]) == pytest.approx(8.0)
    assert first_crossing([(1, -3.0), (4, -1.0)]) is None
    assert first_crossing([(1, 5.0), (16, 5.0), (64, -5.0)]) == pytest.approx(32.0)


def test_a_tight_crossover_has_a_closed_interval_around_it():
    nf4 = pts(
        (1, -17.9, 0.3, 10, "saves"), (4, 40.1, 0.5, 10, "costs"), (16, 91.0, 1.0, 10, "costs")
    )
    cross = crossover(nf4, n_boot=2000)
    assert cross.status == "inside" and cross.ci95 is not None
    lo, hi = cross.ci95
    assert lo is not None and hi is not None and cross.batch_size is not None
    assert lo < cross.batch_size < hi and lo > 1 and hi < 4
    assert cross.batch_size == pytest.approx(2 ** (2 * 17.9 / (17.9 + 40.1)), rel=1e-3)


def test_no_crossing_inside_the_sizes_is_said_and_the_interval_left_open():
    int8 = pts((1, -8.3, 0.8, 4, "saves"), (4, -7.7, 0.1, 3, "saves"), (64, -14.8, 1.8, 3, "saves"))
    cross = crossover(int8, n_boot=2000)
    assert cross.batch_size is None and cross.status == "outside"
    assert "saves at every batch size measured (1..64)" in (cross.note or "")
    assert cross.ci95 == [None, None] and cross.ci95_text == "outside 1..64"  # no side
    noisy = pts((1, -0.5, 3.0, 3, "inconclusive"), (4, -3.0, 0.5, 10, "saves"))
    cross = crossover(noisy, n_boot=2000)
    assert cross.ci95 is not None and cross.ci95[1] is None
    assert "beyond 4" in (cross.ci95_text or "")
    assert crossover(pts((1, -3.0, 1.0, 5, "saves"))).status == "one batch size"


def test_the_map_in_words():
    int4 = pts(
        (1, -34.7, 1, 5, "saves"),
        (4, -24.6, 1, 5, "saves"),
        (16, 20.4, 1, 5, "costs"),
        (64, 141, 1, 5, "costs"),
    )
    assert map_words("INT4", int4) == "INT4 saves at batch 1-4, costs from 16"
    nf4 = pts((1, -17.9, 1, 5, "saves"), (4, 40.1, 1, 5, "costs"), (16, 91, 1, 5, "costs"))
    assert map_words("NF4", nf4) == "NF4 saves at batch 1, costs from 4"
    fp8 = pts(
        (1, 0.9, 1.5, 4, "inconclusive"),
        (4, 1.7, 1.9, 3, "inconclusive"),
        (16, 3.0, 0.1, 3, "costs"),
        (64, -13, 0.2, 3, "saves"),
    )
    assert map_words("FP8", fp8) == "FP8 is inconclusive at batch 1-4, costs at 16, saves at 64"
    assert map_words("INT8", pts((1, -8, 1, 5, "saves"), (64, -15, 1, 5, "saves"))) == (
        "INT8 saves at every batch measured"
    )


def test_batch_sizes_are_whole_increasing_and_not_mixed_with_batch_size():
    assert split_batches("1,4,16,64") == [1, 4, 16, 64]
    for bad in ("0,4", "4,1", "1,x", "1,1", "1,²", "١"):  # digits int() cannot read, too
        with pytest.raises(InputError):
            split_batches(bad)
    assert (
        main(
            [
                "sweep",
                "--models",
                "synthetic:tiny-test",
                "--batch_sizes",
                "1,2",
                "--batch_size",
                "4",
                "--dry_run",
            ]
        )
        == 2
    )


@pytest.mark.slow
def test_a_sweep_over_batch_sizes_on_the_cpu(tmp_path, monkeypatch):
    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))
    backend = StandInQuantBackend()
    options = {"tokens": 4, "iterations": 3, "warmup": 0, "idle_seconds": 0.2,
               "decode": "graphs", "quiet": True}  # fmt: skip
    done = sweep(
        ["synthetic:tiny-test"],
        ["NF4", "INT4"],
        tmp_path / "sw",
        options=options,
        progress=Progress(quiet=True),
        machine=fake_machine(backend=lambda: backend),
        batch_sizes=[1, 2, 4],
    )
    doc = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    assert doc == done.document()
    # one session per batch size, the models loaded once for all three
    assert backend.loads == ["FP16", "NF4", "INT4"]
    assert [r["report"] for r in doc["runs"]][:2] == [
        "synthetic-tiny-test-b1/NF4/energy.json",
        "synthetic-tiny-test-b1/INT4/energy.json",
    ]
    assert [r["batch_size"] for r in doc["runs"]] == [1, 1, 2, 2, 4, 4]
    reports = [json.loads((tmp_path / "sw" / r["report"]).read_text()) for r in doc["runs"]]
    assert [r["measurement"]["timing"]["reused_models"] for r in reports] == [
        False,
        False,
        True,
        True,
        True,
        True,
    ]
    steal = [r["measurement"]["timing"].get("measure_cpu_steal_pct") for r in reports]
    assert all(s is None or 0 <= s <= 100 for s in steal)  # /proc/stat's, where it reads
    if read_cpu_times() is not None:  # Linux: the measure stage's share is in every report
        assert None not in steal
    assert {e["precision"] for e in doc["batch_axis"]} == {"NF4", "INT4"}
    for entry in doc["batch_axis"]:
        assert [p["batch_size"] for p in entry["points"]] == [1, 2, 4]
        assert entry["map"].startswith(entry["precision"])
        assert "ci95_text" in entry["crossover"] or entry["crossover"]["status"] == "one batch size"
    assert doc["map"] == [e["map"] for e in doc["batch_axis"]]
    assert all(
        f["status"] == "skipped" and f["reason"].endswith("see batch_axis") for f in doc["fits"]
    )
    assert doc["plot"] == "sweep.png"
    assert "batch" in doc["protocol"] and "1,2,4" in doc["protocol"]


@pytest.mark.slow
def test_the_batch_plot_keeps_torchao_int8_apart_and_names_it(tmp_path):
    pytest.importorskip("matplotlib")
    from ecocompute.plots.batch_plot import build_batch_figure
    from ecocompute.results.collect import read_reports

    from ..made_reports import measured, write

    for tokens in (256, 128):  # two points a line (another protocol: none pools)
        for library in ("bitsandbytes", "torchao"):
            delta = 30.0 if library == "torchao" else 90.0
            doc = measured(precision="INT8", delta=delta, unit=f"{library}-{tokens}")
            doc["workload"]["batch_size"] = 256 // tokens
            doc["workload"]["max_new_tokens"] = doc["measurement"]["tokens_per_run"] = tokens
            decode = doc["measurement"]["decode"]
            decode["batch_size"], decode["min_new_tokens"] = 256 // tokens, tokens
            decode["max_new_tokens"] = tokens
            doc["workload"]["quantization"] = {"library": library}
            write(doc, tmp_path / f"{library}-{tokens}")
    reports, invalid = read_reports([tmp_path])
    assert not invalid and len(reports) == 4
    ax = build_batch_figure(reports).axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert sorted(labels) == ["INT8", "INT8-torchao", "break-even (0%)"]


def test_the_batch_plot_draws_a_line_per_format_and_break_even(tmp_path):
    pytest.importorskip("matplotlib")
    from ecocompute.plots.batch_plot import build_batch_figure
    from ecocompute.results.collect import read_reports

    reports, invalid = read_reports([REPO / "docs/validation/h200-map/map-7b"])
    assert not invalid and len(reports) == 16
    fig = build_batch_figure(reports)
    ax = fig.axes[0]
    assert ax.get_xscale() == "log"
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    # the map's INT8 is LLM.int8() at threshold 0 (graphs capture only that): named so
    expected = ["FP8", "INT4", "INT8 (threshold 0)", "NF4", "break-even (0%)"]
    assert sorted(labels) == sorted(expected)
    assert [t.get_text() for t in ax.get_xticklabels()] == ["1", "4", "16", "64"]
    title = ax.get_title()
    assert "NVIDIA H200" in title and "synthetic:llama-2-7b" in title and "graphs" in title
    assert "synthetic weights" in title


@pytest.mark.slow
def test_the_batch_plot_names_a_compile_unlike_the_regimes_own():
    """The default-mode, dynamic-batch compiled map (docs/validation/h200-map-whole) is
    not the max-autotune one: its title says so."""
    pytest.importorskip("matplotlib")
    from ecocompute.plots.batch_plot import build_batch_figure
    from ecocompute.results.collect import read_reports

    folder = REPO / "docs/validation/h200-map-whole"
    reports, invalid = read_reports([folder / "compiled-dynamic-b4"])
    assert not invalid and len(reports) == 4
    title = build_batch_figure(reports).axes[0].get_title()
    assert "compiled decode (dynamic batch, mode default)," in title
    tuned, _ = read_reports([folder / "compiled-b4"])
    assert "compiled decode, synthetic weights" in build_batch_figure(tuned).axes[0].get_title()


def test_the_published_path_never_borrows_a_figure_for_formats_it_never_measured(tmp_path, capsys):
    out = tmp_path / "o"
    rc = main(
        [
            "energy_estimate",
            "--dry_run",
            "--model",
            "synthetic:llama-2-7b",
            "--gpu_arch",
            "h200",
            "--precision",
            "NF4,INT4,FP8",
            "--output_dir",
            str(out),
            "-q",
        ]
    )
    assert rc == 0
    nf4, int4, fp8 = (
        json.loads((out / f / "energy.json").read_text()) for f in ("NF4", "INT4", "FP8")
    )
    assert (
        nf4["results"]["basis"] != "unavailable"
        and nf4["results"]["vs_fp16_energy_pct"] is not None
    )
    for doc in (int4, fp8):
        assert (
            doc["results"]["basis"] == "unavailable"
            and doc["results"]["vs_fp16_energy_pct"] is None
        )
        assert "NF4 and LLM.int8() only" in doc["results"]["note"]
    rc = main(
        [
            "energy_estimate",
            "--dry_run",
            "--model",
            "synthetic:llama-2-7b",
            "--gpu_arch",
            "h200",
            "--precision",
            "INT8",
            "--backend",
            "torchao",
            "--output_dir",
            str(tmp_path / "t"),
            "-q",
        ]
    )
    doc = json.loads((tmp_path / "t" / "energy.json").read_text())
    assert rc == 0 and doc["results"]["basis"] == "unavailable"  # never LLM.int8()'s figure


def test_the_published_path_has_no_batch_axis_and_says_so_in_one_line(tmp_path, capsys):
    """The README's map command without a GPU: a batch column, the protocol, one line
    saying there is no batch axis (its figures are batch 1), and no plot."""
    out = tmp_path / "map"
    argv = ["sweep", "--models", "synthetic:llama-2-7b", "--precisions", "NF4,INT4"]
    rc = main([*argv, "--batch_sizes", "1,4,16", "--dry_run", "--output_dir", str(out), "-q"])
    assert rc == 0
    text = capsys.readouterr().out
    doc = json.loads((out / "sweep.json").read_text())
    assert "batch_axis" not in doc and "map" not in doc
    assert doc["batch_axis_note"].startswith("no batch axis: no format was measured")
    assert "batch 4, 16: basis unavailable" in doc["batch_axis_note"]
    assert doc["protocol"] == "256 tok, batch 1,4,16"
    assert doc["fits"] and all(f["reason"].endswith("see batch_axis_note") for f in doc["fits"])
    assert doc["plot"] is None and not (out / "sweep.png").exists()
    lines = text.splitlines()
    assert lines[1].split()[:3] == ["model", "batch", "fmt"]
    rows = [line.split() for line in lines[2:8]]
    assert [(r[1], r[2], r[-1]) for r in rows] == [
        ("1", "NF4", "interpolated"),
        ("1", "INT4", "unavailable"),
        ("4", "NF4", "unavailable"),
        ("4", "INT4", "unavailable"),
        ("16", "NF4", "unavailable"),
        ("16", "INT4", "unavailable"),
    ]
    assert sum(line.startswith("  batch axis none: ") for line in lines) == 1


def test_a_sweep_names_the_regime_its_points_fell_back_to(tmp_path, capsys):
    out = tmp_path / "sw"
    argv = ["sweep", "--models", "synthetic:smollm2-135m", "--precisions", "NF4"]
    assert main([*argv, "--decode", "compiled", "--dry_run", "--output_dir", str(out)]) == 0
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["decode_note"].startswith("--decode compiled asked for, but the points are eager's")
    line = next(x for x in capsys.readouterr().out.splitlines() if x.startswith("  decode"))
    assert "compiled asked for" in line and "eager" in line


def test_a_sweep_with_no_batch_axis_still_names_the_regime_its_points_fell_back_to(tmp_path):
    """Several batch sizes, no axis (the published path) and a regime fallen back from:
    both notes stay (the batch-axis note once replaced every other one)."""
    out = tmp_path / "sw"
    argv = ["sweep", "--models", "synthetic:smollm2-135m", "--precisions", "NF4"]
    argv += ["--batch_sizes", "1,4", "--decode", "compiled", "--dry_run"]
    assert main([*argv, "--output_dir", str(out), "-q"]) == 0
    doc = json.loads((out / "sweep.json").read_text())
    assert doc["batch_axis_note"].startswith("no batch axis: no format was measured")
    assert doc["decode_note"].startswith("--decode compiled asked for, but the points are eager's")


def test_the_map_plot_marks_each_crossover_and_shades_the_whole_axis(tmp_path, capsys):
    pytest.importorskip("matplotlib")
    from ecocompute.plots.batch_plot import Crossing, build_batch_figure
    from ecocompute.results.collect import read_reports

    reports, _ = read_reports([REPO / "docs/validation/h200-map/map-7b"])
    crossing = {("synthetic:llama-2-7b", "NF4"): Crossing(1.32, 1.29, 1.35, "1.29 .. 1.35")}
    ax = build_batch_figure(reports, crossing).axes[0]
    labels = [t.get_text() for t in ax.get_legend().get_texts()]
    assert [x for x in labels if "crosses" not in x and "break" not in x] == [
        "NF4", "INT8 (threshold 0)", "INT4", "FP8"
    ]  # fmt: skip
    (mark,) = [c for c in ax.containers if c.get_label().startswith("NF4 crosses zero")]
    assert mark.get_label() == "NF4 crosses zero at 1.32 (95% CI 1.29 .. 1.35)"
    assert [tuple(p) for p in mark.lines[0].get_xydata()] == [(1.32, 0.0)]
    (bar,) = mark.lines[2]
    assert [tuple(p) for p in bar.get_segments()[0]] == [(1.29, 0.0), (1.35, 0.0)]
    low, high = ax.get_ylim()
    shaded = [p for p in ax.patches if p.get_gid() in ("costs", "saves")]
    ys = sorted(v for p in shaded for v in (p.get_y(), p.get_y() + p.get_height()))
    assert len(shaded) == 2
    assert ys[0] == pytest.approx(low) and ys[-1] == pytest.approx(high)  # the whole axis


def test_fit_only_lists_a_batch_sweep_in_the_order_it_ran(tmp_path, capsys):
    out = tmp_path / "fit"
    argv = ["sweep", "--fit_only", "--reports", str(REPO / "docs/validation/h200-map/map-7b")]
    assert main([*argv, "--output_dir", str(out), "-q"]) == 0
    doc = json.loads((out / "sweep.json").read_text())
    order = [(r["batch_size"], r["precision"]) for r in doc["runs"]]
    assert order[:5] == [(1, "NF4"), (1, "INT8"), (1, "INT4"), (1, "FP8"), (4, "NF4")]
    assert [b for b, _ in order[::4]] == [1, 4, 16, 64]
    for entry in doc["batch_axis"]:  # a crossover names the measured sizes either side
        cross, sizes = entry["crossover"], [p["batch_size"] for p in entry["points"]]
        if cross["batch_size"] is None:
            assert cross.get("between_batch_sizes") is None
            continue
        lo, hi = cross["between_batch_sizes"]
        assert lo <= cross["batch_size"] <= hi and sizes.index(hi) == sizes.index(lo) + 1


def test_a_batch_axis_over_two_units_says_which_unit_measured_which_points(tmp_path, capsys):
    """The H200 phases calls measured batch 1 on one unit and batch 16 on another: their
    map's change between the two holds the units' difference too, and the sweep says so;
    one unit's points say nothing of units."""
    whole = REPO / "docs/validation/h200-map-whole"
    two = ["sweep", "--fit_only", "--reports", str(whole / "phases-b1/p128"),
           str(whole / "phases-b16/p128"), "--output_dir", str(tmp_path / "two")]  # fmt: skip
    assert main(two) == 0
    note = json.loads((tmp_path / "two" / "sweep.json").read_text())["units_note"]
    assert note.startswith("the points were measured on 2 units (")
    assert "...28e77bfbd91d: synthetic:llama-2-7b b1" in note
    assert "...b1a4d1678474: synthetic:llama-2-7b b16" in note
    out = capsys.readouterr().out
    assert "  units      the points were measured on 2 units" in out
    assert "NF4  synthetic:llama-2-7b: crosses zero at batch 1.53 (95% CI 1.51 .. 1.55; " in out
    assert "interpolated between batch 1 and 16)" in out
    one = ["sweep", "--fit_only", "--reports", str(whole / "phases-b1/p128"), "--output_dir",
           str(tmp_path / "one"), "-q"]  # fmt: skip
    assert main(one) == 0
    assert "units_note" not in json.loads((tmp_path / "one" / "sweep.json").read_text())


# --- issue 30, item 8: degenerate data gets no invented crossover ----------------------


def test_two_reports_of_one_batch_size_locate_no_crossover():
    twice = pts((4, -5.0, 1.0, 5, "saves"), (4, 5.0, 1.0, 5, "costs"))
    cross = crossover(twice, n_boot=200)
    assert cross.status == "one batch size" and cross.batch_size is None
    assert cross.ci95 is None and "2 reports of batch 4, never pooled" in (cross.note or "")
    among = pts((1, -5.0, 1.0, 5, "saves"), (4, 5.0, 1.0, 5, "costs"), (4, 6.0, 1.0, 5, "costs"))
    cross = crossover(among, n_boot=200)
    assert cross.status == "repeated batch size" and cross.batch_size is None
    assert "batch size 4 is held by more than one report" in (cross.note or "")


def test_no_outside_note_beside_an_interval_that_starts_inside():
    noisy = pts((1, -0.5, 3.0, 3, "inconclusive"), (4, -3.0, 0.5, 10, "saves"))
    cross = crossover(noisy, n_boot=2000)
    assert cross.status == "outside" and cross.ci95 is not None and cross.ci95[0] is not None
    assert "lies outside them" not in (cross.note or ""), cross.note
    assert "do not rule out a crossover among them" in (cross.note or "")
    assert (cross.ci95_text or "") in (cross.note or "")


def test_a_delta_of_exactly_zero_lies_inside_its_own_interval():
    at_zero = pts((1, 0.0, 5.0, 5, "inconclusive"), (4, 10.0, 1.0, 5, "costs"))
    cross = crossover(at_zero, n_boot=2000)
    assert cross.batch_size == 1.0 and cross.ci95 is not None
    lo, hi = cross.ci95
    assert (lo is None or lo <= 1.0) and (hi is None or hi >= 1.0), cross.ci95_text


def test_points_without_intervals_get_no_interval():
    derived = [
        BatchPoint(batch_size=b, delta_pct=d, ci95_pct=None, n_pairs=None, verdict=None,
                   report=f"b{b}")
        for b, d in ((1, -10.0), (4, 10.0))
    ]  # fmt: skip
    cross = crossover(derived, n_boot=200)
    assert cross.batch_size == pytest.approx(2.0) and cross.status == "inside"
    assert cross.ci95 is None and cross.draws is None
    assert (cross.ci95_text or "").startswith("no interval")


def test_an_interval_over_the_whole_axis_does_not_rule_out_a_crossing_inside():
    """Draws split below the first size and beyond the last, 41% crossing between them:
    the note once said 'any crossover lies outside them'."""
    c = crossover(pts((1, -8.5, 86.15, 3, "inconclusive"), (2, -5.5, 22.8, 3, "inconclusive")))
    assert c.ci95 == [None, None] and c.draws.no_crossing_below and c.draws.no_crossing_beyond
    assert "do not rule out a crossover among them" in c.note
    assert "lies outside them" not in c.note


def test_the_summary_gives_an_interval_its_note_already_gives_once():
    from types import SimpleNamespace

    from ecocompute.sweeps.render import axis_lines

    c = crossover(pts((1, -8.5, 86.15, 3, "inconclusive"), (2, -5.5, 22.8, 3, "inconclusive")))
    entry = SimpleNamespace(crossover=c, precision="NF4", model_name="m")
    sweep = SimpleNamespace(batch_axis=[entry], map=[], batch_axis_note=None)
    (line,) = axis_lines(sweep)
    assert line.count("below 1 .. beyond 2") == 1, line


def test_a_failed_run_in_the_summary_names_its_batch_size(tmp_path):
    """A failed model's batch 1 and batch 4 rows printed alike: the batch column was
    left blank on a FAILED row."""
    from ecocompute.params import RunParams
    from ecocompute.sweeps.document import Sweep
    from ecocompute.sweeps.records import new_record
    from ecocompute.sweeps.render import render

    runs = [
        new_record(RunParams(model_name="m-7b", batch_size=b), error="out of memory")
        for b in (1, 4)
    ]
    nothing = dict.fromkeys(("card", "gpu_arch", "software", "protocol", "plot"))
    sweep = Sweep(timestamp_utc="2026-12-01T00:00:00Z", tool="t", scope="s", runs=runs, fits=[],
                  **nothing)  # fmt: skip
    rows = [line.split() for line in render(sweep, tmp_path / "sweep.json").splitlines()]
    assert [row[:3] for row in rows if "FAILED:" in row] == [
        ["m-7b", "1", "NF4"],
        ["m-7b", "4", "NF4"],
    ]


def test_a_failed_run_is_named_by_its_format_as_the_rows_that_answered_are():
    """A failed torchao INT8 point was listed as plain INT8 (LLM.int8()) beside the
    INT8-torchao rows that answered: a failed record carried no format label."""
    from ecocompute.params import RunParams
    from ecocompute.sweeps.records import new_record

    def label(**set_: object) -> str | None:
        return new_record(RunParams(model_name="m", precision="INT8", **set_)).format_label

    assert label(backend="torchao") == "INT8-torchao"
    assert label(llm_int8_threshold=0.0) == "INT8 (threshold 0)"
    assert label() is None and label(llm_int8_threshold=6.0) is None  # the precision's own


def test_alternating_blocks_leave_nothing_resident_for_the_next_batch_size(tmp_path, monkeypatch):
    """Where FP16 and the quantized copy do not fit together, each is let go after its
    block: the next batch size's FP16 must not load beside the last quantized copy (the
    pair judged not to fit)."""
    from ecocompute.llm.resident import ResidentModels

    monkeypatch.setenv("ECOCOMPUTE_CACHE", str(tmp_path / "cache"))
    held_at_load: list[tuple[str, list[str]]] = []
    load = ResidentModels.load

    def recording_load(self, checkpoint, spec, accelerator):
        held_at_load.append((str(spec.precision), [str(s.precision) for _, s in self.kept]))
        return load(self, checkpoint, spec, accelerator)

    monkeypatch.setattr(ResidentModels, "load", recording_load)
    options = {"tokens": 4, "iterations": 2, "warmup": 0, "idle_seconds": 0.2, "quiet": True}
    sweep(
        ["synthetic:tiny-test"],
        ["NF4"],
        tmp_path / "sw",
        options=options,
        progress=Progress(quiet=True),
        machine=fake_machine(accelerator=CpuAccelerator(free_mib=1000)),
        batch_sizes=[1, 2],
    )
    doc = json.loads((tmp_path / "sw" / "sweep.json").read_text())
    reports = [json.loads((tmp_path / "sw" / r["report"]).read_text()) for r in doc["runs"]]
    assert [r["measurement"]["order"] for r in reports] == ["alternating blocks"] * 2
    assert all(r["workload"]["quantization"]["method"] == "nf4" for r in reports)
    assert held_at_load == [("FP16", []), ("NF4", []), ("FP16", []), ("NF4", [])]
