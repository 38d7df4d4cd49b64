"""Where a campaign's wall time went, from its receipts and its points' evidence (no torch).

    python3 bench/campaign_breakdown.py build/campaign-h200

Per point (summed over points): job start (submission to the job's function starting: the
controller's and the job's interpreter start), imports, waiting for the device, and the measured
phases the batch-sweep row records (setup = model and batch built, warm-up, timed windows, the
profiled observe step, and trace_s: its profile parsed after the device was given back). The
campaign's span runs from the first submission to the last result; ``device busy`` is the union
of the spans in which a point held the device.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from measure.store import Store
from probebook.campaign import receipts

PHASES = ("setup_s", "warmup_s", "timed_s", "observe_s", "trace_s")


def main(folder: Path) -> None:
    got = receipts.load_all(folder)
    store = Store(folder / "archive")
    sums = {k: 0.0 for k in ("job_start_s", "imports_s", "device_wait_s", *PHASES)}
    spans, held, n, attempts = [], [], 0, 0
    for receipt in got.values():
        attempts += len(receipt["attempts"])
        for a in receipt["attempts"]:
            if a.get("ended_unix"):
                spans.append((a["submitted_unix"], a["ended_unix"]))
        result = receipt.get("result")
        if not result:
            continue
        n += 1
        a = receipt["attempts"][-1]
        sums["job_start_s"] += result["job_started_unix"] - a["submitted_unix"]
        sums["imports_s"] += result["imports_s"]
        row = json.loads(store.read_bytes(result["evidence"]))["data"]["samples"][0]
        for k in ("device_wait_s", *PHASES):
            sums[k] += row.get(k) or 0.0
        if row.get("device_acquired_unix"):
            held.append((row["device_acquired_unix"], row["device_released_unix"]))
    busy, last = 0.0, None
    for a, b in sorted(held):
        if last is None or a > last:
            busy += b - a
            last = b
        elif b > last:
            busy += b - last
            last = b
    span = max(b for _, b in spans) - min(a for a, _ in spans) if spans else 0.0
    print(f"points measured: {n} (attempts {attempts}); campaign span {span:.1f} s; device busy {busy:.1f} s")
    for k, v in sums.items():
        print(f"  {k:<14} {v:8.1f} s summed over points ({v / max(n, 1):.2f} s per point)")


if __name__ == "__main__":
    main(Path(sys.argv[1]))
