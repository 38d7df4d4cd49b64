"""Utilisation under load: NVML readings on a background thread during timed windows.

``Sampler`` polls a reader every ``interval_s`` on a daemon thread and keeps each reading with its
host ``perf_counter`` time; ``window_summary`` keeps the readings that fall inside one timed window
(host times around the window, taken after the device synchronised) and summarises each field
(min, median, max, count), so a record can show whether the clock sagged during the window.

The NVML reader (``nvidia-ml-py``) reads the SM and memory clocks (MHz), power (W), temperature (C)
and the SM and memory-controller utilisation (%, NVML's own rates over its last sample period,
``nvmlDeviceGetUtilizationRates``: the fraction of time a kernel ran / the memory was read or
written, not a measure of efficiency). Where NVML is missing (a CPU machine), ``nvml_reader``
says why and no sampler runs. ``pause``/``resume`` let a side-by-side benchmark turn sampling
off and on between interleaved rounds without restarting the thread.

Energy per window (issue 43): ``EnergyMeter`` reads NVML's total-energy counter
(``nvmlDeviceGetTotalEnergyConsumption``, millijoules since the driver loaded, Volta and later) right before a
window starts and right after it ends, as Zeus and Megatron's ``EnergyMonitor`` do. Where the card has no
counter it falls back to the mean of two power readings times the window's time (the trapezoid of the power
samples at the window's ends, ``ENERGY_POWER``), labelled as such; neither: no energy (the field is absent).
"""

from __future__ import annotations

import functools
import itertools
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

FIELDS = ("sm_clock_mhz", "mem_clock_mhz", "power_w", "temperature_c", "sm_util_pct", "mem_util_pct")
INTERVAL_S = 0.02  # 50 Hz: several readings in a 100 ms window; NVML calls take tens of microseconds


def summarize(readings: list[dict[str, Any]], fields: tuple[str, ...] = FIELDS) -> dict[str, Any]:
    """Per field, ``{min, median, max, n}`` over the readings that have it (None when none do)."""
    out: dict[str, Any] = {"readings": len(readings)}
    for f in fields:
        values = [r[f] for r in readings if r.get(f) is not None]
        out[f] = (
            {"min": min(values), "median": float(statistics.median(values)), "max": max(values), "n": len(values)}
            if values
            else None
        )
    return out


def within(readings: list[dict[str, Any]], start: float, end: float) -> list[dict[str, Any]]:
    """The readings whose host time ``t`` lies in [start, end] (seconds of ``perf_counter``)."""
    return [r for r in readings if start <= r["t"] <= end]


def nvml_handle(pynvml: Any) -> tuple[Any, str]:
    """The NVML handle of the GPU torch computes on, and how it was found.

    NVML numbers GPUs physically, CUDA numbers the visible ones: with ``CUDA_VISIBLE_DEVICES=1`` torch's
    device 0 is NVML's device 1. The handle is looked up by the CUDA device's UUID, else its PCI bus id;
    never by index alone.
    """
    import torch

    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    uuid = getattr(props, "uuid", None)
    if uuid is not None:
        text = str(uuid)
        text = text if text.startswith("GPU-") else f"GPU-{text}"
        try:
            return pynvml.nvmlDeviceGetHandleByUUID(text), f"uuid {text}"
        except Exception:  # an older driver's spelling: try the bus id below
            pass
    pci = [getattr(props, f, None) for f in ("pci_domain_id", "pci_bus_id", "pci_device_id")]
    if all(isinstance(v, int) for v in pci):
        bus = f"{pci[0]:08X}:{pci[1]:02X}:{pci[2]:02X}.0"
        return pynvml.nvmlDeviceGetHandleByPciBusId(bus), f"pci bus {bus}"
    raise RuntimeError("torch reports neither the UUID nor the PCI bus id of its CUDA device")


