"""Each cited run's command, rebuilt with today's probe, and the probe ``Config`` it builds (or one line why not).

The command text is the record's own Reproduce block's (``render.pages.provenance.command``: recorded
params, migrated by ``measure.evidence.reruns``), never a second copy of that logic. It is then parsed by
the same argument parser ``probebook measure`` uses and built into today's probe ``Config``, so a command
today's probe would refuse is refused here, before anything runs, naming the record, the alias and the id.

One more adjustment is this machine's, not the probe's: a param naming a folder of the recording machine
(``LOCAL_FOLDERS``) is never used (evidence could name any host folder, and the run writes there): it is left
out, so the probe's default (the working folder) applies, and the command says so. What else a command takes
from evidence only on the user's word, and the bounds on its numbers, is ``probebook.reproduce.trust``.

A document no probe run wrote (a campaign's: ``CAMPAIGN_PROBES``) is not re-run by reproduce; ``campaign_parts``
names the ``probebook campaign`` commands that redo it.
"""

from __future__ import annotations

import argparse
import dataclasses
import shlex
from dataclasses import dataclass
from typing import Any

from measure.errors import ProbebookError, printable
from probebook.reproduce import trust
from probebook.reproduce.trust import LOCAL_FOLDERS


@dataclass(frozen=True)
class Run:
    """One cited evidence document and the run that repeats it today."""

    alias: str
    """Its alias in the record's front matter."""
    original: str
    """The cited evidence id."""
    probe: str
    command: str
    """``probebook measure ...`` as printed and archived."""
    config: dict[str, Any]
    """``dataclasses.asdict`` of today's probe ``Config`` built from ``command``."""
    notes: tuple[str, ...]
    asks: tuple[str, ...] = ()
    """Open values from the evidence this command line did not give (``trust.asks``): run only on the user's word."""
    bounds: tuple[str, ...] = ()
    """Recorded numbers past a re-run's bounds (``measure.evidence.reruns.out_of_bounds``): never run."""

    @property
    def who(self) -> str:
        """``alias (sha256:0123456789ab)``: how a line names this run."""
        return f"{self.alias} ({self.original[:19]})"


class _Refusing(argparse.ArgumentParser):
    """An argument parser whose usage errors are a ``ProbebookError`` (one line), not an exit."""

    def error(self, message: str) -> Any:
        raise ProbebookError(message)


_PARSER: list[argparse.ArgumentParser] = []


def parser() -> argparse.ArgumentParser:
    """``probebook measure``'s probe commands (``measure.cli.add_probe_commands``), built once per process."""
    if not _PARSER:
        from measure.cli import add_probe_commands

        p = _Refusing(prog="probebook measure", add_help=False)
        add_probe_commands(p.add_subparsers(dest="probe", required=True))
        _PARSER.append(p)
    return _PARSER[0]


def _here(doc: dict[str, Any]) -> tuple[dict[str, Any], list[str]]:
    """The document with its recording machine's folders left out of its params, and a note for each."""
    params = dict(doc.get("params") or {})
    notes = []
    for name in LOCAL_FOLDERS.get(str(doc.get("probe")), ()):
        folder = params.pop(name, None)
        if isinstance(folder, str):
            shown = printable(folder, 120)
            notes.append(f"{name} {shown} names a folder of the machine that measured; never used: the default applies")
    return {**doc, "params": params}, notes


def build_config(command: str) -> Any:
    """Today's probe ``Config`` of one ``probebook measure PROBE ...`` command line (refused in one line)."""
    from measure.cli import build_config as from_args

    words = shlex.split(command)
    if words[:2] != ["probebook", "measure"]:
        raise ProbebookError(f"not a probebook measure command: {command[:80]!r}")
    args = parser().parse_args(words[2:])
    return from_args(args.probe_name, args)


