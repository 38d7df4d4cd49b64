"""How an evidence page shows a stored field: a prose label and a value in its unit (ARCHITECTURE.md §Pages).

Evidence keeps raw fields (``gpu_memory_bytes: 150109880320``, ``created_unix: 1796080000``, ``median_s:
0.000045``); a reader wants ``GPU memory``, ``139.8 GiB``, ``2026-12-01T10:13:20Z`` and ``45 µs``. The unit is read
from the key's suffix, the one convention every probe follows (``_s`` seconds, ``_bytes`` bytes, ``_mhz``,
``_w``, ``_c``, ``_at``/``_unix`` times); a key without one shows its value as stored. Text values lose any
absolute path of the measuring host (``render.numbers.links.scrub_paths``). The exact values stay in the JSON
download.
"""

from __future__ import annotations

import datetime
import json
from typing import Any

from render.derive import reading
from render.numbers.links import escape_text, scrub_paths

# Words a label keeps in capitals or spells its own way (the rest are lower case, underscores as spaces).
_WORDS = {
    "gpu": "GPU",
    "gpus": "GPUs",
    "cpu": "CPU",
    "cuda": "CUDA",
    "sm": "SM",
    "os": "OS",
    "mig": "MIG",
    "ecc": "ECC",
    "pcie": "PCIe",
    "oom": "OOM",
    "sdpa": "SDPA",
    "mfu": "MFU",
    "nvml": "NVML",
    "id": "id",
    "sha256": "SHA-256",
    "flops": "FLOPs",
    "cv": "CV",
    "mib": "MiB",
    "mhz": "MHz",
    "tok": "tokens",
    "tflop": "TFLOP",
    "gflop": "GFLOP",
    "flop": "FLOP",
    "gb": "GB",
    "gib": "GiB",
}
# ``<what>_s`` after one of these is a rate (``square_tflop_s``: TFLOP/s), not a time.
_RATES = {"tflop": "TFLOP/s", "gflop": "GFLOP/s", "flop": "FLOP/s", "tok": "tok/s", "tokens": "tok/s", "gb": "GB/s"}
_RATES |= {"gib": "GiB/s", "bytes": "B/s", "samples": "samples/s", "steps": "steps/s"}
# Unit suffixes: the label drops them, the value carries the unit instead.
_SUFFIX_UNITS = {"s": "s", "bytes": "B", "mhz": "MHz", "w": "W", "c": "°C", "mib": "MiB", "pct": "%"}
_TIME_SUFFIXES = ("at", "unix", "time", "timestamp")
_UNIX_RANGE = (1e9, 4.2e9)
"""Seconds since 1970 a time field may hold (2001 to 2103): a smaller number under such a key is not a date."""
_BINARY = ("B", "KiB", "MiB", "GiB", "TiB", "PiB")


def _words(key: str) -> list[str]:
    return [w for w in key.replace("-", "_").split("_") if w]


def label(key: str) -> str:
    """A field key as a prose label: ``gpu_memory_bytes`` -> ``GPU memory``, ``probe_version`` -> ``probe version``,
    ``n_params_total`` -> ``number of params total``; a dotted path labels each part, joined by `` › ``."""
    if "." in key:
        return " › ".join(label(part) for part in key.split("."))
    words = _words(key)
    if len(words) > 1 and words[-1].lower() in _SUFFIX_UNITS:
        words = words[:-1]
        if words[-1].lower() in _RATES and key.lower().endswith("_s"):
            words = words[:-1] or words  # the value shows the rate's unit
    if len(words) > 1 and words[0].lower() == "n":
        words = ["number", "of", *words[1:]]  # n_params: the number of params
    if len(words) > 1 and words[-1].lower() == "unix":
        words = words[:-1]
    return " ".join(_WORDS.get(w.lower(), w) for w in words) or key


def unit_of(key: str) -> str | None:
    """The unit a key's suffix names (``median_s`` -> ``s``, ``peak_bytes`` -> ``B``), or None."""
    words = _words(key.rsplit(".", 1)[-1])
    if not words:
        return None
    if words[-1].lower() == "bytes":
        return "B"
    if len(words) > 1 and words[-1].lower() == "s" and words[-2].lower() in _RATES:
        return _RATES[words[-2].lower()]
    if "mhz" in (w.lower() for w in words[:-1]):
        return "MHz"  # sm_mhz_before: a clock, whatever follows
    return _SUFFIX_UNITS.get(words[-1].lower()) if len(words) > 1 else None