def nvml_reader() -> tuple[Callable[[], dict[str, Any]] | None, str | None]:
    """A function returning one NVML reading of the GPU torch computes on, or (None, why NVML cannot be read).

    The function's ``device`` attribute says which GPU NVML reads (``uuid GPU-...`` or ``pci bus ...``).
    """
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return None, "nvidia-ml-py is not installed"
    try:
        pynvml.nvmlInit()
        handle, which = nvml_handle(pynvml)
    except Exception as exc:  # no driver, no device, no mapping: say so, never guess
        return None, f"NVML unavailable: {type(exc).__name__}: {exc}"

    def read() -> dict[str, Any]:
        util = pynvml.nvmlDeviceGetUtilizationRates(handle)
        return {
            "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "mem_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_MEM),
            "power_w": pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0,  # NVML reports milliwatts
            "temperature_c": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
            "sm_util_pct": util.gpu,
            "mem_util_pct": util.memory,
        }

    read.device = which  # type: ignore[attr-defined]
    return read, None


@functools.cache
def sm_clock_reader() -> Callable[[], int | None] | None:
    """A function returning the current SM clock (MHz) of the GPU torch computes on, or None without NVML.

    Made once per process (NVML initialised once, the handle found by ``nvml_handle``), so a window's clock
    costs one ``nvmlDeviceGetClockInfo`` call (tens of microseconds), not an NVML start and stop.
    """
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return None
    try:
        pynvml.nvmlInit()
        handle, _ = nvml_handle(pynvml)
    except Exception:  # no driver, no device, no mapping: windows record no clock rather than a guess
        return None

    def read() -> int | None:
        try:
            return int(pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM))
        except Exception:  # a failed read leaves the window's clock unknown, never fails the timing
            return None

    return read


ENERGY_COUNTER = "nvml_total_energy_counter"
"""Energy source: the difference of NVML's total-energy counter (mJ) across the window."""
ENERGY_POWER = "nvml_power_trapezoid"
"""Energy source where the card has no counter: the mean of NVML's power reading at the window's start and end
times its length (a two-sample integral; NVML's power reading is itself averaged over up to a second)."""
COUNTER_UNIT_J = 0.001
"""The counter counts millijoules (its unit, not how often it updates: ``counter_resolution`` measures that)."""


def counter_joules(start_mj: float | None, end_mj: float | None) -> float | None:
    """Joules between two readings of the total-energy counter (mJ); None when either is missing or the counter
    went backwards (a driver reload resets it), never a negative energy."""
    if start_mj is None or end_mj is None or end_mj < start_mj:
        return None
    return (end_mj - start_mj) * COUNTER_UNIT_J


def trapezoid_joules(start_w: float | None, end_w: float | None, seconds: float) -> float | None:
    """Joules of a window of ``seconds`` whose power read ``start_w`` and ``end_w`` watts at its ends (the
    trapezoid of two samples); None when either reading is missing or the window has no length."""
    if start_w is None or end_w is None or not seconds > 0:
        return None
    return (start_w + end_w) / 2.0 * seconds


class EnergyMeter:
    """Energy of a window from one of two readers: the total-energy counter (mJ) or, failing that, power (W).

    ``mark()`` reads before a window, ``joules(mark, seconds)`` after it; any failed read gives None (the
    window's energy is unknown), never an exception into the timing. ``source`` names what was read.
    """

    def __init__(
        self,
        read_counter_mj: Callable[[], float] | None = None,
        read_power_w: Callable[[], float] | None = None,
    ) -> None:
        self.read_counter_mj, self.read_power_w = read_counter_mj, read_power_w
        self.source = ENERGY_COUNTER if read_counter_mj is not None else ENERGY_POWER if read_power_w else None

    def _read(self) -> float | None:
        read = self.read_counter_mj if self.source == ENERGY_COUNTER else self.read_power_w
        try:
            return float(read()) if read is not None else None
        except Exception:  # a failed read leaves this window's energy unknown, never fails the timing
            return None

    def mark(self) -> float | None:
        """The reading at a window's start (mJ of the counter, or W)."""
        return self._read()

    def joules(self, start: float | None, seconds: float) -> float | None:
        """The window's energy in joules, from its start ``mark`` and its length in seconds."""
        end = self._read()
        if self.source == ENERGY_COUNTER:
            return counter_joules(start, end)
        return trapezoid_joules(start, end, seconds)


