"""What every bench/h200_*.sh summary starts with: the archive verified, then each document with its id.

Used from the scripts' summary blocks (``from bench.summary import documents``; lib.sh puts the repo root
on PYTHONPATH), so the verify line and the reading of each document are written once; ``runs`` (also
``python -m bench.summary ARCHIVE``) is the whole summary the MoE and H·v scripts print.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from measure.evidence.envelope import parse
from measure.evidence.store import Store


def documents(archive: str) -> Iterator[tuple[str, dict[str, Any]]]:
    """Print ``verify: N evidence, M mismatched`` for ``archive``, then yield (full id, document) for each."""
    store = Store(archive)
    print(f"verify: {len(store.ids())} evidence, {len(store.verify())} mismatched")
    for path in store.iter_paths():
        yield "sha256:" + path.parent.name + path.name[:-5], parse(path.read_bytes(), str(path))


def runs(archive: str) -> None:
    """Each document of ``archive`` on a line (id, probe, version, preset, experts, status, error) and, for
    kernels, step-scaling and hvp runs, the figures a GPU call is read for: what ``h200_moe_hvp.sh`` and
    ``h200_experts_hvp.sh`` print as their summary (``python -m bench.summary ARCHIVE``)."""
    for ident, d in documents(archive):
        p, data = d["params"], d["data"]
        print(ident[:19], d["probe"], d["probe_version"], p.get("preset"),
              p.get("experts_impl") or "", d["status"], d.get("error") or "")  # fmt: skip
        if d["probe"] == "kernels":
            shares = {k: round(v, 4) for k, v in data.get("shares", {}).items()}
            print("   expert gemm:", data.get("expert_gemm"), "| shares:", shares)
        elif d["probe"] == "step-scaling":
            steps = [(r.get("tokens"), round(r["step_s"], 5)) for r in data.get("samples", []) if "step_s" in r]
            print("   steps:", steps[:12])
        elif d["probe"] == "hvp":
            for c in data.get("candidates", []):
                head = f"  {c['method']} {c['mode']:8} {c['dtype']} b{c['batch']} {c['status']:5}"
                tail = f"err {c.get('rel_l2_vs_float64')} verdict {c.get('verdict')} {c.get('error') or ''}"
                print(head, f"warm {c.get('warm_median_s')}", tail)


if __name__ == "__main__":
    import sys

    runs(sys.argv[1])