def is_time_key(key: str) -> bool:
    """Whether a key names a point in time (``created_at``, ``started_unix``, ``submit_time``)."""
    words = _words(key.rsplit(".", 1)[-1])
    return bool(words) and (words[-1].lower() in _TIME_SUFFIXES or key.rsplit(".", 1)[-1] in ("started", "ended"))


def is_unix_time(key: str, value: Any) -> bool:
    """Whether ``value`` under ``key`` is a point in time in seconds since 1970 (a time key, a number in range)."""
    number = isinstance(value, (int, float)) and not isinstance(value, bool)
    return number and is_time_key(key) and _UNIX_RANGE[0] <= value <= _UNIX_RANGE[1]


def utc_iso(seconds: float) -> str:
    """Seconds since 1970 as a UTC ISO 8601 time to the second: ``1796080000`` -> ``2026-11-30T23:06:40Z``."""
    moment = datetime.datetime.fromtimestamp(seconds, tz=datetime.timezone.utc)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


def seconds_text(seconds: float) -> str:
    """A duration in the prefix that keeps it readable: ``0.000045`` -> ``45 µs``, ``0.0123`` -> ``12.3 ms``,
    ``4.5`` -> ``4.5 s``; six significant figures at most, no exponent."""
    size = abs(seconds)
    if size != 0 and size < 1e-3:
        return f"{reading.readable_float(seconds * 1e6)} µs"
    if size != 0 and size < 1:
        return f"{reading.readable_float(seconds * 1e3)} ms"
    return f"{reading.readable_float(float(seconds))} s"


def bytes_text(count: float) -> str:
    """A byte count in binary prefixes, four significant figures, the exact count after it when it was shortened:
    ``150109880320`` -> ``139.8 GiB (150,109,880,320 B)``; ``512`` -> ``512 B``."""
    size, i = float(count), 0
    while abs(size) >= 1024 and i < len(_BINARY) - 1:
        size, i = size / 1024, i + 1
    if i == 0:
        return f"{reading.minus(f'{count:,}' if isinstance(count, int) else reading.readable_float(count))} B"
    exact = f"{count:,}" if isinstance(count, int) else reading.readable_float(float(count))
    return f"{reading.minus(f'{size:.4g}')} {_BINARY[i]} ({reading.minus(exact)} B)"


def _plain_number(value: Any) -> str:
    return reading.readable_float(value) if isinstance(value, float) else reading.minus(f"{value:,}")


def value_text(key: str, value: Any) -> str:
    """A stored value under ``key`` as page text (Markdown-inert): in the unit its key names, times as dates."""
    if value is None:
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        unit = unit_of(key)
        if is_unix_time(key, value):
            return utc_iso(value)
        if unit == "s":
            return seconds_text(value)
        if unit == "B":
            return bytes_text(value)
        if unit is not None and unit.endswith("/s"):
            shown, prefixed = reading.choose_unit(float(value), unit)
            return f"{reading.readable_float(shown)} {prefixed}"
        if unit is not None:
            return f"{_plain_number(value)} {unit}" if unit != "%" else f"{_plain_number(value)}%"
        if "flops" in key.lower() and abs(value) >= 1000:
            shown, unit = reading.choose_unit(float(value), "FLOP")
            return reading.with_unit(reading.minus(f"{shown:.4g}"), unit, " ")  # e.g. 1.512 GFLOP
        return reading.readable_float(value) if isinstance(value, float) else reading.minus(str(value))
    if isinstance(value, dict):
        if value and all(not isinstance(v, (dict, list)) for v in value.values()):
            # a FLOPs dict, a settings dict: one "name: value" per entry, each in its own key's unit
            inner = key if "flops" in key.lower() else ""
            return "; ".join(
                f"{escape_text(label(str(k)))}: {value_text(inner or str(k), v)}" for k, v in value.items()
            )
        return escape_text(scrub_paths(json.dumps(value, sort_keys=True, ensure_ascii=False)))
    if isinstance(value, list):
        return escape_text(scrub_paths(json.dumps(value, ensure_ascii=False)))
    return escape_text(scrub_paths(str(value)))
