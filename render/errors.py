"""The error render raises when the archive, the sources or the site engine refuse a build.

It sits at the root of ``render`` because every stage raises it, from loading the archive to the
site engine's run, and a stage must not import the build's plain data to reach it.
"""

from __future__ import annotations

from measure.errors import ProbebookError


class BuildError(ProbebookError):
    """The archive, the sources or the site engine refused the build."""
