"""``Number``: a number a page shows, with its unit, format, uncertainty and provenance, and how it reads.

A number keeps its value in a *base* unit (seconds, bytes, tokens/s ...) and, separately, the
unit it is displayed in, so the ledger compares values across builds even when a page changes
how it shows them. It renders as the formatted number wrapped in a Markdown link to its
evidence page, with the derivation (and the uncertainty) in the link's title.

Text that reaches a page from data (front matter, evidence notes, column names) goes through
``escape_text``, which escapes what Markdown or HTML could act on, so it can only ever show as text.

Every number a page shows is a ``render.numbers.quantity.Quantity``: this class with the arithmetic and comparisons
of claims, whose algebra builds Quantities in turn, so the two jobs live in two modules without a loop.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from measure.errors import ProbebookError
from render.derive import basis as bases
from render.derive import reading
from render.numbers import legend
from render.numbers.links import number_links, short_id, title_text
from render.numbers.units import TIME, conversion_factor

FLAG = "yes/no"
"""The ``fmt`` of a flag (1 or 0, say a device found busy): shown ``yes`` or ``no``, as an evidence page shows the
boolean it was read from (``render.evidence.fields.value_text``), so the link lands on the text it shows."""


_N = TypeVar("_N", bound="Number")
"""A number's own class (``Quantity``), which ``to``, ``format`` and the interval's ends return."""


@dataclass(frozen=True)
class Number:
    """A published number with its provenance (its fields, checks and reading; ``Quantity`` adds the arithmetic)."""

    value: float | None
    """The number in ``unit`` (the base unit); None when it cannot be derived (``note`` says why)."""
    unit: str
    """Base unit of ``value``: ``s``, ``s/token``, ``tok/s``, ``B``, ``FLOP/s``; ``""`` for a ratio."""
    fmt: str = ".3g"
    """Python format spec for the displayed number (``.3g``, ``,.0f``, ``.1%``)."""
    display: str | None = None
    """Unit the number is shown in (same base, any prefix); None shows it in ``unit``."""
    uncertainty: tuple[float, float] | None = None
    """A 95% interval (low, high) in ``unit``, when the derivation gives one."""
    evidence: tuple[str, ...] = ()
    """Full evidence ids (``sha256:<64 hex>``) the number is derived from; the first is linked."""
    derivation: str = ""
    """How the number was derived, with its parameters; shown as the link's title and in the ledger."""
    key: str = ""
    """Stable name of the number within its page, e.g. ``fit(sweep).c``; the ledger's row key."""
    note: str | None = None
    """Why ``value`` is None, shown in place of the number's explanation."""
    extra: tuple[tuple[str, Any], ...] = field(default=())
    """Additional facts for the title, as (label, text) pairs."""
    mark: str | None = None
    """A word shown beside the number, e.g. ``partial`` for a number from partial evidence."""
    anchor: str = ""
    """Where on the first evidence's page the number's inputs are (``row-12``, ``samples-r95-99``,
    ``params-batch``; ``render.numbers.links.rows_anchor``); "" for the raw samples table."""
    more_anchors: tuple[str, ...] = ()
    """The same for the second evidence document on, position by position ("" or missing: its samples table)."""
    pinned: bool = False
    """True when the template chose the display unit (``.to()``); otherwise the prefix is chosen to fit the value."""
    bounded: bool = False
    """True for a saving or a share: a part of a whole, which cannot exceed it either way, so a value above 1 or
    below −1 (over ±100%) is refused when the number is made, not shown as a percent no reader can believe."""
    order: tuple[str, str] | None = field(default=None, compare=False)
    """For a speed-up of one thing over another: (the faster, the slower) as the evidence names them, so a
    label that states a direction can be checked against which one it names first (``render.numbers.directions``)."""
    expr: Any = field(default=None, compare=False)
    """For a number combined from others (``a / b``, ``a * 2``): its expression over ``leaves``."""
    leaves: tuple[dict[str, Any], ...] = field(default=(), compare=False, hash=False)
    """For a combined number: the page-function numbers it is made of (key, evidence, value, unit)."""
    exact: bool = field(default=False, compare=False)
    """True for a number exact by nature (a recorded param, a count the probe set): no interval is shown, and
    in arithmetic it counts as a plain number, where a measured number without an interval stops one."""
    resample: Any = field(default=None, compare=False, hash=False, repr=False)
    """For a page-function number drawn from windows: how to redraw it (``render.derive.intervals.Recipe``), so
    numbers combined from one document's windows get an interval by resampling them jointly."""
    leaf_resamples: tuple[Any, ...] = field(default=(), compare=False, hash=False, repr=False)
    """For a combined number: each leaf's recipe (None where a leaf has none), position by position."""
    basis: str = field(default="", compare=False)
    """Why the number shows no interval, one of ``render.derive.basis.BASES`` (``observed``, ``few windows`` ...);
    "" when it has one, is ``exact``, or has not said (``stated_basis`` gives what the ledger row says)."""
    within: tuple[float, float] | None = field(default=None, compare=False)
    """This run's windows' 95% interval, kept where ``uncertainty`` is the across-sessions one (an absolute time or
    rate: ``render.evidence.series.across``); None where the two are one (a ratio or saving within one run)."""
    band: float | None = field(default=None, compare=False)
    """The practical band of its probe class (a fraction, ``render.derive.replication.DELTA``): a difference smaller
    than this is judged equivalent or not resolved, never a direction; None where no run's class is known."""
    lease: tuple[str, float] | None = field(default=None, compare=False)
    """(host, unix time written) of the one run the number comes from: two runs of one host within one device lease
    (``render.derive.replication.LEASE_S``) shared its host and card, and are compared as one session."""
    pool: tuple[str, Any] | None = field(default=None, compare=False, hash=False, repr=False)
    """(probe class, ``replication.Spread``) its across-sessions interval was predicted with, or a combination of one
    lease's numbers would widen its result with (``render.numbers.leases``); None where no class pool applies."""
    clock_mhz: float | None = field(default=None, compare=False)
    """The median SM clock (MHz) of the one run's windows the number comes from (``render.derive.conditions``):
    a comparison between runs is also judged in cycles, time × clock (``render.numbers.directions.unresolved``)."""
    cited_as: tuple[str, str] | None = field(default=None, compare=False)
    """(page, ledger key) of the ledger row the number is shown as, once its page recorded it: its link may then
    land on its own entry of the evidence page (``render.numbers.links.number_links``)."""

    def __post_init__(self) -> None:
        bases.check(self.basis)
        if self.value is not None:
            if isinstance(self.value, bool) or not isinstance(self.value, (int, float)):
                raise TypeError(f"Quantity value must be a number, got {type(self.value).__name__}")
            if not math.isfinite(self.value):
                object.__setattr__(self, "note", self.note or "the derivation gave a non-finite result")
                object.__setattr__(self, "value", None)
        if self.display is not None:
            conversion_factor(self.unit, self.display)
        if self.bounded and self.value is not None and abs(self.value) > 1:
            raise ProbebookError(
                f"{self.key or 'a share'} is {self.value * 100:.1f}%: a saving or share beyond ±100% is not a part "
                f"of its whole ({self.derivation or 'no derivation'})"
            )

    # -- what templates may call -------------------------------------------------------
    def to(self: _N, unit: str) -> _N:
        """The same number shown in another prefix of its unit, e.g. ``.to("ms")``."""
        conversion_factor(self.unit, unit)
        return replace(self, display=unit, pinned=True)

    def format(self: _N, spec: str) -> _N:
        """The same number with another format spec, e.g. ``.format(".2f")``."""
        if reading.wide_format(spec):
            raise ProbebookError(f"format spec {spec[:40]!r} asks for more than {reading.MAX_FORMAT_WIDTH} characters")
        try:
            format(1.5, spec)
        except ValueError:
            raise ProbebookError(f"{spec!r} is not a Python number format (try '.3g' or ',.0f')") from None
        return replace(self, fmt=spec)

    @property
    def low(self: _N) -> _N:
        """The low end of the number's 95% interval, a number of its own: a claim that two numbers are not resolved
        apart compares ends (``claim(a.low <= b.high, b.low <= a.high, "...")``), as ``directions.unresolved``
        resolves a direction. An exact number is its own end; a measured one without an interval has none."""
        return self._end("low")

    @property
    def high(self: _N) -> _N:
        """The high end of the number's 95% interval, a number of its own (``low``'s mirror)."""
        return self._end("high")

    def _end(self: _N, which: str) -> _N:
        name = self.key if self.expr is None else f"({self.key})"
        if self.value is None:
            raise ProbebookError(f"{name}.{which}: {self.key} has no value ({self.note or 'not derived'})")
        if self.uncertainty is None and not self.exact:
            why = bases.BASES.get(self.basis, "it states none")
            raise ProbebookError(f"{name}.{which}: {self.key} has no interval to take an end of ({why})")
        lo, hi = self.uncertainty or (self.value, self.value)
        return replace(
            self,
            value=lo if which == "low" else hi,
            uncertainty=None,
            key=f"{name}.{which}",
            derivation=f"the {which} end of the 95% interval of {self.key}: {self.derivation}",
            mark=None,
            order=None,
            expr=None,
            leaves=(),
            resample=None,
            leaf_resamples=(),
            bounded=False,
            basis=bases.EXACT if self.exact else bases.END,
            within=None,  # an end is a line: it has no interval of its own, across sessions or within its run
            cited_as=None,
        )

    @property
    def stated_basis(self) -> str:
        """What the ledger row says of the number's uncertainty: ``interval`` when it shows one, ``exact`` for a
        number exact by nature, else its ``basis`` ("" when it has not said why it has no interval)."""
        if self.uncertainty is not None and self.value is not None:
            return bases.INTERVAL
        if self.exact:
            return bases.EXACT
        return self.basis

    # -- rendering (the rules are render.derive.reading') ----------------------------------------
    @property
    def shown_unit(self) -> str:
        """The unit the number is shown in: the template's ``.to()`` unit, else the prefix that fits the value."""
        return self._shown()[1]

    def _shown(self) -> tuple[float | None, str]:
        """(the value in the shown unit, the shown unit)."""
        unit = self.display if self.display is not None else self.unit
        if self.value is None:
            return None, unit
        factor = conversion_factor(self.unit, unit)
        value = self.value if factor == 1.0 else self.value * factor  # keeps an int an int, for "d" formats
        if self.pinned or self._explicit or isinstance(self.value, int) or unit in TIME:
            return value, unit
        binary = unit.endswith("iB") or "iB/" in unit
        return reading.choose_unit(float(value), unit, binary=binary)

    @property
    def _explicit(self) -> bool:
        """A fixed-point, integer or percent format the page asked for is kept as written."""
        return self.fmt.endswith(("%", "d", "f", "F"))

    def _sig(self) -> int:
        """Significant figures a ``g``/``e`` format asks for (``.4g``: 4, ``.2e``: 3); three otherwise."""
        m = re.fullmatch(r"[^.]*\.([0-9]+)([gGeE])", self.fmt)
        if not m:
            return reading.SIG
        digits = int(m.group(1))
        return max(digits + (1 if m.group(2) in "eE" else 0), 1)

    def _decimals(self, scale: float) -> int | None:
        """Decimal places the interval asks for in the shown unit (``scale``: shown per base); None without one."""
        if self.uncertainty is None or self.value is None:
            return None
        lo, hi = self.uncertainty
        return reading.interval_decimals(self.value * scale, lo * scale, hi * scale)

    def _format(self, value: float, scale: float) -> str:
        """One number (a value or a bound, already in the shown unit) as text, without its unit."""
        if self.fmt == FLAG:
            return "yes" if value else "no"
        places = self._decimals(scale)
        if self.fmt.endswith("%"):
            if places is None:
                return reading.minus(self._python(value))
            return reading.fixed(value * 100, max(places - 2, 0)) + "%"
        if self._explicit:
            return reading.minus(self._python(value))
        if places is not None:
            return reading.fixed(value, places)
        if isinstance(value, int):
            return reading.minus(f"{value:,}")  # a count stored as an integer is shown whole
        if not self.unit:
            special = reading.count_words(value, self._sig(), " ") or reading.small_ratio(value, self._sig(), " ")
            if special:
                return special
        return reading.significant(value, self._sig())

    def _python(self, value: float) -> str:
        try:
            return format(value, self.fmt)
        except ValueError:
            raise ProbebookError(f"{self.fmt!r} is not a Python number format for {self.key or 'a quantity'}") from None

    def _scale(self) -> float:
        """Shown-unit units per base unit."""
        return conversion_factor(self.unit, self._shown()[1])

    @property
    def text(self) -> str:
        """The number as a reader sees it: ``12.3 ms``, ``23.0%``, ``4.23 TB/s``, ``n/a`` (``render.derive.reading``).

        A plain space here (the ledger's and messages' text); ``markdown`` joins number and unit with a narrow
        no-break space."""
        shown_value, unit = self._shown()
        if shown_value is None:
            return "n/a"
        number = self._format(shown_value, self._scale())
        if self.fmt.endswith("%"):
            return number
        return reading.with_unit(number, unit, " ")

    @property
    def interval_text(self) -> str | None:
        """The uncertainty in parentheses without the unit, ``(1.7–5.8)``, to follow ``text``; or None."""
        if self.uncertainty is None or self.value is None:
            return None
        scale = self._scale()
        lo, hi = (self._format(v * scale, scale) for v in self.uncertainty)
        if lo == hi:  # an interval of no width at the digits shown ("22 s (22–22)") says nothing a reader can use
            return None
        if self.fmt.endswith("%"):
            return reading.interval(lo.rstrip("%"), hi.rstrip("%"), "%")
        return reading.interval(lo, hi)

    @property
    def title(self) -> str:
        """The link title: derivation, interval, notes and the evidence it stands on."""
        parts = [self.derivation or "derived from evidence"]
        if self.interval_text:
            unit = "" if self.fmt.endswith("%") or not self.shown_unit else " " + reading.unit_text(self.shown_unit)
            named = "across sessions" if self.within is not None and self.within != self.uncertainty else "95% interval"
            parts.append(f"{named} {self.interval_text[1:-1]}{unit}")
            if self.within is not None and self.within != self.uncertainty and self.value is not None:
                scale = self._scale()
                lo, hi = (self._format(v * scale, scale) for v in self.within)
                windows = "this lease's windows" if len(self.evidence) > 1 else "this run's windows"
                parts.append(f"{windows} {lo}–{hi}{unit}")
        elif self.uncertainty is not None and self.value is not None:
            scale = self._scale()
            lo = self._format(self.uncertainty[0] * scale, scale)
            parts.append(f"95% interval of no width at the digits shown: {lo} at both ends")
        elif self.basis and self.value is not None:
            parts.append(f"no interval: {bases.BASES[self.basis]}")
        if self.note:
            parts.append(self.note)
        if self.mark:
            marks = [m.strip() for m in self.mark.split(",")]
            said = {
                "partial": "from partial evidence",
                "within noise": "within noise: its interval contains zero",
                "lack of fit": "from a model that fails its own lack-of-fit test (the fit's warnings say how)",
            }
            explained = {label for label, _ in self.extra}  # a mark that its own extra explains is said there
            parts.extend(said.get(m, m) for m in marks if f"{m}:" not in explained)
        parts.extend(f"{label} {value}" for label, value in self.extra)
        if self.evidence:
            more = f" (+{len(self.evidence) - 1} more)" if len(self.evidence) > 1 else ""
            parts.append(f"evidence {short_id(self.evidence[0])}{more}")
        return title_text("; ".join(parts))

    @property
    def shown_text(self) -> str:
        """The number as its link reads, plain spaces: ``text``, its interval and its mark (``45.9% (43.7–48.1%)``)."""
        return " ".join([self.text, *([self.interval_text] if self.interval_text else [])]) + (
            f" ({self.mark})" if self.mark else ""
        )

    def markdown(self, page: str) -> str:
        """The Markdown a page shows: the number and its interval, linked to its evidence, titled by its derivation."""
        text = self.text.replace(" ", reading.NNBSP)  # number and unit on one line, a narrow space apart (SI §5.4.3)
        if self.interval_text:
            # a plain space before the interval: a table cell (tables.css) may break the line there, never inside
            # the number or the interval, so a table of many intervals still fits its column
            text += " " + self.interval_text.replace(" ", "\u00a0")
        signs, words = legend.split_marks(self.mark)
        if words:
            text += f" *({', '.join(words)})*"
        anchors = (self.anchor, *self.more_anchors)
        linked = number_links(page, text, self.title, self.evidence, anchors, self.cited_as)
        return linked + "".join(legend.sign_markdown(s) for s in signs)  # a sign, not words, its meaning one hover away

    def __str__(self) -> str:  # a Quantity reaching text without a page (e.g. in a filter) shows its text
        return self.text
