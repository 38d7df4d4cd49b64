"""The archive's runs as series of one configuration, and the across-sessions interval they give (issue 38).

Every measured run belongs to the series of its configuration key (``measure.evidence.configkey``). Where the
archive holds runs of a key from two or more leases (``leases``), each of their points (a token count, an arm, a
shape: the fields ``POINTS`` names) has one figure per lease; the spread of a point's lease figures around their
own mean, pooled over every repeated point of a probe class, is that class's between-session SD
(``render.derive.replication.pooled_log_sd``). A published absolute number (a time or a rate) then states where a
new session lands: ``across`` replaces its interval by the prediction interval and keeps this run's windows'
interval beside it (``Quantity.within``), saying which is which in its derivation.

Built once per build from the archive (``Library.pools``); a new document makes the next build a full one
(``render.assemble.incremental``), so no page keeps a pool an older archive gave.
"""

from __future__ import annotations

import datetime
import statistics
from collections import defaultdict
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from measure.evidence.configkey import config_key
from render.derive import conditions, replication
from render.numbers.quantity import Quantity
from render.numbers.units import is_timed_unit

POINTS: dict[str, tuple[tuple[str, ...], str]] = {
    "step-scaling": (("mode", "batch", "tokens"), "step_s"),
    "copy": (("direction", "memory", "pattern", "bytes"), "time_s"),
    "gemm": (("shape", "m", "n", "k"), "time_s"),
    "optimizer": (("arm",), "step_s"),
    "ablate": (("arm",), "step_s"),
    "mask": (("kind",), "step_s"),
    "stream": (("arm", "kind"), "step_s"),
    "hvp": (("method", "mode", "dtype", "batch"), "hvp_s"),
    "ddp": (("gpus", "phase"), "step_s"),
    "eval-boundary": (("phase", "label"), "seconds"),
    "batch-sweep": (("model", "context", "batch"), "tok_s"),
    "loss-memory": (("arm", "microbatch"), "tok_s"),
}
"""Each timing probe's point identity (the row fields that name one measured point) and the figure of it that
sessions repeat (its median over the point's windows)."""


MEASURED = ("complete", "unstable")
"""The statuses of a run that counts as a session: it measured every point it planned."""


def point_figures(doc: dict[str, Any]) -> dict[tuple[Any, ...], float]:
    """Each point of a run and its figure: the median of the point's ``POINTS`` field over its rows (positive
    values only). Empty for a probe without points here, or a run without rows."""
    return {point: statistics.median(values) for point, values in point_windows(doc).items()}


def point_windows(doc: dict[str, Any]) -> dict[tuple[Any, ...], list[float]]:
    """Each point of a run and its windows' figures (the ``POINTS`` field, positive values), in row order."""
    spec = POINTS.get(str(doc.get("probe")))
    rows = (doc.get("data") or {}).get("samples")
    if spec is None or not isinstance(rows, list):
        return {}
    names, field = spec
    found: dict[tuple[Any, ...], list[float]] = defaultdict(list)
    for row in rows:
        if not isinstance(row, dict):
            continue
        value = row.get(field)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            found[tuple(_hashable(row.get(n)) for n in names)].append(float(value))
    return dict(found)


def _measured_runs(docs: Iterable[tuple[str, dict[str, Any]]]) -> list[tuple[str, dict[str, Any], Any]]:
    """(id, document, configuration key) of each measured run that measured every point it planned (imports are
    not sessions), in the order given."""
    return [
        (ident, doc, config_key(doc))
        for ident, doc in docs
        if (doc.get("origin") or {}).get("kind") == "measured" and doc.get("status") in MEASURED
    ]


