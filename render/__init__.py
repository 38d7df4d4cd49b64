"""probebook's render side: evidence -> derived numbers -> ledger -> pages -> site.

Never imports torch, and from ``measure`` only the shared envelope, store, column contracts and
progress reporting (``measure.evidence``, ``measure.store``, ``measure.errors``, ``measure.contracts``,
``measure.progress``; ARCHITECTURE.md §3).
"""
