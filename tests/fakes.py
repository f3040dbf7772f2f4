"""Test stand-ins at the hardware seams: a fake NVML (scripted power traces, an energy
counter that integrates them exactly) and a CPU accelerator. Not shipped in the package."""

from __future__ import annotations

import contextlib
import math
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from ecocompute.core.units import mw_to_w
from ecocompute.formats.table import FP16_SPEC, FormatSpec
from ecocompute.llm.loading import LoadedModel, ModelBackend
from ecocompute.llm.quantizers import quantizer_for
from ecocompute.monitor.sampler import PowerSampler, SamplerOpener, open_power_sampler
from ecocompute.task.machine import Machine
from ecocompute.telemetry.base import (
    CLOCK_EVENT_BITS,
    POWER_FIELD_INSTANT,
    BoardInfo,
    Capabilities,
    ClockSample,
    EdgeState,
    GpuDevice,
    GpuTelemetry,
    TelemetryNotSupported,
    TelemetryReadError,
)
from ecocompute.telemetry.mapping import CudaDevice

PowerTrace = Callable[[float], float]  # watts at monotonic time t
ReasonTrace = Callable[[float], tuple[str, ...]]  # clock-event reasons active at time t

FAKE_BOARD = BoardInfo(
    board_part_number="692-2G520-0282-001",
    vbios_version="96.00.AF.00.01",
    power_limit_default_mw=700_000,
    max_sm_clock_mhz=1980,
    max_memory_clock_mhz=3201,
)


def fake_devices(n: int = 1, name: str = "NVIDIA H200") -> list[GpuDevice]:
    return [
        GpuDevice(
            i, name, f"GPU-0000000{i}-aaaa-bbbb-cccc-dddddddddddd", f"0000:{0x18 + i:02x}:00.0"
        )
        for i in range(n)
    ]


