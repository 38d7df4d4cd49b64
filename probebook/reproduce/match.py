"""``reproduce --with ARCHIVE``: each cited document's counterpart in another archive, by one stated rule.

The rule, for a cited document D and a document C of the other archive:

1. C is a run of the same probe as D, stored ``complete`` or ``unstable`` (measured, its noisy rows flagged) and
   ``measured`` (not imported), and not D itself.
2. Their params agree: every param either recorded has the same value in the other, after both are
   migrated to today's probe (``measure.evidence.reruns``); a param only one of them recorded (an option a
   later, or earlier, probe version added) must be at today's default there (the ``Config`` field's
   default, from ``measure.cli.declarations``). So a document measured by a later probe version matches
   when the params the original recorded agree and the options it lacked are at their defaults. Params
   naming a folder of the measuring machine (``trust.LOCAL_FOLDERS``) are not compared, nor is a param only
   one of them recorded that is no option of today's probe (no ``Config`` field: a fact the run recorded
   about itself, such as ``n_params_total``, not an input that shaped it).
3. The GPU model (``machine.gpu``; ``None`` is the CPU) decides what the match is: the same model is a
   reproduction; when the other archive holds matches of D on other models only, D is compared across
   machines, and the whole result is labelled ``cross-machine``, never called a reproduction.

First, by configuration key (``measure.evidence.configkey``: probe, the params that shape the work, GPU model;
effort such as windows, sessions and iterations left out), both documents read as today's (``for_reading``):
C is a counterpart of D when it passes rule 1 and has D's key, so a re-measurement with other effort settings
pairs. Where the record cites a key once, the newest such C (``created_at``, then id) is D's counterpart; where
it cites the key more than once (``sweep`` and ``sweep_again``) and the other archive holds more than one such C,
which answers which is not known: *ambiguous*; where it holds one, that C answers every citation, and what the
record derives between them is not comparable (``probebook.reproduce.compare.TWINS``). Only where no C has D's
key do rules 2 and 3 apply: exactly one match (of D's GPU model if any, else of the others) is D's counterpart.
None is *missing*; several are *ambiguous* and all are listed. A record may cite one command twice (``sweep`` and
``sweep_again``), so a plain archive holding both new runs has two matches for each; given a reproduction's own
folder instead, its manifest names the alias each run answers (``by_manifest``) and the rule is not needed.
Missing or ambiguous documents stop ``reproduce`` with one line naming them, unless ``--partial``: then the
comparison goes on with the documents that matched, and every number of the others is ``missing``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from measure.evidence.configkey import config_key
from measure.evidence.envelope import MEASURED
from measure.evidence.reading import for_reading
from measure.evidence.reruns import migrate
from probebook.reproduce.trust import LOCAL_FOLDERS


def _same(a: Any, b: Any) -> bool:
    """Equal as JSON values, item by item (a tuple and a list of the same items agree; 1 and 1.0 agree, also
    inside a list or an object, as JSON writes them alike; True and 1 do not)."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if isinstance(a, (list, tuple)) and isinstance(b, (list, tuple)):
        return len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, bool) or isinstance(b, bool):
        return a is b
    if isinstance(a, (int, float)) and isinstance(b, (int, float)):
        return a == b
    return json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)


def params_agree(probe: str, recorded: dict[str, Any], other: dict[str, Any], defaults: dict[str, Any]) -> bool:
    """Rule 2: the params of two runs of ``probe`` agree (``defaults``: today's Config default of each option)."""
    mine, _ = migrate(probe, recorded)
    theirs, _ = migrate(probe, other)
    skip = set(LOCAL_FOLDERS.get(probe, ()))
    for name in (set(mine) | set(theirs)) - skip:
        if name in mine and name in theirs:
            if not _same(mine[name], theirs[name]):
                return False
        else:
            value = mine[name] if name in mine else theirs[name]
            if name in defaults and not _same(value, defaults[name]):
                return False
    return True


def gpu(doc: dict[str, Any]) -> str | None:
    machine = doc.get("machine") or {}
    value = machine.get("gpu") if isinstance(machine, dict) else None
    return str(value) if value is not None else None


