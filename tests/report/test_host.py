"""system_under_test.host_cpu: the host's CPU, which the eager regime's speed follows
(two H200 hosts: FP16 45.0 and 33.9 tokens/s eager, NF4 +5.9% and +33.1%). That a
measured report holds it: tests/task/test_measure_cpu.py."""

from __future__ import annotations

import os

from ecocompute.report.host import host_cpu

X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 9654 96-Core Processor
processor\t: 1
model name\t: AMD EPYC 9654 96-Core Processor
"""
ARM = """processor\t: 0
BogoMIPS\t: 2000.00
CPU implementer\t: 0x41

Model\t\t: Raspberry Pi 4 Model B Rev 1.4
"""


def test_the_cpu_model_is_read_from_cpuinfo_on_x86_and_arm(tmp_path):
    for text, model in ((X86, "AMD EPYC 9654 96-Core Processor"),
                        (ARM, "Raspberry Pi 4 Model B Rev 1.4")):  # fmt: skip
        (tmp_path / "cpuinfo").write_text(text)
        cpu = host_cpu(str(tmp_path / "cpuinfo"))
        assert cpu.model == model
        assert cpu.logical_cpus == os.cpu_count()
        assert cpu.usable_cpus == len(os.sched_getaffinity(0))


def test_without_cpuinfo_the_model_is_the_platforms_or_absent(tmp_path, monkeypatch):
    monkeypatch.setattr("platform.processor", lambda: "")
    assert host_cpu(str(tmp_path / "missing")).model is None
    (tmp_path / "empty").write_text("processor\t: 0\nmodel name\t:   \n")
    assert host_cpu(str(tmp_path / "empty")).model is None
    monkeypatch.setattr("platform.processor", lambda: "x86_64")
    assert host_cpu(str(tmp_path / "missing")).model == "x86_64"
    (tmp_path / "odd").write_bytes(b"model name\t: Odd\x1b[31m \xff CPU" + b"x" * 300 + b"\n")
    odd = host_cpu(str(tmp_path / "odd")).model  # one printable line, whatever the kernel says
    assert odd.startswith("Odd\\x1b[31m \ufffd CPUx") and odd.isprintable() and len(odd) == 200
