"""Every bound render and the site commands put on an input, in one place, each printed in the error it causes.

Issue 25 (items 10 and 12) found inputs that hung a build or used gigabytes
because no bound stood between them and the work: a page of 20,000 nested brackets (Python-Markdown is
quadratic in that depth: about 13 minutes), a FIFO or ``/dev/zero`` given as a ledger, a 120,000-digit
``derive`` argument, ``(((10**64)**64)**64)**64``, ``~`` doubling and string methods (``ljust``, ``center``,
``zfill``, ``replace``, ``join``) asked for a gigabyte. Each number here is far above what a real page or
command needs (the largest page in this repository is under 100 Ki characters and nests brackets 3 deep).
The limits owned elsewhere are named here, not restated: JSON and YAML nesting
(``measure.evidence.envelope.MAX_DEPTH``), a format spec's width (``render.derive.reading.MAX_FORMAT_WIDTH``,
200) and one file's size (``measure.evidence.files.max_bytes``, 64 MiB,
``PROBEBOOK_MAX_EVIDENCE_BYTES``), which also caps a ledger or history read by ``build``, ``publish`` and ``diff``.
"""

from __future__ import annotations

from measure.evidence.envelope import MAX_DEPTH as JSON_DEPTH  # noqa: F401 - named here, owned there
from measure.evidence.files import DEFAULT_MAX_BYTES as FILE_BYTES  # noqa: F401 - named here, owned there
from render.derive.reading import MAX_FORMAT_WIDTH as FORMAT_WIDTH  # noqa: F401 - named here, owned there

PAGE_CHARS = 8 << 20
"""The most text one page's template may produce, and the longest string one template operation may make
(``*``, ``+``, ``~``, a string method, ``join``): 8 Mi characters."""
TEMPLATE_SECONDS = 10.0
"""The most CPU time one page's template, one headline or one ``derive`` call may use (a site renders in seconds)."""
POWER_EXPONENT = 64
"""The largest integer exponent ``**`` takes in a page or a ``derive`` argument."""
POWER_BITS = 1 << 16
"""The largest integer ``**`` may make, in bits (about 19,700 decimal digits): ``(10**64)**64`` is 13,600 bits,
one more ``**64`` would be 870,000."""
MARKDOWN_NESTING = 100
"""The deepest a page's Markdown may nest ``[`` brackets (Python-Markdown's time grows with the square of it)."""
ARGUMENT_CHARS = 1000
"""The longest one ``probebook derive`` argument may be (its number parser backtracks on long digit runs)."""
EPOCH_RANGE = (0, 2**32 - 1)
"""``SOURCE_DATE_EPOCH`` and the newest record or evidence date, in seconds: the gzip header of the sitemap holds
a 32-bit time (RFC 1952), so 9999-12-31 stopped the site engine with ``struct.error``."""
SERVE_TIMEOUT = 10.0
"""Seconds ``probebook serve`` waits on one connection's request before closing it."""
