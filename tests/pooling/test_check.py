"""check: exit 0 within, 1 outside, 2 not gradeable; never circular, never borrowed."""

from __future__ import annotations

import dataclasses

import pytest

from ecocompute.cli import main
from ecocompute.pooling.check import DEFAULT_SPREAD_PCT, curve_spread
from ecocompute.published.figures import curve_for, project_curve_for

from ..conftest import REPO
from ..made_reports import measured, write

ADA = {"gpu": "NVIDIA GeForce RTX 4090", "arch": "ada"}
RTX_4090D = "NVIDIA GeForce RTX 4090 D"
ADA_4090D = {"gpu": RTX_4090D, "arch": "ada"}
RTX_4090D_1_1B = 1600.58  # the main dataset's (v1.1.0) own RTX 4090D FP16 figure


def _check(tmp_path, doc, *extra):
    path = write(doc, tmp_path / "r")
    return main(["check", str(path), *extra])


def test_within_the_anchor_and_the_curve_is_exit_0(tmp_path, capsys):
    on_curve = curve_for("ada", "NF4").delta_pct(1.1)
    d = measured(params_b=1.1, delta=round(on_curve, 3), fp16_mj=RTX_4090D_1_1B, **ADA_4090D)
    assert _check(tmp_path, d) == 0
    out = capsys.readouterr().out
    assert "FP16 anchor:" in out and "the main dataset's RTX 4090D anchor 1,600.6" in out
    assert "within" in out and "this report on" not in out  # the anchor's own card
    assert "WITHIN k = 2 (exit 0)" in out


def test_a_two_card_mean_grades_no_card_and_the_4090d_its_own_published_figures(tmp_path, capsys):
    """The site's Ada anchors at 0.5-3B are a mean over the RTX 4090 and the RTX 4090D,
    which differ by up to ~12% from it: graded at the one-card run-to-run spread (+-4%),
    the main dataset's own RTX 4090D figure at 3B (2,989.22, -11.3% from the mean) read
    OUTSIDE. Each published 4090D figure is within against itself; the 4090 and the L40S,
    with no figure of their own there, are not graded against the mean."""
    for size, fp16 in ((0.5, 1474.16), (1.1, 1600.58), (1.5, 2238.87), (3.0, 2989.22)):
        doc = measured(params_b=size, precision="FP16", fp16_mj=fp16, **ADA_4090D)
        assert _check(tmp_path, doc) == 0, size
        assert f"the main dataset's RTX 4090D anchor {fp16:,.1f} at {size:g}B: +0.0%" in (
            capsys.readouterr().out
        )
    for gpu in ("NVIDIA GeForce RTX 4090", "NVIDIA L40S"):
        doc = measured(params_b=3.0, precision="FP16", fp16_mj=3368.4, gpu=gpu, arch="ada")
        assert _check(tmp_path, doc) == 2  # nothing else graded: not gradeable
        out = capsys.readouterr().out
        assert "not graded: the site's 3B anchor (3,368.4 mJ/token) is a mean over RTX 4090 " in out
        assert "(RTX 4090D's own: 2,989.2, -11.3%)" in out and f"no 3B figure of {gpu}'s own" in out
    on_curve = curve_for("ada", "NF4").delta_pct(1.1)
    l40s = measured(params_b=1.1, delta=round(on_curve, 3), gpu="NVIDIA L40S", arch="ada")
    assert _check(tmp_path, l40s) == 0  # the curve grades it; the anchor does not
    assert "is a mean over RTX 4090 + RTX 4090D" in capsys.readouterr().out


