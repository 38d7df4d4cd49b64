"""The dates a build gives what it makes: the site engine's ``SOURCE_DATE_EPOCH`` (the newest evidence or record
date, so no wall-clock time enters the site) and the footer's "Built" day (``render.pages.colophon``)."""

from __future__ import annotations

import calendar
import datetime as _dt
import os
import time

from render.errors import BuildError
from render.evidence.archive import Archive
from render.pages import limits
from render.pages.sources import Sources


def _given_epoch() -> int | None:
    """``$SOURCE_DATE_EPOCH`` as a whole number of seconds, or None when it is not set."""
    given = os.environ.get("SOURCE_DATE_EPOCH")
    if given is None:
        return None
    try:
        epoch = int(given)
    except ValueError:
        raise BuildError(f"SOURCE_DATE_EPOCH={given!r} is not a whole number of seconds") from None
    low, high = limits.EPOCH_RANGE  # the sitemap's gzip header holds a 32-bit time
    if not low <= epoch <= high:
        raise BuildError(f"SOURCE_DATE_EPOCH={given[:40]!r} is outside {low}..{high} (1970 to 2106)")
    return epoch


def source_date_epoch(evidence: Archive, src: Sources) -> int:
    """``$SOURCE_DATE_EPOCH`` if set, else midnight UTC of the newest evidence or record date (0 if none).

    Either must lie in ``limits.EPOCH_RANGE`` (the sitemap's gzip header holds a 32-bit time)."""
    low, high = limits.EPOCH_RANGE
    given = _given_epoch()
    if given is not None:
        return given
    dates = [(d["created_at"][:10], f"evidence {i}") for i, d in evidence.docs.items()]
    dates += [(p.date, str(p.path)) for p in src.pages if p.date]
    if not dates:
        return 0
    day, where = max(dates)
    epoch = calendar.timegm(_dt.date.fromisoformat(day).timetuple())
    if not low <= epoch <= high:
        raise BuildError(f"{where}: dated {day}, outside the dates a site can carry (1970-01-01 to 2106-02-07)")
    return epoch


def footer_epoch(now: float | None = None) -> int:
    """The date the footer's "Built ..." names: ``$SOURCE_DATE_EPOCH`` if set, else midnight UTC of the day of
    the build (``now``, default the clock). Not the newest evidence date, which ``source_date_epoch`` gives the
    engine for reproducible files: a footer saying "Built" on a day the site was not built misleads (issue 29).
    A day, not a second, so builds of one day stay byte-identical."""
    given = _given_epoch()
    if given is not None:
        return given
    moment = _dt.datetime.fromtimestamp(time.time() if now is None else now, _dt.timezone.utc)
    return calendar.timegm(moment.date().timetuple())
