"""system_under_test.host_cpu: the host's CPU, which the eager regime's speed follows
(two H200 hosts: FP16 45.0 and 33.9 tokens/s eager, NF4 +5.9% and +33.1%). That a
measured report holds it: tests/task/test_measure_cpu.py."""

from __future__ import annotations

import os

from ecocompute.report.host import host_cpu

X86 = """processor\t: 0
vendor_id\t: AuthenticAMD
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9654 96-Core Processor
stepping\t: 1
cpu MHz\t\t: 2396.400
flags\t\t: fpu vme de pse tsc msr
processor\t: 1
cpu family\t: 25
model\t\t: 17
model name\t: AMD EPYC 9654 96-Core Processor
stepping\t: 1
cpu MHz\t\t: 3700.000
flags\t\t: fpu vme de pse tsc msr
"""
VIRTUAL = """processor\t: 0
cpu family\t: 6
model\t\t: 167
model name\t: Intel(R) Xeon(R) Processor
stepping\t: 1
cpu MHz\t\t: 2599.998
flags\t\t: fpu vme hypervisor lahf_lm
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


def test_where_a_hypervisor_hides_the_name_the_numbers_and_clock_tell_cpus_apart(tmp_path):
    """Six H200 hosts all named their CPU "Intel(R) Xeon(R) Processor" while FP16 decoded
    at 29-43 tokens/s eager: the first processor's numbers, clock and flag are kept."""
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text(VIRTUAL)
    cpu = host_cpu(str(cpuinfo))
    assert (cpu.cpu_id, cpu.clock_mhz, cpu.hypervisor) == (
        "family 6 model 167 stepping 1", 2599.998, True,
    )  # fmt: skip
    cpuinfo.write_text(X86)  # the first processor's clock, not the second's
    cpu = host_cpu(str(cpuinfo))
    assert (cpu.cpu_id, cpu.clock_mhz, cpu.hypervisor) == (
        "family 25 model 17 stepping 1",
        2396.4,
        False,
    )
    cpuinfo.write_text(ARM)  # no x86 numbers, clock or flags: absent, not guessed
    cpu = host_cpu(str(cpuinfo))
    assert (cpu.cpu_id, cpu.clock_mhz, cpu.hypervisor) == (None, None, None)
    cpuinfo.write_text("cpu family\t: 6\nmodel\t: 1e9\nstepping\t: 1\ncpu MHz\t: nan\n")
    cpu = host_cpu(str(cpuinfo))
    assert (cpu.cpu_id, cpu.clock_mhz) == (None, None)
