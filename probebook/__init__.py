"""The ``probebook`` command: a thin CLI over ``measure`` and ``render``.

It is the composition root: the one place that sees both sides, so that ``render`` never
has to import probe code and ``measure`` never imports ``render``.
"""
