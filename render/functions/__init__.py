"""Page functions: what a page's template may call, the views they return, the library of derivations.

``registry`` holds every page function, entered by ``@page_function``; ``page.Page`` is what each is
called with (a page's evidence aliases and the build's ``derivations.Library``). One module per subject
(``general``, ``rates``, ``step_scaling``, ``blocks``, ``batch``, ``memory``, ``kernels``, ``scaling``, ``pipeline``,
``correctness``); ``calls`` runs them from ``probebook derive``, and ``names`` lists them for the CLI without
importing them.
"""