def test_another_cards_fp16_is_not_graded_against_one_cards_anchor(tmp_path, capsys):
    """The site's 7B Ada anchor was measured on the RTX 4090 alone: an RTX 4090 report is
    graded against it; an RTX 4090 D ("NVIDIA GeForce RTX 4090 D", whose name holds "RTX
    4090") or a B200 against the RTX 5090's is not, as no card is against the two-card
    mean: one card's spread does not bound another card (a B200 was OUTSIDE, a review)."""
    for gpu, arch, fp16, status in (
        ("NVIDIA GeForce RTX 4090", "ada", 5467.88, 0),
        ("NVIDIA GeForce RTX 4090 D", "ada", 5467.88, 2),
        ("NVIDIA B200", "blackwell", 4000.0, 2),
    ):
        doc = measured(params_b=7.0, precision="FP16", fp16_mj=fp16, gpu=gpu, arch=arch)
        assert _check(tmp_path, doc) == status, gpu
        out = capsys.readouterr().out
        assert ("the site's RTX 4090 anchor 5,467.9 at 7B: +0.0%" in out) is (status == 0)
        assert ("not graded: another card: the site's 7B anchor" in out) is (status == 2)
    b200 = measured(params_b=7.0, delta=-11.4, fp16_mj=4000.0, gpu="NVIDIA B200", arch="blackwell")
    assert _check(tmp_path, b200) == 0  # its delta is still graded
    assert "this report on NVIDIA B200" in capsys.readouterr().out


def test_outside_the_curve_is_exit_1_and_k_widens_it(tmp_path, capsys):
    curve = curve_for("ada", "NF4")
    spread = curve_spread(curve).pct
    delta = curve.delta_pct(2.0) - 2.5 * spread  # between 2 and 3 spreads away
    doc = measured(params_b=2.0, delta=round(delta, 3), **ADA)  # no anchor at 2B
    assert _check(tmp_path, doc) == 1
    out = capsys.readouterr().out
    assert "OUTSIDE" in out and "the site's residual spread of its ada NF4 fit over 9" in out
    assert "no ada anchor within 5% of 2B" in out
    assert _check(tmp_path, doc, "--k", "3") == 0


def test_fp16_far_from_its_anchor_is_exit_1(tmp_path, capsys):
    doc = measured(params_b=7.0, precision="FP16", fp16_mj=5467.88 * 1.10, **ADA)  # 4090's
    assert _check(tmp_path, doc) == 1
    assert "+10.0%, tolerance +-2 x 2% = +-4.0%" in capsys.readouterr().out


def test_fp16_without_an_anchor_of_its_size_is_not_gradeable(tmp_path):
    assert _check(tmp_path, measured(params_b=2.0, precision="FP16", **ADA)) == 2


def test_hopper_is_not_graded_against_borrowed_ampere(tmp_path, capsys):
    assert _check(tmp_path, measured(params_b=7.0)) == 2
    out = capsys.readouterr().out
    assert "no published curve was measured on hopper; ampere's is only borrowed" in out
    assert "NOT GRADEABLE (exit 2)" in out


def test_hopper_is_not_graded_against_our_own_h200_figures(tmp_path, capsys):
    # the no-GPU path ships this project's H200 anchors for Hopper; a report that sits on
    # them exactly is still not graded: they come from this project's own reports
    doc = measured(params_b=1.1, precision="FP16", fp16_mj=2436.227)
    assert _check(tmp_path, doc) == 2
    out = capsys.readouterr().out
    assert "the hopper anchors shipped are this project's H200 measurements" in out
    assert "circular" in out and "NOT GRADEABLE (exit 2)" in out
    nf4 = measured(params_b=3.0, delta=round(project_curve_for("hopper", "NF4").delta_pct(3), 3))
    assert _check(tmp_path, nf4) == 2
    out = capsys.readouterr().out
    assert "ampere's is only borrowed" in out and "would be circular" in out


def test_committed_h200_reports_are_not_gradeable():
    for name in ("tinyllama-nf4", "tinyllama-int8", "llama2-7b-nf4"):
        path = REPO / "docs" / "validation" / "h200-issue3" / name / "energy.json"
        assert main(["check", str(path)]) == 2


