"""probebook's render side: evidence -> derived numbers -> ledger -> pages -> site.

Never imports torch, and from ``measure`` only the shared envelope and store
(``measure.evidence``, ``measure.store``, ``measure.errors``).
"""