class FakeTelemetry(GpuTelemetry):
    """Power follows a function of monotonic time; the counter is its exact integral
    (numerically, at 1 ms), so counter and sampled energy can be compared analytically."""

    def __init__(
        self,
        devices: list[GpuDevice] | None = None,
        power_w: PowerTrace | dict[int, PowerTrace] = lambda t: 100.0,
        *,
        power: bool = True,
        energy_counter: bool = True,
        fail_read: Callable[[int], bool] | None = None,
        clock: Callable[[], float] = time.monotonic,
        counter_step_s: float | None = None,
        board: BoardInfo | dict[int, BoardInfo] = FAKE_BOARD,
        reasons: ReasonTrace | None = None,
        temperature_c: Callable[[float], float] = lambda t: 40.0,
        power_limit_mw: int = 700_000,
    ) -> None:
        """reasons(t): the clock-event reasons active at time t (None: none ever); the
        fake's cumulative throttle counters integrate them (1 ms steps), its clock reads
        report them and a lower SM clock while a throttle reason is active."""
        self._board = board
        self._reasons = reasons
        self._temperature = temperature_c
        self._power_limit_mw = power_limit_mw
        self._devices = devices if devices is not None else fake_devices()
        self._power = power_w
        self._caps = Capabilities(power, POWER_FIELD_INSTANT if power else None, energy_counter)
        self._fail_read = fail_read
        self._clock = clock
        self._t0 = clock()
        self._reads = 0
        self._lock = threading.Lock()
        self.closed = False
        self.energy_reads: list[tuple[int, float]] = []
        self.counter_step_s = counter_step_s  # like NVML: the counter moves in steps
        self._cumulative: dict[int, tuple[float, float]] = {}  # index -> (t, joules)

    def trace(self, index: int) -> PowerTrace:
        return self._power[index] if isinstance(self._power, dict) else self._power

    @property
    def clock(self) -> Callable[[], float]:
        return self._clock

    @contextlib.contextmanager
    def at(self, t: float) -> Iterator[None]:
        """Reads inside the block are as of time t (ScheduledSampler's reads, made late
        but stamped, and answered, at the time they were due)."""
        clock, self._clock = self._clock, lambda: t
        try:
            yield
        finally:
            self._clock = clock

    def devices(self) -> list[GpuDevice]:
        return list(self._devices)

    def driver_version(self) -> str | None:
        return "580.00.00-fake"

    def power_limit_mw(self, index: int) -> int | None:
        return self._power_limit_mw

    def board(self, index: int) -> BoardInfo:
        return self._board[index] if isinstance(self._board, dict) else self._board

    def edge_state(self, index: int) -> EdgeState:
        now = self._clock()
        throttle = {}
        if self._reasons is not None:
            active = self._reasons
            for reason in ("power_cap", "sw_thermal", "hw_thermal", "hw_power_brake"):
                seconds = integrate(
                    lambda t, r=reason: 1.0 if r in active(t) else 0.0, self._t0, now
                )
                throttle[reason] = round(seconds * 1e9)
        temperature = self._temperature(now)
        return EdgeState(temperature, temperature - 2.0, throttle)

    def clock_sample(self, index: int) -> ClockSample | None:
        active = () if self._reasons is None else self._reasons(self._clock())
        mask = 0
        for reason in active:
            mask |= CLOCK_EVENT_BITS[reason]
        return ClockSample(1980 - (300 if active else 0), 3201, mask)

    def memory_mib(self, index: int) -> tuple[int, int] | None:
        return 140_000, 143_771

    def capabilities(self, index: int) -> Capabilities:
        return self._caps

    def power_mw(self, index: int) -> int:
        if not self._caps.power:
            raise TelemetryNotSupported("power: not supported")
        with self._lock:
            self._reads += 1
            k = self._reads
        if self._fail_read is not None and self._fail_read(k):
            raise TelemetryReadError(f"read {k} failed (scripted)")
        return round(self.trace(index)(self._clock()) * 1000)

    def energy_mj(self, index: int) -> int:
        if not self._caps.energy_counter:
            raise TelemetryNotSupported("energy counter: not supported")
        now = self._clock()
        self.energy_reads.append((index, now))
        if self.counter_step_s:
            steps = math.floor((now - self._t0) / self.counter_step_s)
            now = self._t0 + steps * self.counter_step_s
        return round(self.energy_until_j(index, now) * 1000)

    def energy_until_j(self, index: int, t: float) -> float:
        """Exact energy since creation (cached: requests come in time order)."""
        with self._lock:
            t_done, joules = self._cumulative.get(index, (self._t0, 0.0))
            if t < t_done:
                return integrate(self.trace(index), self._t0, t)
            joules += integrate(self.trace(index), t_done, t)
            self._cumulative[index] = (t, joules)
            return joules

    def close(self) -> None:
        self.closed = True


def integrate(f: PowerTrace, a: float, b: float, step_s: float = 1e-3) -> float:
    """Joules of f over [a, b] by the midpoint rule (exact for piecewise-linear f at 1 ms)."""
    if b <= a:
        return 0.0
    n = max(1, math.ceil((b - a) / step_s))
    h = (b - a) / n
    return sum(f(a + (k + 0.5) * h) for k in range(n)) * h


class CpuAccelerator:
    """Runs the models on the CPU, claiming to be the fake devices' first GPU.

    sync_s: each synchronize() sleeps this long, as a GPU's queue would drain. Every
    measured window closes with a synchronize(), so this stretches the windows with time
    in which the sampler thread is sure to get the GIL (for tests that count samples).
    """

    kind = "cpu"
    max_memory_gib: float | None = None

    def __init__(
        self, devices: list[GpuDevice] | None = None, free_mib: int = 100_000, sync_s: float = 0.0
    ) -> None:
        devs = devices if devices is not None else fake_devices()
        # CUDA sees the same GPUs as NVML here, named the way torch names them.
        self._cuda = [
            CudaDevice(i, d.name, d.uuid.removeprefix("GPU-"), d.pci_bus_id)
            for i, d in enumerate(devs)
        ]
        self.free_mib = free_mib
        self.sync_s = sync_s
        self.syncs = 0

    def devices(self) -> list[CudaDevice]:
        return list(self._cuda)

    def synchronize(self) -> None:
        self.syncs += 1
        if self.sync_s:
            time.sleep(self.sync_s)

    def placement(self) -> dict[str, object]:
        return {"device_map": {"": "cpu"}}

    def budgets_bytes(self) -> dict[int, int]:
        return {0: self.free_mib * 2**20}

    def offloaded(self, model: Any) -> list[str]:
        return []  # the CPU is this stand-in's device

    def input_device(self) -> Any:
        return "cpu"

    def memory_mib(self) -> tuple[int, int] | None:
        return self.free_mib, 143_771

    def occupied(self, model: Any) -> tuple[int, ...]:
        return (0,)

    def release(self) -> None:
        pass

    def versions(self) -> dict[str, str | None]:
        import torch

        return {"torch": torch.__version__, "cuda": None}

    def compute_capability(self) -> tuple[int, int] | None:
        return None


