"""``campaign plan``: freeze a spec into a campaign folder whose manifest is archived evidence.

The manifest (probe ``campaign-plan``) holds the points with their resolved configs, the curves,
a hash of the source tree that will run them, the installed package versions and the executor
settings. A folder is planned once: adding points means a new campaign, never an edited one.

Folder layout: ``manifest.id`` (the manifest's evidence id), ``archive/`` (a write-once store with
the manifest and every point's evidence), ``receipts/<point>.json``, ``jobs/<point>/a<N>/``
(submitit's folder for attempt N).
"""

from __future__ import annotations

import hashlib
from importlib import metadata
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.envelope import Evidence, digest, parse
from measure.evidence.store import Store
from measure.machine import code_fingerprint
from probebook.campaign import spec as specmod

PROBE = "campaign-plan"
VERSION = 1
REPO = Path(__file__).resolve().parents[2]
SOURCE_PACKAGES = ("measure", "probebook")  # what a point's job runs (render never runs in a job)


def source_tree_sha256(root: Path = REPO) -> tuple[str, int]:
    """SHA-256 over the relative path and bytes of every ``.py``/``.json`` file of the packages a job runs."""
    h, n = hashlib.sha256(), 0
    for package in SOURCE_PACKAGES:
        for path in sorted((root / package).rglob("*")):
            if path.suffix in (".py", ".json") and path.is_file() and "__pycache__" not in path.parts:
                h.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
                n += 1
    return h.hexdigest(), n


def lockfile() -> dict[str, str]:
    """Installed distributions and their versions (what ``pip freeze`` would pin)."""
    out: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            out[name.lower()] = dist.version
    return dict(sorted(out.items()))


def manifest_evidence(spec: specmod.Spec) -> Evidence:
    """The frozen manifest of a spec, as evidence."""
    from measure.machine import fingerprint

    points = specmod.points(spec)
    curves: dict[str, list[str]] = {}
    for p in points:
        curves.setdefault(p["curve"], []).append(p["key"])
    tree, n_files = source_tree_sha256()
    return Evidence(
        probe=PROBE,
        probe_version=VERSION,
        params=spec.to_json(),
        data={
            "points": points,
            "curves": [{"curve": c, "points": keys} for c, keys in curves.items()],
            "source_tree_sha256": tree,
            "source_files": n_files,
            "lockfile": lockfile(),
        },
        machine=fingerprint(),
        code=code_fingerprint(None),
    )


def plan(spec_path: Path, folder: Path) -> str:
    """Write a new campaign folder from a spec; return the manifest's evidence id."""
    spec = specmod.load(spec_path)
    folder = Path(folder)
    if (folder / "manifest.id").exists() or (folder / "receipts").exists():
        raise ProbebookError(
            f"{folder}: already a campaign; a campaign is frozen once planned (add points in a new folder)"
        )
    if folder.exists() and any(folder.iterdir()):
        raise ProbebookError(f"{folder}: not empty; plan a campaign into a new folder")
    evidence = manifest_evidence(spec)
    (folder / "receipts").mkdir(parents=True)
    ident = Store(folder / "archive").put(evidence)
    (folder / "manifest.id").write_text(ident + "\n", encoding="utf-8")
    return ident


def load_manifest(folder: Path) -> tuple[str, dict[str, Any]]:
    """The manifest id and document of a campaign folder, hash-checked."""
    folder = Path(folder)
    try:
        ident = (folder / "manifest.id").read_text(encoding="utf-8").strip()
    except OSError:
        raise ProbebookError(
            f"{folder}: not a campaign folder (no manifest.id); run `probebook campaign plan`"
        ) from None
    doc = checked(Store(folder / "archive"), ident)
    if doc.get("probe") != PROBE:
        raise ProbebookError(f"{folder}/manifest.id: {ident} is {doc.get('probe')} evidence, not a campaign manifest")
    return ident, doc


def checked(store: Store, ident: str) -> dict[str, Any]:
    """The document stored under ``ident``, refused unless its bytes still hash to that id."""
    raw = store.read_bytes(ident)
    actual = digest(raw)
    if actual != ident:
        raise ProbebookError(f"{store.path_for(ident[7:])}: bytes hash to {actual}, not {ident}: changed after writing")
    return parse(raw, ident)
