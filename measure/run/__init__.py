"""How a probe's points run: the journal (runner), one process per point (isolate) and torchrun launches of
the ddp probe (distributed, ddp_worker)."""