def test_the_spread_is_the_sites_resid_std_else_the_named_default():
    blackwell = curve_for("blackwell", "NF4")
    spread = curve_spread(blackwell)
    assert spread.pct == 2.8022 and "resid_std" in spread.source
    without = dataclasses.replace(blackwell, resid_std_pct=None)
    fallback = curve_spread(without)
    assert fallback.pct == DEFAULT_SPREAD_PCT
    assert f"project default {DEFAULT_SPREAD_PCT:g} pp" in fallback.source


def test_no_curve_for_the_format_is_not_gradeable(tmp_path):
    doc = measured(params_b=2.0, delta=150.0, precision="INT8", gpu="NVIDIA GeForce RTX 5090",
                   arch="blackwell")  # fmt: skip
    assert _check(tmp_path, doc) == 2


def test_a_derived_report_is_refused(run_cli, tmp_path):
    done = run_cli(
        "energy_estimate",
        "--dry_run",
        "--model",
        "x",
        "--params_b",
        "1.1",
        "--gpu_arch",
        "ada",
        "--output_dir",
        str(tmp_path / "d"),
    )
    assert done.returncode == 0, done.stderr
    checked = run_cli("check", str(tmp_path / "d" / "energy.json"))
    assert checked.returncode == 2
    assert "REFUSED" in checked.stdout and "compare them with themselves" in checked.stdout


def test_an_invalid_file_is_exit_2(tmp_path, capsys):
    bad = tmp_path / "energy.json"
    bad.write_text("{}")
    assert main(["check", str(bad)]) == 2
    assert "INVALID" in capsys.readouterr().err


@pytest.mark.parametrize("k", ["0", "-1", "nan"])
def test_k_must_be_positive(tmp_path, k):
    assert _check(tmp_path, measured(**ADA), "--k", k) == 2


@pytest.mark.parametrize(
    ("change", "says"),
    [
        ({"batch_size": 16}, "the report is of batch 16, the published figures of batch 1"),
        ({"regime": "graphs"}, "the graphs decode regime, the published figures the eager one"),
        ({"regime": "compiled"}, "the compiled decode regime"),
        # another library's format, or another threshold: another kernel path (a review)
        ({"precision": "INT8", "format_key": "INT8-torchao"}, "measured INT8-torchao, the"),
        ({"max_new_tokens": 4}, "generated 4 new tokens per run, the published figures 256"),
        # a chosen prompt length, and LLM.int8() on random weights (fourteenth session)
        ({"prompt_tokens": 1024}, "after a 1024-token prompt (--prompt_tokens)"),
        ({"precision": "INT8", "format_key": "INT8"}, "LLM.int8() on synthetic (random) weights"),
    ],
)
def test_unlike_is_never_graded_against_like(tmp_path, change, says):
    """Issue 30, item 11: a batch-16 report against the batch-1 figures, a graphs-regime
    report against the eager ones: refused, saying why."""
    from ecocompute.pooling.check import Verdict, check
    from ecocompute.results.collect import read_one

    on_curve = curve_for("ada", "NF4").delta_pct(1.1)
    doc = measured(params_b=1.1, delta=round(on_curve, 3), fp16_mj=RTX_4090D_1_1B, **ADA_4090D)
    report = read_one(write(doc, tmp_path / "r"))
    assert check(report).verdict is Verdict.WITHIN  # like against like: graded
    checked = check(dataclasses.replace(report, **change))
    assert checked.verdict is Verdict.NOT_GRADEABLE and not checked.grades
    assert checked.refused is not None and says in checked.refused, checked.refused


def _pretrained(doc):
    """LLM.int8() is graded only on pretrained weights (random ones lack its outliers)."""
    doc["workload"]["weights"] = "pretrained"
    return doc


