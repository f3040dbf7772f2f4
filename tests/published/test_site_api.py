"""--prefetch against the site's estimator API as its worker answers (issue 29, item 4).

The stand-in on 127.0.0.1 answers exactly what the site's api/worker.js answered for
the same request (tests/data/site/worker-answers.json: run under node from
hongping-zh/quant-energy at 8681225, status and body kept byte for byte); a request it
holds no answer for is a 404, so a request of another shape fails the test."""

from __future__ import annotations

import json
import threading
import urllib.parse
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path

import pytest

from ecocompute.cli import main
from ecocompute.params import resolve
from ecocompute.published.prefetch import EstimateInputs, prefetch

from ..conftest import REPO, read_report

ANSWERS = json.loads((REPO / "tests" / "data" / "site" / "worker-answers.json").read_text())


def _key(path: str) -> tuple[str, tuple[tuple[str, str], ...]]:
    where, _, query = path.partition("?")
    return where, tuple(sorted(urllib.parse.parse_qsl(query)))


RECORDED = {_key(path): answer for path, answer in ANSWERS["answers"].items()}


class Site:
    def __init__(self) -> None:
        self.asked: list[str] = []
        site = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                site.asked.append(self.path)
                answer = RECORDED.get(
                    _key(self.path), {"status": 404, "body": '{"error": "not found"}'}
                )
                body = answer["body"].encode("utf-8")
                self.send_response(answer["status"])
                self.send_header("Content-Type", "application/json; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: object) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        host, port = self.server.server_address[:2]
        self.base = f"http://{host}:{port}"


@pytest.fixture
def site(monkeypatch) -> Iterator[Site]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    s = Site()
    yield s
    s.server.shutdown()
    s.server.server_close()


def test_the_default_api_base_is_the_published_estimators():
    assert (
        resolve(None, {}).api_base == "https://ecocompute-estimator.zhanghongping1982.workers.dev"
    )


def test_the_request_is_the_workers_and_its_answer_is_read_whole(site):
    got = prefetch(
        site.base, EstimateInputs("TinyLlama/TinyLlama-1.1B-Chat-v1.0", 1.1, "NF4", 1, "4090")
    )
    assert got.error is None, got.error
    assert site.asked == ["/v1/estimate?params_b=1.1&arch=ada&precision=NF4&batch=1"]
    assert got.predicted_vs_fp16_pct == 24.8
    site_answer = got.answer
    assert site_answer is not None
    assert site_answer.ci95_pct == (8.1, 41.5)
    assert (site_answer.basis, site_answer.confidence) == ("measured", "medium")
    assert site_answer.crossover_b == 3.728 and site_answer.arch_used == "ada"
    assert len(site_answer.anchors) == 9
    assert [
        (a.params_b, a.delta_pct, a.gpu, a.n) for a in site_answer.anchors if a.params_b == 1.1
    ] == [
        (1.1, 16.31, "RTX 4090", 1),
        (1.1, 33.35, "RTX 4090D", 2),
    ]


def test_a_run_records_the_sites_figure_beside_ours(site, tmp_path, capsys):
    argv = ["run", "--dry_run", "--gpu_arch", "5090", "--model", "m-2b", "--params_b", "2",
            "--precision", "NF4", "--prefetch", "--api_base", site.base,
            "--output_dir", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert (
        "prefetch: the site's estimator" in err
        and "+20.0% energy per token vs FP16 [+14.5, +25.5], basis interpolated" in err
    )
    assert (
        "site said  +20.0% [+14.5, +25.5] vs FP16 (its estimator, before the run, "
        "basis interpolated, 4 anchors)" in out
    )
    fetched = read_report(tmp_path)["provenance"]["prefetch"]
    assert (
        fetched["url"] == site.base + "/v1/estimate?params_b=2&arch=blackwell&precision=NF4&batch=1"
    )
    answer = fetched["answer"]
    assert answer["ci95_pct"] == [14.5, 25.5] and answer["basis"] == "interpolated"
    assert answer["crossover_b"] == 4.751 and len(answer["anchors"]) == 4
    assert answer["anchors"][0] == {
        "params_b": 1.1,
        "delta_pct": 26.49,
        "model": "TinyLlama-1.1B",
        "gpu": "RTX 5090",
        "n": 2,
    }


def test_a_dry_runs_auto_class_is_asked_as_the_run_will_answer(site, tmp_path, capsys):
    argv = ["run", "--dry_run", "--model", "TinyLlama/TinyLlama-1.1B-Chat-v1.0",
            "--precision", "NF4", "--prefetch", "--api_base", site.base,
            "--output_dir", str(tmp_path)]  # fmt: skip
    assert main(argv) == 0
    assert site.asked == ["/v1/estimate?params_b=1.1&arch=ada&precision=NF4&batch=1"]
    assert read_report(tmp_path)["provenance"]["prefetch"]["predicted_vs_fp16_pct"] == 24.8


def test_a_format_the_site_has_no_curve_for_is_its_own_refusal(site):
    got = prefetch(site.base, EstimateInputs("m", 1.1, "INT8", 1, "t4"))
    assert got.answered and got.predicted_vs_fp16_pct is None
    assert "HTTP 400" in (got.error or "")


def test_the_old_request_shape_was_refused_by_the_worker():
    """What the tool sent before: the worker answered 400, arch is required."""
    (old,) = [a for p, a in ANSWERS["answers"].items() if "gpu_arch=" in p]
    assert old["status"] == 400 and json.loads(old["body"])["error"] == "arch is required"


def test_the_recorded_answers_say_where_they_come_from():
    assert "8681225da7c196b7505a48ed695952b04365ca33" in ANSWERS["source"]
    assert Path(REPO / "tests" / "data" / "site" / "worker-answers.json").stat().st_size > 1000
