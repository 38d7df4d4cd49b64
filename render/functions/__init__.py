"""Page functions: what a page's template may call, the views they return, the library of derivations."""
