"""probebook's render side: evidence -> derived numbers -> ledger -> pages -> site.

Never imports torch, and from ``measure`` only the shared envelope, store and column contracts
(``measure.evidence``, ``measure.store``, ``measure.errors``, ``measure.contracts``; ARCHITECTURE.md §3).
"""