class StandInQuantBackend(ModelBackend):
    """Some libraries have no kernels on this CPU: the 'quantized' arm is the FP16 model,
    labelled with the requested format (and its library's record). Only for testing the
    protocol's bookkeeping."""

    def __init__(self) -> None:
        self.loads: list[str] = []
        self.preflights: list[str] = []

    def preflight(self, spec: FormatSpec, accelerator: Any) -> None:
        self.preflights.append(spec.precision)

    def load(self, checkpoint: Any, spec: FormatSpec, accelerator: Any) -> LoadedModel:
        self.loads.append(spec.precision)
        loaded = super().load(checkpoint, FP16_SPEC, accelerator)
        loaded.precision = spec.precision
        loaded.spec = spec
        loaded.quantization = quantizer_for(spec).record()
        return loaded


class FakeClock:
    """A monotonic clock that moves only when told (wait() advances it)."""

    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t

    def wait(self, seconds: float) -> None:
        self.t += seconds


def drive(sampler: PowerSampler, clock: FakeClock, reads: int, read_cost_s=lambda k: 0.002):
    """Run the sampling loop synchronously on the fake clock for a number of reads."""
    times: list[float] = []
    inner = sampler._read

    def read(index: int) -> float:
        times.append(clock.t)
        clock.t += read_cost_s(len(times))
        if len(times) >= reads:
            sampler._stop.set()
        return inner(index)

    sampler._read = read
    sampler.run(wait=clock.wait)
    return times


# ScheduledSamplers started and not yet stopped (where a real one's thread would live on)
RUNNING_SAMPLERS: set[ScheduledSampler] = set()


class ScheduledSampler(PowerSampler):
    """The power sampler as it reads when its thread is never late: the k-th read at
    exactly t0 + k / rate_hz, so that no unit test depends on whether a thread got the CPU
    (on a loaded machine the real one can fall behind, and the meter rightly refuses the
    window). No thread: the reads due so far are made when the traces are looked at,
    each answered by the fake NVML as of its due time (FakeTelemetry.at), through the
    same power_mw and clock_sample a real sampler calls (scripted failures included).
    Reads stop at stop(). The meter's rule (too few reads in a window: refused) is the
    shipped code, untouched; test_sampler.py and test_faults.py test it directly."""

    def __init__(self, telemetry: FakeTelemetry, indices: Sequence[int], rate_hz: float):
        self._telemetry = telemetry
        self._catching_up = False
        self._t0: float | None = None
        self._end: float | None = None
        self._k = 0
        super().__init__(
            lambda i: mw_to_w(telemetry.power_mw(i)),
            indices,
            rate_hz,
            clock=lambda: telemetry.clock(),  # pinned by at() while a read is made
            read_clocks=telemetry.clock_sample,
        )

    @property  # type: ignore[override]
    def traces(self) -> dict[int, Any]:
        if not self._catching_up:
            self._catch_up()
        return self._traces

    @traces.setter
    def traces(self, value: dict[int, Any]) -> None:
        self._traces = value

    def start(self) -> None:
        if self._t0 is not None:
            raise RuntimeError("sampler already started")
        self._t0 = self._telemetry.clock()
        RUNNING_SAMPLERS.add(self)

    def stop(self) -> None:
        if self._t0 is not None and self._end is None:
            self._end = self._telemetry.clock()
        RUNNING_SAMPLERS.discard(self)

    def _catch_up(self) -> None:
        if self._t0 is None:
            return
        until = self._end if self._end is not None else self._telemetry.clock()
        period_s = 1.0 / self.rate_hz
        self._catching_up = True
        try:
            while self._t0 + self._k * period_s <= until:
                with self._telemetry.at(self._t0 + self._k * period_s):
                    self.read_once()
                self._k += 1
        finally:
            self._catching_up = False


