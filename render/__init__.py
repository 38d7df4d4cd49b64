"""probebook's render side: evidence -> derived numbers -> ledger -> pages -> site.

Never imports torch, and from ``measure`` only the shared envelope, store, column contracts and
progress reporting (the ``measure.evidence`` package, ``measure.errors``, ``measure.constants`` and
``measure.progress``; ARCHITECTURE.md §Invariants).
"""