def rebuild(
    alias: str,
    ident: str,
    doc: dict[str, Any],
    declarations: dict[str, Any],
    where: str,
    given: dict[str, list[str]] | None = None,
    sessions: int | None = None,
) -> Run:
    """The run repeating ``doc`` (cited as ``alias`` at ``where``) with today's probe; one line if it cannot.

    ``given``: the open options' values this command line gave (param -> values); every other open value the
    command takes from the evidence is in the run's ``asks``, every number past its bound in its ``bounds``.
    ``sessions``: ``--sessions N`` in place of the recorded one, where today's probe measures in sessions
    (``SESSIONED``); a probe that measures in one session runs as recorded, and the run's notes say so."""
    from measure.evidence.reruns import out_of_bounds
    from render.pages.provenance import command

    here, local = _here(doc)
    cmd, notes = command(here, declarations, public=False)  # the folders as recorded: this command runs
    what = f"{where}: evidence {alias} ({ident[:19]})"
    if cmd is None:
        raise ProbebookError(f"{what}: {notes[0] if notes else 'no command'}; it cannot be re-measured")
    try:
        config = build_config(cmd)
    except ProbebookError as exc:
        raise ProbebookError(f"{what}: today's {doc.get('probe')} probe refuses its command ({exc}): {cmd}") from None
    except (TypeError, ValueError) as exc:
        raise ProbebookError(f"{what}: today's {doc.get('probe')} probe refuses its command ({exc}): {cmd}") from None
    # an open option this command line gave one value of stands in for the evidence's: the user's own word, and the
    # only way to name a folder the evidence kept no host path of (a padding corpus is stored as ``.../name``)
    chosen = {
        flag: given[name][0]
        for name, (flag, _many) in trust.open_fields(str(doc.get("probe"))).items()
        if given and len(given.get(name, [])) == 1 and getattr(config, name, None) is not None
    }
    if chosen:
        cmd = with_options(cmd, chosen)
        try:
            config = build_config(cmd)
        except (ProbebookError, TypeError, ValueError) as exc:
            raise ProbebookError(f"{what}: {', '.join(chosen)} as given: {exc}") from None
    if sessions is not None:
        if getattr(config, "SESSIONED", False):
            cmd = with_sessions(cmd, sessions)
            try:
                config = build_config(cmd)
            except ProbebookError as exc:
                raise ProbebookError(f"{what}: --sessions {sessions}: {exc}") from None
        else:
            notes.append(f"--sessions {sessions} not given: this probe measures in one session")
    values = dataclasses.asdict(config)
    declared = declarations[str(doc["probe"])]["options"]
    defaults = {name: spec["default"] for name, spec in declared.items()}
    wanted = trust.asks(str(doc["probe"]), values, defaults, given or {})
    over = out_of_bounds(values, {name: spec["flag"] for name, spec in declared.items()})
    return Run(alias, ident, str(doc["probe"]), cmd, values, tuple(notes + local), tuple(wanted), tuple(over))


def with_sessions(command: str, sessions: int) -> str:
    """``command`` with ``--sessions N`` in place of any ``--sessions`` it gives (``--sessions X`` or
    ``--sessions=X``)."""
    return with_options(command, {"--sessions": str(sessions)})


def with_options(command: str, values: dict[str, str]) -> str:
    """``command`` with each ``--flag VALUE`` of ``values`` in place of the one it gives (``--flag X`` or
    ``--flag=X``), appended at the end."""
    words, out, skip = shlex.split(command), [], False
    for word in words:
        if skip:
            skip = False
        elif word in values:
            skip = True
        elif not any(word.startswith(f"{flag}=") for flag in values):
            out.append(word)
    for flag, value in values.items():
        out += [flag, value]
    return shlex.join(out)


CAMPAIGN_PROBES = ("campaign", "campaign-plan", "campaign-audit")
"""Documents a campaign writes (``campaign collect``, ``plan``, ``audit``), not one probe run: redone by a campaign."""


