"""The host's CPU steal over the measure stage (task/timing.py): read from /proc/stat at
the stage's ends, summed over its phases, a share of the host's CPU time; absent where
the file does not read. And what a report and its summary say of it."""

from __future__ import annotations

import pytest

from ecocompute.summary.report import render
from ecocompute.task.timing import CpuTimes, Stopwatch, read_cpu_times

from ..made_reports import measured

# user nice system idle iowait irq softirq steal guest guest_nice
STAT = "cpu  1000 10 200 8000 50 0 40 700 300 0\ncpu0 500 5 100 4000 25 0 20 350 150 0\n"


def test_the_first_line_of_proc_stat_gives_total_and_steal_ticks(tmp_path):
    (tmp_path / "stat").write_text(STAT)
    # guest time is inside user time already: not counted twice
    assert read_cpu_times(str(tmp_path / "stat")) == CpuTimes(total=10000, steal=700)


@pytest.mark.parametrize(
    "text",
    ["", "intr 1 2 3\n", "cpu 1 2 3\n", "cpu  1 2 3 4 5 6 7 x 9\n", "cpu0 1 2 3 4 5 6 7 8\n"],
)
def test_a_stat_file_that_does_not_read_as_one_gives_none(tmp_path, text):
    (tmp_path / "stat").write_text(text)
    assert read_cpu_times(str(tmp_path / "stat")) is None
    assert read_cpu_times(str(tmp_path / "missing")) is None


def test_the_measure_stages_steal_is_summed_over_its_phases():
    clock = Stopwatch()
    assert clock.timing().measure_cpu_steal_pct is None  # no tick yet: no share
    clock.add_cpu(CpuTimes(1000, 10), CpuTimes(3000, 110))  # 100 of 2,000 ticks
    clock.add_cpu(CpuTimes(5000, 200), CpuTimes(7000, 500))  # 300 of 2,000
    assert clock.timing().measure_cpu_steal_pct == pytest.approx(10.0)
    clock.add_cpu(CpuTimes(7000, 500), None)  # one end unread: the share is unknown
    assert clock.timing().measure_cpu_steal_pct is None


def test_a_measured_report_holds_the_share_and_its_summary_says_a_shared_hosts():
    doc = measured()
    timing = {"load_s": 10.0, "prepare_s": 1.0, "measure_s": 60.0, "session_s": 71.0,
              "reused_models": False}  # fmt: skip
    doc["measurement"]["timing"] = {**timing, "measure_cpu_steal_pct": 0.4}
    assert "  host  " not in render(doc, "out/energy.json")  # below 1%: not worth a line
    doc["measurement"]["timing"]["measure_cpu_steal_pct"] = 12.34
    line = next(x for x in render(doc, "out/energy.json").splitlines() if x.startswith("  host"))
    assert line == (
        "  host       12.3% of the host's CPU time went to other guests while measuring "
        "(a shared host; eager decoding's speed follows the host's)"
    )
