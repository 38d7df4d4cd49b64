"""The whole page is the boundary: the frame each theme writes around a page's content (head, header,
navigation, footer) is kept in ``render/site/frames/`` and equals what a clean build of the fixture site
writes now, and ``render.site.frame.check`` refuses, in one line naming the page, what no clean build writes
(a script, a handler attribute, a refresh, a malformed tag, a script URL) planted into a real built page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from render.site import frame, sanitize

THEMES = {"mkdocs-material": sanitize.MATERIAL, "zensical": sanitize.ZENSICAL}


def _learnt(site: Path, theme: str) -> frame.Frame:
    return sanitize.learn_frame(site, THEMES[theme])


def test_the_kept_frames_are_what_a_clean_build_writes(fixture_site: Any, fixture_site_zensical: Any) -> None:
    """A theme update that writes something new fails here first (and refuses builds until the frame is made
    again with ``python -m render.site.sanitize --frame SITE THEME`` from a clean build)."""
    for theme, paths in (("mkdocs-material", fixture_site), ("zensical", fixture_site_zensical)):
        assert _learnt(paths.site, theme) == frame.frame_of(theme), theme
    assert frame.frame_of("mkdocs-material").to_json() == (frame.FOLDER / "mkdocs-material.json").read_text()


PLANTS = [
    (b"<head>", b"<head><script>alert(1)</script>", "an inline script (sha256 "),
    (b"<head>", b'<head><meta http-equiv="refresh" content="0;url=http://a.test">', "the attribute meta.http-equiv"),
    (b"<head>", b"<head><b tabindex=0 onfocus=alert(2)>x</b>", "a <b> element"),
    (b"<head>", b'<head><img src=x onerror="alert(3)">', "a <img> element"),
    (b"<head>", b'<head><a href="x"onmouseover=alert(4)>', "a malformed tag"),
    (b"<head>", b'<head><a href="javascript:alert(5)">x</a>', "a script URL in <a href="),
    (b"<head>", b'<head><script src="https://a.test/x.js"></script>', "the script file 'https://a.test/x.js'"),
    (b"<head>", b'<head><script type="application/json" id="other">{}</script>', "a data script with id 'other'"),
    (b"<head>", b"<head><title>a</title><script>alert(6)</script>", "an inline script"),
]


@pytest.mark.parametrize("before,after,message", PLANTS)
def test_a_planted_frame_is_refused_naming_the_page(
    fixture_site: Any, before: bytes, after: bytes, message: str
) -> None:
    page = fixture_site.site / "index.html"
    raw = page.read_bytes()
    assert raw.count(before) == 1
    parts = list(sanitize.frame_parts(raw.replace(before, after), str(page)))
    with pytest.raises(frame.FrameError) as err:
        frame.check(parts, str(page), frame.frame_of("mkdocs-material"))
    text = str(err.value)
    assert text.startswith(f"{page}: outside its content area the page holds ") and "\n" not in text
    assert message in text, text


def test_every_clean_page_passes_and_a_site_below_a_path_too(fixture_site: Any) -> None:
    kept = frame.frame_of("mkdocs-material")
    pages = sorted(fixture_site.site.rglob("*.html"))
    assert len(pages) > 10
    for page in pages:
        frame.check(list(sanitize.frame_parts(page.read_bytes(), str(page))), str(page), kept)


def test_an_unknown_theme_fails_closed() -> None:
    with pytest.raises(frame.FrameError, match="no frame kept for the theme other"):
        frame.frame_of("other")