def test_a_delta_is_graded_against_the_anchors_of_its_size_as_upstream_does(tmp_path, capsys):
    """Issue 29: at Ada INT8 1.1B, dE +100% is within the site's two anchors there
    (+146.1, +137.9; mean +142.0, band 2 x 26.6 pp), as the published container's
    check_regression says (exit 0); against the curve (+173.1%) it was outside."""
    doc = _pretrained(
        measured(params_b=1.1, precision="INT8", delta=100.0, fp16_mj=RTX_4090D_1_1B, **ADA_4090D)
    )
    assert _check(tmp_path, doc) == 0
    out = capsys.readouterr().out
    assert "INT8 anchors:" in out and "mean +142.0%" in out and "the curve says +173.1%" in out
    assert "residual -42.0 pp, tolerance +-2 x 26.6 pp = +-53.2 pp" in out


def test_curves_from_a_file_and_from_a_url(tmp_path, capsys, monkeypatch):
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, HTTPServer

    site = json.loads((REPO / "ecocompute" / "data" / "site" / "curves.json").read_text())
    for anchor in site["curves"]["ada"]["INT8"]["anchors"]:
        if anchor["N"] == 1.1:
            anchor["dE"] = 300.0  # another curves.json: its anchors grade the report
    given = tmp_path / "curves.json"
    given.write_text(json.dumps(site))
    doc = _pretrained(
        measured(params_b=1.1, precision="INT8", delta=100.0, fp16_mj=RTX_4090D_1_1B, **ADA_4090D)
    )
    assert _check(tmp_path, doc, "--curves", str(given)) == 1
    out = capsys.readouterr().out
    assert f"curves:      {given}" in out and "mean +300.0%" in out

    body = json.dumps(site).encode()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200 if self.path == "/curves.json" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            pass

    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    server = HTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        assert _check(tmp_path, doc, "--curves", base + "/curves.json") == 1
        assert "mean +300.0%" in capsys.readouterr().out
        assert _check(tmp_path, doc, "--curves", base + "/nothing") == 2
        assert "invalid curves" in capsys.readouterr().err
    finally:
        server.shutdown()
        server.server_close()
    (tmp_path / "bad.json").write_text('{"curves": {"ada": {"INT8": {"A": "x"}}}}')
    assert _check(tmp_path, doc, "--curves", str(tmp_path / "bad.json")) == 2
    assert "lacks a finite A" in capsys.readouterr().err
    # values no curve or anchor can hold are bad input too, never an internal error
    for edit, says in (
        (lambda d: d["curves"]["ada"]["INT8"].update(Nstar=0), "Nstar > 0"),
        (lambda d: d["curves"]["ada"]["INT8"].update(resid_std=-10), "resid_std >= 0"),
        (lambda d: d.update(s_cap="x"), "s_cap is not a finite bound"),
        (lambda d: d.update(borrow=[]), "borrow is not a class name per class"),
        # numbers float() cannot hold, or NaN as text: bad input too (a review, 2026-12-05)
        (lambda d: d["curves"]["ada"]["NF4"].update(A=10**400), "curves.ada.NF4 lacks"),
        (lambda d: d["curves"]["ada"]["NF4"]["anchors"][0].update(dE="nan"), "ada.NF4 lacks"),
        (lambda d: d.update(s_cap={"NF4": 10**400}), "s_cap is not a finite bound"),
        (
            lambda d: d["fp16_energy"]["ada"]["anchors"][0].update(e_j1k=10**400),
            "fp16_energy.ada lacks",
        ),
        (lambda d: d.update(borrow={"hopper": 7}), "borrow is not a class name per class"),
        (lambda d: d.update(borrow={"ada": "ada"}), "borrow lends ada its own curve"),
        (lambda d: d["fp16_energy"]["ada"]["anchors"][0].update(N=0), "fp16_energy.ada lacks"),
    ):
        wrong = json.loads(json.dumps(site))
        edit(wrong)
        given.write_text(json.dumps(wrong))
        assert _check(tmp_path, doc, "--curves", str(given)) == 2, says
        err = capsys.readouterr().err
        assert "invalid curves" in err and says in err, err