def leases(runs: Iterable[tuple[str, dict[str, Any]]]) -> list[list[str]]:
    """The runs ``(id, document)`` of ONE configuration key grouped by lease: one host (``machine.hostname_hash``),
    written within ``replication.LEASE_S`` of the lease's first run. A run whose host or time is unknown is a lease
    of its own. Groups in time order.

    Why: the replicate a reader faces is a new lease (another machine start, often another host and card of the
    model), and two runs of one lease share its card, host and clocks. On one H100 lease, five step configurations
    measured in one process and again in three sessions, minutes apart, agreed far more closely than the archive's
    re-measurements in separate leases; counted as independent sessions they narrowed the step class's pool from
    19.1% to 13.6%."""
    dated = [(run_lease(doc), ident) for ident, doc in runs]
    groups: list[tuple[tuple[str, float], list[str]]] = []
    for at, ident in sorted((at, ident) for at, ident in dated if at is not None):
        group = next((g for g in groups if replication.same_lease(g[0], at)), None)
        if group is None:
            groups.append((at, [ident]))
        else:
            group[1].append(ident)
    in_time = sorted(groups, key=lambda g: g[0][1])  # by each lease's first run, whatever its host
    return [ids for _first, ids in in_time] + [[ident] for at, ident in dated if at is None]


def repeated_points(docs: Iterable[dict[str, Any]]) -> dict[str, list[list[float]]]:
    """By probe class, the lease figures of every point the archive measured in two or more leases of one
    configuration key: a lease's figure is the geometric mean of its runs' (``leases``)."""
    by_key: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    class_of: dict[str, str] = {}
    for ident, doc, key in _measured_runs((str(i), d) for i, d in enumerate(docs)):
        class_of[key.ident] = replication.probe_class(key.probe)
        by_key[key.ident].append((ident, doc))
    out: dict[str, list[list[float]]] = defaultdict(list)
    for key_ident, runs in sorted(by_key.items()):
        documents = dict(runs)
        groups = leases(runs)
        if len(groups) < 2:
            continue
        per_point: dict[tuple[Any, ...], list[float]] = defaultdict(list)
        for group in groups:
            figures: dict[tuple[Any, ...], list[float]] = defaultdict(list)
            for ident in group:
                for point, figure in point_figures(documents[ident]).items():
                    figures[point].append(figure)
            for point, values in figures.items():
                per_point[point].append(statistics.geometric_mean(values))
        for _point, lease_figures in sorted(per_point.items(), key=lambda item: repr(item[0])):
            if len(lease_figures) >= 2:
                out[class_of[key_ident]].append(lease_figures)
    return dict(out)


def class_pools(docs: Iterable[dict[str, Any]]) -> dict[str, replication.Spread]:
    """Each probe class's between-session SD pooled over its repeated points (a class without any is absent)."""
    pools = {}
    for name, groups in repeated_points(docs).items():
        spread = replication.pooled_log_sd(groups)
        if spread is not None:
            pools[name] = spread
    return pools


def pooled_ids(docs: dict[str, dict[str, Any]], name: str) -> tuple[str, ...]:
    """The ids of the measured runs whose repeated points make class ``name``'s pool (keys measured in two or more
    leases), in id order."""
    by_key: dict[str, list[tuple[str, dict[str, Any]]]] = defaultdict(list)
    for ident, doc, key in _measured_runs(sorted(docs.items())):
        if replication.probe_class(key.probe) == name and point_figures(doc):
            by_key[key.ident].append((ident, doc))
    return tuple(i for runs in by_key.values() if len(leases(runs)) >= 2 for i, _ in runs)


def is_timed(q: Quantity) -> bool:
    """Whether ``q`` is an absolute time or rate from windows: the numbers whose published interval says where a
    new session lands (a ratio, a saving or a share of one run keeps its windows' interval, and says so)."""
    if q.value is None or q.exact or q.uncertainty is None or q.value <= 0:
        return False
    return is_timed_unit(q.unit)


