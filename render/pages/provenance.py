"""What a record says about where its numbers come from: the environment block, the reproduce block and a
one-line machine label (ARCHITECTURE.md §Pages).

Both blocks are generated from the evidence a record cites, never written by hand:

- **Environment**: GPU, driver, CUDA, torch, power limit, probebook version and measuring-source hash
  from each document's ``machine`` and ``code`` fields, and the SM clock each run recorded before and
  after its timing (``data.clocks``; the fingerprint's ``sm_clock_mhz`` is read at start-up, often at
  idle, and is labelled so). Where the cited documents disagree (two machines, two torch versions) the
  block says so and names which alias holds which value.
- **Reproduce**: the ``probebook measure ...`` command of each document, rebuilt from its recorded
  probe and params with the options the probe declares today (``measure.options.declared``, handed in
  by the CLI so render never imports a probe), old params migrated (``measure.evidence.reruns``), and the
  source hash it ran at. ``probebook reproduce`` runs these same commands (``command``). Imported evidence says it
  was imported; a document no probe writes (a campaign's) says what wrote it.

Numbers from evidence (the GPU count, the power limit, the clocks) are shown as Quantities linked to their
evidence page, and are ledger rows of the record (``environment[alias].field``, issue 23), so a re-measured
clock shows in ``probebook diff`` and on *Changes*; versions, hashes and dates are names, not numbers.
All other text from evidence passes ``escape_text`` or sits in a fenced code block with its control
characters escaped.
"""

from __future__ import annotations

import shlex
from dataclasses import replace
from typing import Any

from measure.errors import printable
from measure.evidence.reruns import migrate
from render.derive import basis
from render.numbers.links import escape_text, evidence_page, machine_anchor, relative_link, scrub_paths, short_id
from render.numbers.quantity import Quantity

Declarations = dict[str, dict[str, Any]]
"""Probe name -> ``{"version": N, "options": {param: {"flag", "kind", "default"}}}`` (``measure.cli.declarations``)."""

# (label, where in the envelope); each row of the environment table.
_FIELDS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("GPU", ("machine", "gpu")),
    ("GPUs in the machine", ("machine", "gpu_count")),
    ("CPU", ("machine", "cpu_model")),  # shown where a cited run ran on the CPU (issue 40)
    ("driver", ("machine", "driver")),
    ("CUDA", ("machine", "cuda")),
    ("torch", ("machine", "torch")),
    ("host (hash of its name)", ("machine", "hostname_hash")),
    ("probebook", ("code", "probebook")),
    ("git commit", ("code", "git_commit")),
    ("uncommitted changes in the measuring tree", ("code", "dirty")),
    ("measuring source (SHA-256 of the measure package)", ("code", "measure_source_sha256")),
)
_NOT_RECORDED = "not recorded"


def _get(doc: dict[str, Any], path: tuple[str, ...]) -> Any:
    value: Any = doc
    for part in path:
        value = value.get(part) if isinstance(value, dict) else None
    return value


def _plain(value: Any) -> str:
    if isinstance(value, bool):  # code.dirty: the tree the run measured from had edits no commit names
        return "yes (the git commit above does not hold the code that ran)" if value else "no"
    return _NOT_RECORDED if value is None else str(value)


def machine_label(ids: list[str], docs: dict[str, dict[str, Any]]) -> str:
    """The GPU (or GPUs) the cited evidence ran on, as plain text: ``NVIDIA H200``, ``NVIDIA H200; CPU``."""
    names = []
    for ident in ids:
        gpu = _get(docs[ident], ("machine", "gpu"))
        name = "CPU" if gpu is None else str(gpu)
        if name not in names:
            names.append(name)
    return "; ".join(names) if names else _NOT_RECORDED


def _groups(ids: list[str], aliases: dict[str, str], docs: dict[str, dict[str, Any]], path: tuple[str, ...]) -> dict:
    """Shown value -> aliases holding it, in the aliases' order."""
    by_value: dict[str, list[str]] = {}
    for alias in sorted(aliases):
        by_value.setdefault(_plain(_get(docs[aliases[alias]], path)), []).append(alias)
    return by_value


Ledger = list[tuple[str, Quantity]] | None
"""Where the block's numbers go as (ledger key, Quantity); None keeps no rows (a test of the text alone)."""


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _shown(rel: str, q: Quantity, key: str, ledger: Ledger) -> str:
    """A recorded number as a linked Quantity on ``rel``, its ledger row kept under ``key``."""
    q = replace(q, key=key)
    if ledger is not None:
        ledger.append((key, q))
    return q.markdown(rel)