def test_curves_without_a_fitted_range_are_fitted_over_their_anchors():
    """Issue 29: the published container's check_regression reads no n_min or n_max, so a
    curves.json it takes may have none; here such a curve is fitted over its anchors'
    sizes (as the site's own n_min and n_max are), and one without anchors is refused."""
    import json

    from ecocompute.published.site_curves import curves_from_text, site_curve

    site = json.loads((REPO / "ecocompute" / "data" / "site" / "curves.json").read_text())
    entry = site["curves"]["ada"]["INT8"]
    assert (entry.pop("n_min"), entry.pop("n_max")) == (0.5, 7.0)
    curve = site_curve("ada", "INT8", curves_from_text(json.dumps(site), "given"))
    assert curve is not None and curve.fitted_range_b == (0.5, 7.0)
    entry["anchors"] = []
    with pytest.raises(
        ValueError, match=r"curves\.ada\.INT8 lacks a finite A, S, Nstar > 0, n_min"
    ):
        curves_from_text(json.dumps(site), "given")


def test_curves_or_a_trace_that_is_a_fifo_is_refused_not_waited_on(tmp_path, capsys):
    """A FIFO named as --curves, or as the power trace a report names, is bad input in
    one line: reading it waited for a writer that never came. (Every 2 s its write end is
    opened and closed, so a reader that waits ends too, with another message.)"""
    import contextlib
    import os
    import threading

    from ecocompute.errors import InputError
    from ecocompute.plots.trace_plot import read_trace_csv

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = threading.Event()

    def unblock() -> None:
        while not done.wait(2.0):
            with contextlib.suppress(OSError):  # no reader waiting: nothing to end
                os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))

    threading.Thread(target=unblock, daemon=True).start()
    try:
        doc = measured(params_b=1.1, delta=20.0, fp16_mj=RTX_4090D_1_1B, **ADA_4090D)
        assert _check(tmp_path, doc, "--curves", str(fifo)) == 2
        assert "is not a regular file" in capsys.readouterr().err
        with pytest.raises(InputError, match="is not a regular file"):
            read_trace_csv(fifo)
    finally:
        done.set()


def test_a_curves_url_with_a_password_is_refused_without_echoing_it(tmp_path, capsys):
    """--api_base and --site refuse user:pw@ without showing them; --curves printed the
    password back in its fetch error (a review, 2026-12-05)."""
    doc = REPO / "tests" / "data" / "upstream" / "conformant-v1.1@8778c42.json"
    assert main(["check", str(doc), "--curves", "https://alice:s3cret@example.com/c.json"]) == 2
    err = capsys.readouterr().err
    assert "https://***@example.com/c.json" in err and "alice" not in err and "s3cret" not in err


def test_a_published_container_report_of_another_length_is_refused(tmp_path, capsys):
    """The published container writes its length only as measurement.tokens_per_run: a
    32-token run of its was graded WITHIN as if it were of the protocol's 256 (a review)."""
    from ..published_reports import measured_report

    doc = measured_report()
    doc["measurement"]["tokens_per_run"] = 32
    assert _check(tmp_path, doc) == 2
    out = capsys.readouterr().out
    assert "REFUSED (exit 2): the report generated 32 new tokens per run" in out
    assert _check(tmp_path, measured_report()) == 0  # its 256: graded


def test_a_derived_report_of_this_projects_figures_is_refused_in_their_name(tmp_path, capsys):
    """A review: check called a Hopper dry run's figures 'the published dataset' while
    its own report line and summary said this project's measurements."""
    out = tmp_path / "d"
    argv = ["energy_estimate", "--dry_run", "-q", "--model", "synthetic:llama-2-7b",
            "--gpu_arch", "hopper", "--output_dir", str(out)]  # fmt: skip
    assert main(argv) == 0
    capsys.readouterr()
    assert main(["check", str(out / "energy.json")]) == 2
    text = capsys.readouterr().out
    assert "derived from this project's own measurements" in text
    assert "published dataset" not in text
