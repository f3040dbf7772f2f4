"""Issue 20, item 4: the estimator's answer (--prefetch) is untrusted input.

A huge float, a 400-digit integer or deeply nested JSON killed the run; urllib's
timeout applied per read, so a server dripping a byte at a time held the run forever;
the server's bytes (NUL, CR, escape codes, several lines) reached the terminal raw; and
a URL with a password was copied into the report and onto stderr. Now: a deadline for
the whole request, a size cap, strict JSON and a sane delta, one printable line, and
no credentials in a URL at all. No test reaches the network: every server is a socket
on 127.0.0.1.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterator

import pytest

from ecocompute.cli import main
from ecocompute.published.prefetch import EstimateInputs, prefetch
from ecocompute.report.read import energy_report_problems

from ..conftest import read_report

INPUTS = EstimateInputs("TinyLlama/TinyLlama-1.1B-Chat-v1.0", 1.1, "NF4", 1, "ada")
UNPRINTABLE = ("\x00", "\x1b", "\r", "\x07")


def _http(body: bytes, status: bytes = b"200 OK") -> bytes:
    head = b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\n"
    return head + b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body


class RawServer:
    """A TCP server on 127.0.0.1 that answers every connection with talk(conn)."""

    def __init__(self, talk: Callable[[socket.socket], None]) -> None:
        self.stop = threading.Event()
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.talk = talk
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()
        self.base = f"http://127.0.0.1:{self.sock.getsockname()[1]}/api"

    def _serve(self) -> None:
        while not self.stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            threading.Thread(target=self._one, args=(conn,), daemon=True).start()

    def _one(self, conn: socket.socket) -> None:
        with conn:
            try:
                conn.recv(65536)  # the request
                self.talk(conn)
            except OSError:
                pass

    def close(self) -> None:
        self.stop.set()
        self.thread.join(2)
        self.sock.close()


@pytest.fixture
def serve(monkeypatch) -> Iterator[Callable[[Callable[[socket.socket], None]], RawServer]]:
    monkeypatch.setenv("NO_PROXY", "127.0.0.1")
    monkeypatch.setenv("no_proxy", "127.0.0.1")
    servers: list[RawServer] = []

    def start(talk: Callable[[socket.socket], None]) -> RawServer:
        servers.append(RawServer(talk))
        return servers[-1]

    yield start
    for server in servers:
        server.close()


def answers(raw: bytes) -> Callable[[socket.socket], None]:
    return lambda conn: conn.sendall(raw)


def _drip(first: bytes) -> Callable[[socket.socket], None]:
    def talk(conn: socket.socket) -> None:
        conn.sendall(first)
        for _ in range(600):  # a byte every 0.1 s for a minute: each read is quick
            time.sleep(0.1)
            conn.sendall(b"x")

    return talk


HOSTILE_BODIES = {
    "huge float": (b'{"delta_pct": 1e300}', "impossible delta"),
    "overflowing float": (b'{"delta_pct": 1e999}', "too large for a float"),
    "400 digits": (b'{"delta_pct": 1' + b"0" * 400 + b"}", "integer of 401 digits"),
    "below -100%": (b'{"delta_pct": -250}', "impossible delta"),
    "NaN": (b'{"delta_pct": NaN}', "not with JSON an estimate is"),
    "deeply nested": (b'{"results": ' + b"[" * 30_000 + b"]" * 30_000 + b"}", "nested too deeply"),
    "nested past the limit": (b'{"a":' * 30 + b"1" + b"}" * 30, "nested too deeply"),
}


@pytest.mark.parametrize("name", list(HOSTILE_BODIES))
def test_a_hostile_answer_is_no_estimate_and_the_run_goes_on(tmp_path, capsys, serve, name):
    body, why = HOSTILE_BODIES[name]
    server = serve(answers(_http(body)))
    out = tmp_path / "out"
    argv = ["run", "--dry_run", "--gpu_arch", "4090", "--prefetch", "--api_base", server.base]
    assert main([*argv, "--output_dir", str(out), "-q"]) == 0
    err = capsys.readouterr().err.splitlines()
    (line,) = [ln for ln in err if ln.startswith("prefetch:")]
    assert why in line, line
    report = read_report(out)
    assert energy_report_problems(report) == []
    fetched = report["provenance"]["prefetch"]
    assert fetched["predicted_vs_fp16_pct"] is None and why in fetched["error"]


@pytest.mark.parametrize(
    ("body", "anchors_kept"),
    [
        (b'{"delta_pct": 5, "anchors": [{"N": 7, "dE": 1, "n": 99999999999999999999}]}', 1),
        (b'{"delta_pct": 5, "crossover_b": 1e308, "anchors": [{"N": 1e308, "dE": 1}]}', 0),
    ],
)
def test_an_answers_number_no_report_can_hold_is_left_out_and_the_run_writes(
    tmp_path, capsys, serve, body, anchors_kept
):
    """A 20-digit count or a size of 1e308 in the answer was kept, and the report's own
    check (no figure beyond 1e15) then refused the whole report after the run: on a GPU,
    the measurement lost to an untrusted answer (a review, 2026-12-04)."""
    server = serve(answers(_http(body)))
    out = tmp_path / "out"
    argv = ["run", "--dry_run", "--gpu_arch", "h200", "--prefetch", "--api_base", server.base]
    assert main([*argv, "--params_b", "7", "--output_dir", str(out), "-q"]) == 0
    answer = read_report(out)["provenance"]["prefetch"]["answer"]
    assert answer.get("crossover_b") is None
    anchors = answer.get("anchors") or []
    assert len(anchors) == anchors_kept  # the 7B anchor kept without its count
    assert all(a.get("n") is None and a["params_b"] <= 1e15 for a in anchors)


def test_a_redirect_to_ftp_is_not_followed(serve):
    """urllib follows a redirect to ftp:// by default, on a socket the deadline does not
    watch: a server there kept the prefetch thread reading into the measurement."""
    target = "ftp://127.0.0.1:9/x"  # (urllib refuses file:// itself)
    raw = f"HTTP/1.1 302 Found\r\nLocation: {target}\r\nContent-Length: 0\r\n\r\n"
    server = serve(answers(raw.encode()))
    got = prefetch(server.base, INPUTS, timeout_s=5.0)
    assert got.predicted_vs_fp16_pct is None
    assert got.error is not None and "which is not followed" in got.error, got.error


def test_a_server_that_drips_bytes_is_cut_off_by_the_whole_request_deadline(serve):
    """Each read gets a byte within a tenth of a second, so a per-read timeout never
    fires; the deadline is for the whole request."""
    for first in (
        b"HTTP/1.1 200 OK\r\nX-Slow: ",
        b"HTTP/1.1 200 OK\r\nContent-Length: 99\r\n\r\n",  # then the body drips
    ):
        server = serve(_drip(first))
        started = time.monotonic()
        got = prefetch(server.base, INPUTS, timeout_s=0.5)
        assert time.monotonic() - started < 30  # the drip alone would last a minute
        assert got.answered is False and got.predicted_vs_fp16_pct is None
        assert "timed out (0.5 s for the whole request)" in (got.error or "")


@pytest.mark.parametrize(
    "raw",
    [
        _http(b"{}", status=b"500 Bo\x1b[31mom\x07 \x00 eh"),  # a reason with escapes
        b"\x1b[2J\x1b[Hnot http at all\r\nsecond line\r\nthird\r\n\r\n",  # a garbage status line
    ],
    ids=["reason", "status-line"],
)
def test_what_the_server_says_reaches_stderr_as_one_printable_line(tmp_path, serve, raw):
    import subprocess
    import sys

    from ..conftest import REPO

    server = serve(answers(raw))
    out = tmp_path / "out"
    done = subprocess.run(
        [
            *(sys.executable, "-m", "ecocompute", "run", "--dry_run", "-q", "--prefetch"),
            *("--api_base", server.base, "--output_dir", str(out)),
        ],
        capture_output=True,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(REPO), "NO_PROXY": "127.0.0.1"},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    err = done.stderr.decode("utf-8")
    assert err.count("\n") == 1 and err.startswith("prefetch: "), repr(err)
    assert not any(c in err.rstrip("\n") for c in UNPRINTABLE), repr(err)
    error = json.loads((out / "energy.json").read_text())["provenance"]["prefetch"]["error"]
    assert "\n" not in error and not any(c in error for c in UNPRINTABLE)


@pytest.mark.parametrize("flag", ["--api_base", "--site"])
@pytest.mark.parametrize(
    "url",
    [
        "http://user:s3cret@127.0.0.1:9/api",
        "https://s3cret@quantenergy.tech",
        "http://a:s3cret@b@c/x y",
    ],
)
def test_a_url_with_credentials_is_refused_without_showing_them(tmp_path, capsys, flag, url):
    out = tmp_path / "out"
    status = main(
        ["run", "--dry_run", "--prefetch", "--share", flag, url, "--output_dir", str(out)]
    )
    err = capsys.readouterr().err.strip().splitlines()
    assert status == 2 and len(err) == 1, err
    assert err[0].startswith(f"ecocompute: error: invalid {flag[2:]} ")
    assert "user name or password" in err[0] and "s3cret" not in err[0]
    assert not out.exists()