@dataclass
class Matches:
    """What ``match`` found for a record's cited documents."""

    found: dict[str, str] = field(default_factory=dict)
    """alias -> the other archive's document that is its counterpart."""
    across: dict[str, str] = field(default_factory=dict)
    """alias -> the GPU model of a counterpart found only on another model (those aliases are cross-machine)."""
    missing: list[str] = field(default_factory=list)
    ambiguous: dict[str, list[str]] = field(default_factory=dict)

    @property
    def mode(self) -> str:
        return "cross-machine" if self.across else "reproduction"

    def problems(self) -> list[str]:
        """One phrase per cited document without a single counterpart."""
        out = [f"{a}: no match" for a in self.missing]
        out += [f"{a}: {len(ids)} matches ({', '.join(i[:19] for i in ids)})" for a, ids in self.ambiguous.items()]
        return out


def candidates(doc: dict[str, Any], ident: str, others: dict[str, dict[str, Any]], defaults: dict[str, Any]) -> list:
    """Rules 1 and 2: the ids in ``others`` whose document matches ``doc`` (id ``ident``), sorted."""
    probe = doc.get("probe")
    out = []
    for other_id, other in sorted(others.items()):
        if other_id == ident or other.get("probe") != probe or other.get("status") not in MEASURED:
            continue
        if (other.get("origin") or {}).get("kind") == "imported":
            continue
        if params_agree(str(probe), doc.get("params") or {}, other.get("params") or {}, defaults):
            out.append(other_id)
    return out


def key_of(doc: dict[str, Any]) -> str:
    """A document's configuration key (``config_key(...).ident``), on the document read as today's."""
    return config_key(for_reading(doc)).ident


def by_key(
    cited: dict[str, str], docs: dict[str, dict[str, Any]], others: dict[str, dict[str, Any]]
) -> tuple[dict[str, str], dict[str, list[str]]]:
    """(alias -> counterpart, alias -> its several candidates) of the cited aliases whose key ``others`` holds."""
    keys = {alias: key_of(docs[ident]) for alias, ident in cited.items()}
    runs: dict[str, list[str]] = {}
    for other_id, other in sorted(others.items()):
        if other.get("status") not in MEASURED or (other.get("origin") or {}).get("kind") == "imported":
            continue
        if other_id in cited.values():
            continue
        runs.setdefault(key_of(other), []).append(other_id)
    found, several = {}, {}
    for key in sorted(set(keys.values())):
        if key not in runs:
            continue
        mine = [a for a in sorted(keys) if keys[a] == key]
        theirs = runs[key]
        if len(mine) == 1 or len(theirs) == 1:  # one citation takes the newest run; one run answers every citation
            newest = max(theirs, key=lambda i: (str(others[i].get("created_at", "")), i))
            found.update(dict.fromkeys(mine, newest))
        else:
            several.update(dict.fromkeys(mine, theirs))
    return found, several


def match(
    cited: dict[str, str], docs: dict[str, dict[str, Any]], others: dict[str, dict[str, Any]], declarations: dict
) -> Matches:
    """Every cited alias's counterpart in ``others`` by the rule above (``docs``: the cited documents by id)."""
    result = Matches()
    keyed, several = by_key(cited, docs, others)
    result.found.update(keyed)
    result.ambiguous.update(several)
    for alias, ident in sorted(cited.items()):
        if alias in keyed or alias in several:
            continue
        doc = docs[ident]
        declared = declarations.get(str(doc.get("probe"))) or {"options": {}}
        defaults = {name: spec["default"] for name, spec in declared["options"].items()}
        ids = candidates(doc, ident, others, defaults)
        same = [i for i in ids if gpu(others[i]) == gpu(doc)]
        picked = same or ids
        if not picked:
            result.missing.append(alias)
        elif len(picked) > 1:
            result.ambiguous[alias] = picked
        else:
            result.found[alias] = picked[0]
            if not same:
                result.across[alias] = gpu(others[picked[0]]) or "CPU"
    return result


def by_manifest(
    points: list[dict[str, Any]],
    done: dict[str, str],
    cited: dict[str, str],
    docs: dict[str, dict[str, Any]],
    others: dict[str, dict[str, Any]],
) -> Matches:
    """``--with`` a reproduction's folder: each cited alias's run as the folder's manifest planned it (``points``:
    one per alias, with the ``original`` id it repeats; ``done``: alias -> the evidence its run stored). An alias the
    folder planned for another original, or whose run stored nothing, is missing; rule 3 labels the result."""
    planned = {str(p.get("key")): p.get("original") for p in points}
    result = Matches()
    for alias, ident in sorted(cited.items()):
        got = done.get(alias)
        if planned.get(alias) != ident or got is None or got not in others:
            result.missing.append(alias)
            continue
        result.found[alias] = got
        if gpu(others[got]) != gpu(docs[ident]):
            result.across[alias] = gpu(others[got]) or "CPU"
    return result