def _power(rel: str, ident: str, doc: dict[str, Any], key: str, ledger: Ledger) -> str:
    watts = _get(doc, ("machine", "power_limit_w"))
    if not _number(watts):
        return _NOT_RECORDED
    q = Quantity(
        float(watts),
        "W",
        fmt=".0f",
        evidence=(ident,),
        derivation="machine.power_limit_w as recorded",
        anchor=machine_anchor("power_limit_w"),
        basis=basis.OBSERVED,
    )
    return _shown(rel, q, key, ledger)


def _count(rel: str, ident: str, value: int, key: str, ledger: Ledger) -> str:
    q = Quantity(
        value,
        "",
        evidence=(ident,),
        derivation="machine.gpu_count as recorded",
        anchor=machine_anchor("gpu_count"),
        basis=basis.OBSERVED,
    )
    return _shown(rel, q, key, ledger)


def _clock(rel: str, ident: str, value: Any, what: str, field: str, key: str, ledger: Ledger) -> str:
    """A recorded clock, linked to its row of the evidence page's machine table (``field``: its machine key)."""
    if not _number(value):
        return "–"
    q = Quantity(
        float(value),
        "MHz",
        fmt=".0f",
        evidence=(ident,),
        derivation=f"{what} as recorded",
        anchor=machine_anchor(field),
        basis=basis.OBSERVED,
    )
    return _shown(rel, q, key, ledger)


def environment_block(rel: str, aliases: dict[str, str], docs: dict[str, dict[str, Any]], ledger: Ledger = None) -> str:
    """The *Environment* section of a record: one table of machine and code facts, one of each run's clocks;
    its numbers are appended to ``ledger`` as (key, Quantity), keyed ``environment.FIELD`` where every cited
    document agrees and ``environment[alias].FIELD`` where each says its own."""
    if not aliases:
        return ""
    ids = [aliases[a] for a in sorted(aliases)]
    out = ["", "## Environment", ""]
    out += [
        "Read from the cited evidence's machine and code fingerprints; each run's clocks are its own.",
        "",
        "| | |",
        "|---|---|",
    ]
    disagree = []
    on_cpu = any(_get(docs[i], ("machine", "gpu")) is None for i in ids)
    for label, path in _FIELDS:
        if path == ("machine", "cpu_model") and not on_cpu:
            continue  # the host's CPU is the machine of a CPU run only; a GPU record's hosts may differ there
        groups = _groups(ids, aliases, docs, path)
        counted = path == ("machine", "gpu_count")

        def said(value: str, who: list[str], one: bool, counted: bool = counted, path: tuple[str, ...] = path) -> str:
            recorded = _get(docs[aliases[who[0]]], path)
            if not counted or isinstance(recorded, bool) or not isinstance(recorded, int):
                return escape_text(value)
            key = f"environment.{path[-1]}" if one else f"environment[{who[0]}].{path[-1]}"
            return _count(rel, aliases[who[0]], recorded, key, ledger)

        if len(groups) == 1:
            value, who = next(iter(groups.items()))
            shown = said(value, who, True)
        else:
            disagree.append(label)
            shown = "; ".join(
                f"{said(v, who, False)} ({', '.join(f'`{a}`' for a in who)})" for v, who in groups.items()
            )
        out.append(f"| {escape_text(label)} | {shown} |")
    powers = _groups(ids, aliases, docs, ("machine", "power_limit_w"))
    if len(powers) == 1:
        power = _power(rel, ids[0], docs[ids[0]], "environment.power_limit_w", ledger)
    else:
        disagree.append("power limit")
        power = "; ".join(
            f"{_power(rel, aliases[who[0]], docs[aliases[who[0]]], f'environment[{who[0]}].power_limit_w', ledger)}"
            f" ({', '.join(f'`{a}`' for a in who)})"
            for who in powers.values()
        )
    out.append(f"| power limit | {power} |")
    out.append("")
    if disagree:
        out += [
            '!!! warning "The cited evidence disagrees"',
            "",
            "    Its documents differ in: "
            + ", ".join(escape_text(d) for d in disagree)
            + ". A comparison across them is across those differences.",
            "",
        ]
    out += [
        "| evidence | probe | measured | SM clock at start-up | SM clock before timing | after timing |",
        "|---|---|---|---|---|---|",
    ]
    start_up, before, after = (
        "machine.sm_clock_mhz, read at start-up",
        "data.clocks.sm_mhz_before",
        "data.clocks.sm_mhz_after",
    )
    for alias in sorted(aliases):
        ident = aliases[alias]
        doc = docs[ident]
        clocks = _get(doc, ("data", "clocks"))
        clocks = clocks if isinstance(clocks, dict) else {}
        link = relative_link(rel, evidence_page(ident))

        def clock(value: Any, what: str, field: str, alias: str = alias, ident: str = ident) -> str:
            return _clock(rel, ident, value, what, field, f"environment[{alias}].{field.split('.')[-1]}", ledger)

        out.append(
            f"| `{alias}` [{short_id(ident)}]({link}) | {escape_text(doc.get('probe'))} | "
            f"{escape_text(str(doc.get('created_at', ''))[:10])} | "
            f"{clock(_get(doc, ('machine', 'sm_clock_mhz')), start_up, 'sm_clock_mhz')} | "
            f"{clock(clocks.get('sm_mhz_before'), before, 'clocks.sm_mhz_before')} | "
            f"{clock(clocks.get('sm_mhz_after'), after, 'clocks.sm_mhz_after')} |"
        )
    return "\n".join(out) + "\n"


