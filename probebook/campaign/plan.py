"""``campaign plan``: freeze a spec into a campaign folder whose manifest is archived evidence.

The manifest (probe ``campaign-plan``) holds the points with their resolved configs (a grid's with
its ``python -m measure`` command and ``data.kind`` ``grid``), the curves,
the hashes of the source snapshot that will run them (``source/``), the installed package
versions, the machine (driver included) and the executor settings. A folder is planned once:
adding points means a new campaign, never an edited one.

Folder layout: ``manifest.id`` (the manifest's evidence id), ``source/`` (the packages every job
imports), ``archive/`` (a write-once store with the manifest and every point's evidence),
``receipts/<point>.json``, ``jobs/<point>/a<N>/`` (submitit's folder for attempt N).
"""

from __future__ import annotations

from importlib import metadata
from pathlib import Path
from typing import Any

from measure.errors import ProbebookError
from measure.evidence.envelope import Evidence, digest, parse
from measure.evidence.reading import read_given
from measure.evidence.store import Store
from measure.machine import code_fingerprint
from probebook.campaign import spec as specmod

PROBE = "campaign-plan"
VERSION = 2  # 2: the source is snapshotted into the folder, its hashes are measure.machine's
REPO = Path(__file__).resolve().parents[2]
SOURCE_PACKAGES = ("measure", "probebook")  # what a point's job runs (render never runs in a job)
SOURCE = "source"  # the campaign folder's frozen copy of them


def snapshot(folder: Path, root: Path = REPO) -> Path:
    """Copy the packages a job runs into ``<folder>/source`` (read-only files); every job imports them from there.

    An edit to the working tree after ``plan`` then cannot reach a point of the campaign, and an
    edit of the snapshot itself is what the audit catches (its hash against the manifest's).
    """
    import shutil

    target = folder / SOURCE
    for package in SOURCE_PACKAGES:
        shutil.copytree(root / package, target / package, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    for path in target.rglob("*"):
        if path.is_file():
            path.chmod(0o444)
    return target


def lockfile() -> dict[str, str]:
    """Installed distributions and their versions (what ``pip freeze`` would pin)."""
    out: dict[str, str] = {}
    for dist in metadata.distributions():
        name = dist.metadata["Name"]
        if name:
            out[name.lower()] = dist.version
    return dict(sorted(out.items()))


def frozen(source: Path) -> dict[str, Any]:
    """What a manifest records of the snapshot its jobs run: the hashes the audit checks, its size, the lock file.

    ``source_tree_sha256`` covers the whole snapshot, ``measure_source_sha256`` its ``measure``
    package: the hash every point's evidence records of the code that measured it (both are
    ``measure.machine.source_tree_sha256``, the project's one definition).
    """
    from measure.machine import source_tree_sha256

    return {
        "source_tree_sha256": source_tree_sha256(source),
        "measure_source_sha256": source_tree_sha256(source / "measure"),
        "source_files": sum(1 for p in source.rglob("*") if p.is_file()),
        "lockfile": lockfile(),
    }


def manifest_evidence(spec: specmod.Spec, source: Path) -> Evidence:
    """The frozen manifest of a spec whose jobs run the snapshot ``source`` (``frozen``), as evidence."""
    from measure.machine import fingerprint
    from probebook.campaign.grid import KIND

    points = specmod.points(spec)
    curves: dict[str, list[str]] = {}
    for p in points:
        curves.setdefault(p["curve"], []).append(p["key"])
    # a grid's points are curves of one point each, none waiting for another; a sweep's manifest stays as it was
    kind = {} if spec.walk is not None else {"kind": KIND, "parallel": True}
    return Evidence(
        probe=PROBE,
        probe_version=VERSION,
        params=spec.to_json(),
        data={
            **kind,
            "points": points,
            "curves": [{"curve": c, "points": keys} for c, keys in curves.items()],
            **frozen(source),
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
    (folder / "receipts").mkdir(parents=True)
    evidence = manifest_evidence(spec, snapshot(folder))
    ident = Store(folder / "archive").put(evidence)
    (folder / "manifest.id").write_text(ident + "\n", encoding="utf-8")
    return ident


def load_manifest(folder: Path) -> tuple[str, dict[str, Any]]:
    """The manifest id and document of a campaign folder, hash-checked."""
    folder = Path(folder)
    if not (folder / "manifest.id").exists():
        raise ProbebookError(f"{folder}: not a campaign folder (no manifest.id); run `probebook campaign plan`")
    # a FIFO or device planted as manifest.id is refused in one line, not waited on
    ident = read_given(folder / "manifest.id", 1024).decode("utf-8", errors="replace").strip()
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