@dataclass(frozen=True)
class CampaignPart:
    """The cited documents of one campaign, and the ``probebook campaign`` commands that redo it."""

    manifest: str
    """The campaign's manifest id (a ``campaign-plan`` document)."""
    name: str
    aliases: tuple[str, ...]
    spec: dict[str, Any] | None
    """The spec the manifest froze (a batch sweep's; None for a follow-up or a manifest not in the archive)."""
    spec_path: str
    command: str
    notes: tuple[str, ...]


def is_campaign_part(doc: dict[str, Any]) -> bool:
    return str(doc.get("probe")) in CAMPAIGN_PROBES


def _manifest_of(ident: str, doc: dict[str, Any]) -> str | None:
    if doc.get("probe") == "campaign-plan":
        return ident
    manifest = (doc.get("params") or {}).get("manifest")
    return manifest if isinstance(manifest, str) else None


def _runs_folder(name: str) -> str:
    """``runs/NAME`` for a campaign name from evidence, its characters limited to a file name's safe ones."""
    safe = "".join(c if c.isascii() and (c.isalnum() or c in "-_.") else "-" for c in name)[:80].lstrip(".")
    return f"runs/{safe or 'campaign'}"


def campaign_parts(
    aliases: dict[str, str], docs: dict[str, dict[str, Any]], lookup: Any, archive: str, specs: str
) -> list[CampaignPart]:
    """One part per campaign the record cites documents of (``aliases``: alias -> id; ``lookup(id)``: an archived
    document or None; ``specs``: the folder a batch sweep's spec is written to). Text from evidence is quoted."""
    by_manifest: dict[str, list[str]] = {}
    for alias in sorted(aliases):
        doc = docs[aliases[alias]]
        if is_campaign_part(doc):
            by_manifest.setdefault(_manifest_of(aliases[alias], doc) or f"(none: {alias})", []).append(alias)
    out = []
    for manifest, names in sorted(by_manifest.items()):
        plan = lookup(manifest) if manifest.startswith("sha256:") else None
        first = docs[aliases[names[0]]]
        params = (plan or {}).get("params") or {}
        name = str(params.get("name") or (first.get("params") or {}).get("campaign") or "campaign")
        data = (plan or {}).get("data") or {}
        folder = _runs_folder(name)
        spec_path = f"{specs}/campaign-{manifest.removeprefix('sha256:')[:12]}.yaml"
        spec: dict[str, Any] | None = None
        notes = [
            f"{', '.join(names)}: documents of campaign {printable(name, 80)!r} (manifest {manifest[:19]}), not one "
            "probe run: reproduce does not re-run it, and its numbers are missing from the comparison; this redoes it"
        ]
        if plan is None:
            plan_cmd = f"probebook campaign plan SPEC --output {shlex.quote(folder)}"
            notes.append(f"SPEC: a spec like the one manifest {manifest[:19]} froze (not in this archive)")
        elif data.get("kind") == "optimizer-timing":
            follows = lookup(str(data.get("follows"))) or {}
            followed = str((follows.get("params") or {}).get("name") or "SWEEP")
            source = _runs_folder(followed)
            mode = data.get("optimizer_mode") or "eager"  # a follow-up planned before the option ran eager
            plan_cmd = (
                f"probebook campaign plan --optimizer-timing-from {shlex.quote(source)} --output {shlex.quote(folder)}"
                + (f" --optimizer-mode {mode}" if mode != "eager" else "")
            )
            notes.append(f"{source}: the batch-sweep campaign it follows, run first")
        else:
            spec = dict(params)
            plan_cmd = f"probebook campaign plan {shlex.quote(spec_path)} --output {shlex.quote(folder)}"
            notes.append(f"{spec_path}: the spec manifest {manifest[:19]} froze (written there when reproduce runs)")
        quoted, arch = shlex.quote(folder), shlex.quote(archive)
        command = (
            f"{plan_cmd} && probebook campaign run {quoted} && probebook --archive {arch} campaign collect {quoted} "
            f"&& probebook --archive {arch} campaign audit {quoted}"
        )
        out.append(CampaignPart(manifest, name, tuple(names), spec, spec_path, printable(command), tuple(notes)))
    return out