def _arg(flag: str, kind: str, value: Any, default: Any, public: bool = True) -> str | None:
    """One option as it is typed, or None when the recorded value is the absence of the option; ``public``:
    a folder of the measuring host reads as <dir> (a page), else as recorded (``probebook reproduce`` runs it)."""
    if kind == "flag":
        if value is True:
            return flag
        if value is False and default is True:
            return "--no-" + flag[2:]
        return None
    if value is None:
        return None
    if kind == "list":
        text = ",".join(str(v) for v in value) if isinstance(value, list) else str(value)
    else:
        text = str(value)
    return f"{flag} {shlex.quote(scrub_paths(text) if public else text)}"


def command(doc: dict[str, Any], declarations: Declarations, public: bool = True) -> tuple[str | None, list[str]]:
    """(the ``probebook measure`` command that repeats this run or None, notes as comment lines)."""
    origin = doc.get("origin") or {}
    probe = str(doc.get("probe"))
    if origin.get("kind") == "imported":
        return None, [f"imported from: {scrub_paths(str(origin.get('source', _NOT_RECORDED)))}; no probe run to repeat"]
    declared = declarations.get(probe)
    if declared is None:
        return None, [
            f"{probe} evidence is not written by one probe run (campaign documents come from `probebook campaign`)"
        ]
    params, migrated = migrate(probe, doc.get("params") or {})  # old params today's probe renamed or refuses
    options = declared["options"]
    args = [f"probebook measure {probe}"]
    for name, spec in options.items():
        if name not in params:
            continue
        value = params["device_requested"] if name == "device" and "device_requested" in params else params[name]
        arg = _arg(spec["flag"], spec["kind"], value, spec["default"], public)
        if arg is not None:
            args.append(arg)
    notes = []
    if doc.get("probe_version") != declared["version"]:
        notes.append(
            f"recorded by {probe} version {doc.get('probe_version')}; today's probe is version "
            f"{declared['version']} (options it lacked then take their defaults)"
        )
    return " ".join(args), notes + migrated


def reproduce_block(
    rel: str, aliases: dict[str, str], docs: dict[str, dict[str, Any]], declarations: Declarations | None
) -> str:
    """The *Reproduce* section: per alias, its command and the source it ran at, in one shell block."""
    if not aliases:
        return ""
    out = ["", "## Reproduce", ""]
    if declarations is None:
        out += ["This build was not given the probes' options, so their commands are not shown.", ""]
        return "\n".join(out) + "\n"
    out += [
        "Each run's command, rebuilt from the probe and params its evidence recorded, with the source it ran at. "
        "On a machine like the one above, it stores new evidence to compare with the cited one.",
        "",
        "```sh",
    ]
    for alias in sorted(aliases):
        ident = aliases[alias]
        doc = docs[ident]
        cmd, notes = command(doc, declarations)
        code = doc.get("code") or {}
        source = code.get("measure_source_sha256")
        at = f"measure source sha256:{source}" if source else "measure source hash not recorded (older evidence)"
        if cmd is None:
            lines = [f"# {alias} ({short_id(ident)}): {notes[0]}"]
        else:
            lines = [f"# {alias} ({short_id(ident)}): {at}, probebook {_plain(code.get('probebook'))}"]
            lines += [f"# {n}" for n in notes]
        if cmd is not None:
            lines.append(cmd)
        out += [printable(line) for line in lines]  # one line each: evidence text cannot end the code block
    out += ["```", ""]
    return "\n".join(out) + "\n"
