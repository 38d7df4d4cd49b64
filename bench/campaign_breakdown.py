"""Where a campaign's wall time went, from its receipts and its points' evidence (no torch).

    python3 bench/campaign_breakdown.py build/campaign-h200

The same breakdown a record shows with ``campaign_time()`` of the collected document
(``render.derive.campaign``), read here straight from the campaign folder: per point (mean over
the measured points) the job start (submission to the job's function starting: the controller's
and the job's interpreter start), imports, waiting for the device, and the phases the batch-sweep
row records (setup = model and batch built, warm-up, timed windows, the profiled observe step,
and trace_s: its profile parsed after the device was given back). The wall time runs from the
first submission to the last result; ``device busy`` is the union of the spans in which a point
held the device; ``runs`` counts the runner calls (the first and its resumes).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from measure.evidence.store import Store
from probebook.campaign import receipts
from render.derive.campaign import per_point, wall_time


def main(folder: Path) -> None:
    got = receipts.load_all(folder)
    store = Store(folder / "archive")
    points = [{"point": key, "attempts": r["attempts"]} for key, r in got.items()]
    rows = [
        {**json.loads(store.read_bytes(r["evidence"]))["data"]["samples"][0], "point": key}
        for key, r in got.items()
        if r.get("result") and r["state"] in receipts.MEASURED
    ]
    t = wall_time(points, rows)
    wall = f"{t.wall_s:.1f}" if t.wall_s is not None else "n/a"
    busy = f"{t.device_busy_s:.1f}" if t.device_busy_s is not None else "n/a"
    print(
        f"points measured: {t.points} (attempts {t.attempts}, runner calls {t.runs if t.runs is not None else 'n/a'}); "
        f"wall {wall} s; device busy {busy} s"
    )
    for k, v in per_point(t).items():
        print(f"  {k:<14} " + (f"{v:6.2f} s per point" if v is not None else "   n/a"))


if __name__ == "__main__":
    main(Path(sys.argv[1]))