def scheduled_sampler(
    telemetry: GpuTelemetry, indices: Sequence[int], rate_hz: float
) -> PowerSampler:
    """The unit tests' sampler: ScheduledSampler on a fake NVML (the real one elsewhere)."""
    if isinstance(telemetry, FakeTelemetry):
        return ScheduledSampler(telemetry, indices, rate_hz)
    return open_power_sampler(telemetry, indices, rate_hz)


SetAttr = Callable[[Any, str, Any], None]


def fake_machine(
    telemetry: Callable[[], GpuTelemetry] | None = None,
    accelerator: Any | None = None,
    backend: Callable[[], ModelBackend] = StandInQuantBackend,
    open_sampler: SamplerOpener = scheduled_sampler,
) -> Machine:
    """A Machine of stand-ins: a fake NVML, the CPU accelerator, a backend, and the
    sampler that is never late (open_power_sampler: the real, threaded one)."""
    return Machine(
        open_telemetry=telemetry or FakeTelemetry,
        open_accelerator=lambda count, cap_gib=None: accelerator or CpuAccelerator(),
        backend=backend(),
        open_sampler=open_sampler,
    )


def install_fakes(
    set_attr: SetAttr,
    telemetry: Callable[[], GpuTelemetry],
    accelerator: Any | None = None,
    backend: Callable[[], ModelBackend] = StandInQuantBackend,
    open_sampler: SamplerOpener = scheduled_sampler,
) -> None:
    """Put the fakes behind the CLI: task/run.py asks this_machine() at call time.
    set_attr is monkeypatch.setattr in a test, or plain setattr in a subprocess driver
    (tests/cli_with_fakes.py)."""
    import ecocompute.task.run as run

    set_attr(
        run,
        "this_machine",
        lambda: fake_machine(telemetry, accelerator, backend, open_sampler),
    )


def estimate_report(
    params: Any,
    progress: Any = None,
    *,
    open_telemetry: Callable[[], GpuTelemetry] | None = None,
    accelerator: Any | None = None,
    backend: ModelBackend | None = None,
    command: list[str] | None = None,
) -> dict[str, Any]:
    """run_energy_estimate on stand-ins, built into its report, as the file's JSON
    document (not yet checked)."""
    from ecocompute.boundary.progress import Progress
    from ecocompute.report.build import build_report
    from ecocompute.task.run import run_energy_estimate

    machine = Machine(
        open_telemetry=open_telemetry or FakeTelemetry,
        open_accelerator=lambda count, cap_gib=None: accelerator or CpuAccelerator(),
        backend=backend if backend is not None else ModelBackend(),
        open_sampler=scheduled_sampler,
    )
    outcome = run_energy_estimate(params, progress or Progress(quiet=True), machine=machine)
    return build_report(outcome, command).model_dump(mode="json")  # the file's document


def small_nf4_report(
    *,
    open_telemetry: Callable[[], GpuTelemetry] | None = None,
    accelerator: Any | None = None,
    **flags: str,
) -> dict[str, Any]:
    """A measured NF4 run of the tiny model on the stand-ins (4 tokens, 2 rounds, no
    warm-up), as its JSON document; flags override or add run parameters."""
    from ecocompute.params import resolve

    base = {
        "model_name": "synthetic:tiny-test",
        "precision": "NF4",
        "tokens": "4",
        "iterations": "2",
        "warmup": "0",
        "idle_seconds": "0.2",
    }
    return estimate_report(
        resolve(None, {**base, **flags}),
        open_telemetry=open_telemetry,
        accelerator=accelerator or CpuAccelerator(),
        backend=StandInQuantBackend(),
    )