def counter_resolution(
    read_counter_mj: Callable[[], float], clock: Callable[[], float] = time.perf_counter, budget_s: float = 0.5
) -> dict[str, Any]:
    """How finely the total-energy counter resolves a window: its unit and how often it changes.

    Polls the counter for up to ``budget_s`` (stopping after five changes) and returns ``unit_j`` (its unit),
    ``update_interval_s`` (the median host time between changes, None if it changed fewer than twice) and
    ``min_step_j`` (the smallest change seen). A window a few update intervals long or shorter reads the
    counter's steps, not the window: the page states this interval beside its joules.
    """
    start = clock()
    last = read_counter_mj()
    changes: list[float] = []
    steps: list[float] = []
    while clock() - start < budget_s and len(changes) < 5:
        now = read_counter_mj()
        if now != last:
            changes.append(clock())
            steps.append((now - last) * COUNTER_UNIT_J)
            last = now
    gaps = [b - a for a, b in itertools.pairwise(changes)]
    return {
        "unit_j": COUNTER_UNIT_J,
        "update_interval_s": float(statistics.median(gaps)) if gaps else None,
        "min_step_j": min(steps) if steps else None,
    }


@functools.cache
def energy_meter() -> EnergyMeter:
    """This process's energy meter for the GPU torch computes on (made once: NVML initialised once).

    The counter where one read succeeds, else power where one read succeeds, else a meter with no source
    (every window's energy None). Never raises.
    """
    try:
        import pynvml  # nvidia-ml-py
    except ImportError:
        return EnergyMeter()
    try:
        pynvml.nvmlInit()
        handle, _ = nvml_handle(pynvml)
    except Exception:  # no driver, no device, no mapping: no energy rather than a guess
        return EnergyMeter()

    def counter() -> float:
        return float(pynvml.nvmlDeviceGetTotalEnergyConsumption(handle))

    def power() -> float:
        return pynvml.nvmlDeviceGetPowerUsage(handle) / 1000.0  # NVML reports milliwatts

    for read, meter in ((counter, EnergyMeter(read_counter_mj=counter)), (power, EnergyMeter(read_power_w=power))):
        try:
            read()
        except Exception:  # not supported on this card (NVML_ERROR_NOT_SUPPORTED): try the next source
            continue
        return meter
    return EnergyMeter()


def energy_facts() -> dict[str, Any]:
    """What a run's energy per window is read from, for the machine fingerprint (GPU runs only).

    ``{"source": ENERGY_COUNTER | ENERGY_POWER | None, ...}`` with the counter's ``counter_resolution``.
    Never raises.
    """
    meter = energy_meter()
    out: dict[str, Any] = {"source": meter.source}
    if meter.source == ENERGY_COUNTER and meter.read_counter_mj is not None:
        try:
            out.update(counter_resolution(meter.read_counter_mj))
        except Exception as exc:  # a failed poll leaves the resolution unknown
            out["resolution_error"] = f"{type(exc).__name__}: {exc}"
    return out


class Sampler:
    """Calls ``read()`` every ``interval_s`` on a daemon thread while running and not paused."""

    def __init__(self, read: Callable[[], dict[str, Any]], interval_s: float = INTERVAL_S):
        if not interval_s > 0:
            raise ValueError("interval_s must be > 0")
        self.read, self.interval_s = read, interval_s
        self.readings: list[dict[str, Any]] = []
        self.errors: list[str] = []
        self._stop = threading.Event()
        self._running = threading.Event()
        self._running.set()
        self._thread = threading.Thread(target=self._loop, name="probebook-sampler", daemon=True)

    def _loop(self) -> None:
        while not self._stop.is_set():
            if not self._running.wait(timeout=0.1):
                continue
            try:
                reading = self.read()
            except Exception as exc:  # a failed read is recorded, never fatal to the timing it watches
                if len(self.errors) < 10:
                    self.errors.append(f"{type(exc).__name__}: {exc}")
            else:
                reading["t"] = time.perf_counter()
                self.readings.append(reading)
            self._stop.wait(self.interval_s)

    def start(self) -> Sampler:
        self._thread.start()
        return self

    def pause(self) -> None:
        self._running.clear()

    def resume(self) -> None:
        self._running.set()

    def stop(self) -> None:
        self._stop.set()
        self._running.set()
        self._thread.join(timeout=5)

    def __enter__(self) -> Sampler:
        return self.start()

    def __exit__(self, *_: Any) -> None:
        self.stop()

    def window_summary(self, start: float, end: float) -> dict[str, Any]:
        """Summary of the readings taken inside one window (host seconds)."""
        return summarize(within(list(self.readings), start, end))