def across(docs: dict[str, dict[str, Any]], pools: dict[str, replication.Spread]) -> Callable[[Any], Any]:
    """A function that gives an absolute timed number (``is_timed``) from one run its across-sessions interval:
    this run's figure as one session, the class's pooled between-session SD (``replication.prediction``); anything
    else passes through unchanged. A class the archive never repeated keeps this run's interval, saying so."""

    runs: dict[str, tuple[float | None, list[tuple[str, str]]]] = {}

    def run_of(ident: str) -> tuple[float | None, list[tuple[str, str]]]:
        # a page reads many numbers of one run: its windows' clocks and marks are read once per page
        if ident not in runs:
            runs[ident] = (conditions.median_clock(docs[ident]), conditions.run_marks(docs[ident]))
        return runs[ident]

    def apply(value: Any) -> Any:
        if not isinstance(value, Quantity) or value.band is not None:
            return value
        probes = {str(docs[i].get("probe")) for i in value.evidence if i in docs}
        if len(probes) != 1:
            return value
        name = replication.probe_class(probes.pop())
        # a number combined from others keeps the lease its operands share (``render.numbers.leases``)
        lease = value.lease or lease_of(docs, value.evidence)
        value = replace(value, band=replication.DELTA[name], lease=lease)
        value = marked(docs, value, run_of)
        if not is_timed(value) or value.expr is not None:
            return value  # a combined number's interval is the one ``Quantity.combine`` chose, widened at most once
        pool = pools.get(name)
        if pool is None:
            return replace(
                value,
                within=value.uncertainty,
                derivation=f"{value.derivation}; {NO_POOL.format(name=name)}",
            )
        assert value.value is not None  # is_timed
        predicted = replication.prediction([value.value], pool)
        assert predicted is not None  # one positive figure and a pool
        return replace(
            value,
            uncertainty=(predicted.low, predicted.high),
            within=value.uncertainty,
            derivation=f"{value.derivation}; {replication.describe(pool, name)}",
            pool=(name, pool),
        )

    return apply


def shaping_of(docs: dict[str, dict[str, Any]]) -> Callable[[str], dict[str, Any] | None]:
    """A function from an evidence id to its run's shaping params (``config_key(doc).params``) and its ``probe``
    (None: not in ``docs``), each computed once."""
    known: dict[str, dict[str, Any]] = {}

    def params(ident: str) -> dict[str, Any] | None:
        if ident not in docs:
            return None
        if ident not in known:
            key = config_key(docs[ident])
            known[ident] = {**key.params, "probe": key.probe}
        return known[ident]

    return params


def marked(
    docs: dict[str, dict[str, Any]],
    value: Quantity,
    read: Callable[[str], tuple[float | None, list[tuple[str, str]]]],
) -> Quantity:
    """``value`` with the marks of the runs it comes from (``conditions.run_marks``: throttled, clock sag,
    host-bound), each explained in its title, and the one run's median SM clock; a number exact by nature (a
    param, a count) takes no mark: the clock and the host do not move it. ``read``: a run's (median clock, marks)
    by id, kept by the caller (``across``) so a page reads each run's windows once."""
    runs = [i for i in value.evidence if i in docs]
    clock = read(runs[0])[0] if len(runs) == 1 else None
    value = replace(value, clock_mhz=clock)
    exact = value.exact or value.basis == "exact" or value.derivation.startswith("evidence field params.")
    if value.value is None or exact:
        return value
    found: dict[str, str] = {}
    for ident in runs:
        for mark, said in read(ident)[1]:
            found.setdefault(mark, said)
    if not found:
        return value
    words = [m.strip() for m in (value.mark or "").split(",") if m.strip()]
    words += [m for m in found if m not in words]
    extra = tuple((f"{m}:", said.split(": ", 1)[1]) for m, said in found.items())
    return replace(value, mark=", ".join(words), extra=value.extra + extra)


NO_POOL = (
    "the interval is this run's windows only: the archive repeats no {name} configuration in another session, "
    "so where a new session lands is not estimated"
)


def lease_of(docs: dict[str, dict[str, Any]], ids: tuple[str, ...]) -> tuple[str, float] | None:
    """(host, unix time written) of the one run ``ids`` names; None for several runs or an unknown host."""
    if len(ids) != 1 or ids[0] not in docs:
        return None
    return run_lease(docs[ids[0]])


def run_lease(doc: dict[str, Any]) -> tuple[str, float] | None:
    """(host, unix time written) of one run; None where its host or time is unknown."""
    host = (doc.get("machine") or {}).get("hostname_hash")
    try:
        written = datetime.datetime.fromisoformat(str(doc.get("created_at")).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None
    return (host, written) if isinstance(host, str) and host else None


def _hashable(value: Any) -> Any:
    return value if isinstance(value, (str, int, float, bool, type(None))) else repr(value)
