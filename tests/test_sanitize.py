"""The HTML sanitizer as the site's boundary: a corpus of hostile Markdown constructs (records and playbook pages),
hostile evidence fields and published-ledger keys (generated pages, Changes included) through a real build by each
site engine (mkdocs-material, Zensical), every HTML file parsed with html.parser; a page without its theme's content
area refused; a symbolic link out of the docs tree and active file kinds refused."""

from __future__ import annotations

import html.parser
import json
import re
import shutil
from pathlib import Path

import pytest

from measure.errors import ProbebookError
from render.assemble.stages import BuildPaths, build
from render.numbers.ledger import to_bytes as ledger_bytes
from render.site import assets as site_assets
from render.site import engines, sanitize

REPO = Path(__file__).resolve().parent.parent
SITE_FIXTURE = REPO / "tests" / "fixtures" / "site"
XSS_EVIDENCE = "sha256:0cc0ffa9a687"

# Each construct carries the marker "pwn" in its payload. The first group are the Markdown constructs a
# prose guard that imitates Python-Markdown gets wrong (code spans, fences and reference definitions it
# recognises differently); the second, plain raw-HTML and URL payloads.
CORPUS: list[tuple[str, str]] = [
    ("escaped backticks", "\\`<script>pwn(1)</script>\\`"),
    ("escaped backtick pair around a tag", "a \\` b <img src=x onerror=pwn(2)> c \\` d"),
    ("unclosed fence", "```\n<script>pwn(3)</script>\n"),
    ("fence of mixed markers", "```\n~~~\n<script>pwn(4)</script>\n~~~\n"),
    ("tilde fence closed by backticks", "~~~\n<script>pwn(5)</script>\n```\n"),
    ("fence indented four spaces", "para\n\n    ```\n<script>pwn(6)</script>\n    ```\n"),
    ("fence inside a blockquote", "> ```\n<script>pwn(7)</script>\n> ```\n"),
    ("fence inside a list item", "- item\n\n  ```\n<script>pwn(8)</script>\n  ```\n"),
    ("backtick in a fence's info string", "```a`b\n<script>pwn(9)</script>\n```\n"),
    ("backticks made by raw", "{% raw %}`{% endraw %}<script>pwn(10)</script>{% raw %}`{% endraw %}"),
    ("reference URL on the next line", "[x]:\n  javascript:pwn(11)\n\n[click][x]"),
    ("reference inside a blockquote", "> [y]: javascript:pwn(12)\n\n[click][y]"),
    ("reference inside a list item", "- [z]: javascript:pwn(13)\n\n[click][z]"),
    ("script element", "<script>pwn(14)</script>"),
    ("img onerror", '<img src=x onerror="pwn(15)">'),
    ("inline javascript link", "[a](javascript:pwn(16))"),
    ("angle-bracket javascript link", "[a](<javascript:pwn(17)>)"),
    ("data image", "![x](data:text/html;base64,cHdu)"),
    ("vbscript anchor", '<a href="vbscript:pwn(19)">v</a>'),
    ("svg onload", "<svg onload=pwn(20)></svg>"),
    ("comment then script", "<!-- c --><script>pwn(21)</script>"),
    ("mixed-case scheme", "[a](JaVaScRiPt:pwn(22))"),
    ("entity-encoded scheme", "[a](&#106;avascript:pwn(23))"),
    ("iframe srcdoc", '<iframe srcdoc="<script>pwn(24)</script>"></iframe>'),
    ("stray end of article", "</article><script>pwn(25)</script>"),
    ("theme id clobbering", '<div id="__config">{"search": "pwn.js"}</div>'),
    ("style element", "<style>body{background:url(javascript:pwn(27))}</style>"),
    ("form action", '<form action="javascript:pwn(28)"><button>b</button></form>'),
]
_BAD_SCHEMES = ("javascript:", "data:", "vbscript:")
_URL_JUNK = re.compile(r"[\x00-\x20]")  # browsers drop ASCII whitespace and controls inside a scheme


class Page(html.parser.HTMLParser):
    """Each element with its attributes and whether it sits in the content area; the text of every script."""

    def __init__(self, theme: sanitize.EngineTheme = sanitize.MATERIAL) -> None:
        super().__init__(convert_charrefs=True)
        self.elements: list[tuple[str, dict[str, str | None], bool]] = []
        self.scripts: list[tuple[str, bool]] = []
        self._content = 0
        self._script: list[str] | None = None
        self._theme = theme
        self._opened = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag == "article":
            self._content += 1
            self._opened = True
            self.elements.append((tag, dict(attrs), True))
            return
        # Zensical's theme opens the article with its skip-link target: the theme's, not the content's
        theirs = self._opened and self._theme is sanitize.ZENSICAL and (tag, attrs) == _ZENSICAL_SKIP
        self._opened = False
        self.elements.append((tag, dict(attrs), self._content > 0 and not theirs))
        if tag == "script":
            self._script = []

    def handle_endtag(self, tag: str) -> None:
        if tag == "article":
            self._content = max(0, self._content - 1)
        if tag == "script" and self._script is not None:
            self.scripts.append(("".join(self._script), self._content > 0))
            self._script = None

    def handle_data(self, data: str) -> None:
        if self._script is not None:
            self._script.append(data)


_ZENSICAL_SKIP = ("a", [("id", "__skip"), ("tabindex", "-1")])


def violations(text: str, theme: sanitize.EngineTheme = sanitize.MATERIAL) -> list[str]:
    """What in one HTML document could run script: scripts in the content, ``on*`` attributes, bad URLs."""
    page = Page(theme)
    page.feed(text)
    page.close()
    found = []
    for tag, attrs, in_content in page.elements:
        if tag in ("script", "iframe", "object", "embed", "form", "style") and in_content:
            found.append(f"<{tag}> in the content area")
        if tag == "script" and "pwn" in (attrs.get("src") or ""):
            found.append("script src from the content")
        for name, value in attrs.items():
            if name.startswith("on"):
                found.append(f"<{tag} {name}>")
            url = _URL_JUNK.sub("", value or "").lower()
            if url.startswith(_BAD_SCHEMES):
                found.append(f"<{tag} {name}={url[:20]}>")
            if name == "id" and (value or "").startswith("__") and in_content:
                found.append(f"<{tag} id={value}> clobbers the theme")
    for body, _in_content in page.scripts:
        if "pwn" in body:
            found.append(f"script {body[:40]!r}")
    return found


def _record(slug: str, body: str) -> str:
    return f"---\ntitle: Corpus {slug}\nversion: 1\ndate: 2026-12-02\nevidence:\n  xss: {XSS_EVIDENCE}\n---\n{body}\n"


def _project(root: Path, corpus: list[tuple[str, str]]) -> tuple[BuildPaths, dict[int, Path]]:
    """The fixture site plus one page per construct (odd ones records, even ones playbook pages)."""
    docs = root / "docs"
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    pages = {}
    for i, (_name, body) in enumerate(corpus):
        if i % 2:
            page = docs / "records" / f"corpus-{i:02d}" / "v1.md"
            page.parent.mkdir(parents=True)
            page.write_text(_record(f"{i:02d}", body))
        else:
            page = docs / "playbook" / f"corpus-{i:02d}.md"
            page.write_text(f"# Corpus {i:02d}\n\n{body}\n")
        pages[i] = page
    # The published ledger is read back onto the Changes page: its keys and texts are untrusted too.
    hostile = [
        {
            "page": "records/gone.md",
            "key": f"k{i}`\n<script>pwn('key')</script>|",
            "value": 1.0,
            "unit": "s",
            "text": "<img src=x onerror=\"pwn('text')\">",
            "uncertainty": None,
            "evidence": [],
            "derivation": "</td><script>pwn('derivation')</script>",
        }
        for i in range(2)
    ]
    published = root / "published.json"
    published.write_bytes(ledger_bytes(hostile))
    paths = BuildPaths(
        docs=docs,
        archive=SITE_FIXTURE / "archive",
        build=root / "build",
        site=root / "site",
        config=REPO / "mkdocs.yml",
        published=published,
    )
    return paths, pages


def _build_what_the_guard_lets_through(
    root: Path, clean: bool, engine: str = "mkdocs"
) -> tuple[BuildPaths, dict[str, str]]:
    """Build the corpus; a construct the Markdown-level guard refuses is taken out, with its one-line error."""
    corpus = dict(enumerate(CORPUS))
    refused: dict[str, str] = {}
    while True:
        paths, pages = _project(root, [corpus[i] for i in sorted(corpus)])
        by_page = {str(pages[n]): i for n, i in enumerate(sorted(corpus))}
        try:
            build(paths, clean=clean, engine=engine)
            return paths, refused
        except ProbebookError as exc:
            message = str(exc)
            culprit = next((by_page[p] for p in by_page if message.startswith(p)), None)
            assert culprit is not None, message  # every refusal names the page it came from
            assert "\n" not in message
            refused[corpus.pop(culprit)[0]] = message
            shutil.rmtree(root)
            root.mkdir()


def _site_violations(site: Path, theme: sanitize.EngineTheme = sanitize.MATERIAL) -> dict[str, list[str]]:
    out = {}
    for path in sorted(site.rglob("*.html")):
        found = violations(path.read_text(encoding="utf-8"), theme)
        if found:
            out[path.relative_to(site).as_posix()] = found
    return out


@pytest.fixture(scope="module", params=list(engines.ENGINES))
def corpus_site(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> tuple[BuildPaths, dict[str, str]]:
    """The corpus built by each site engine: the sanitizer must find and clean each theme's content area."""
    engine = request.param
    paths, refused = _build_what_the_guard_lets_through(tmp_path_factory.mktemp(f"corpus-{engine}"), True, engine)
    return paths, refused


def _theme(paths: BuildPaths) -> sanitize.EngineTheme:
    return engines.get(json.loads((paths.site / "ledger.json").read_bytes())["build"]["engine"]).theme


def test_no_page_of_the_built_corpus_can_run_script(corpus_site: tuple[BuildPaths, dict[str, str]]) -> None:
    paths, refused = corpus_site
    assert len(refused) < len(CORPUS)  # the build ran, with the rest of the corpus in it
    theme = _theme(paths)
    assert _site_violations(paths.site, theme) == {}
    pages = sorted(p.relative_to(paths.site).as_posix() for p in paths.site.rglob("*.html"))
    assert "changes.html" in pages and any(p.startswith("evidence/") for p in pages)
    assert any(p.startswith("records/corpus-") for p in pages) and any(p.startswith("playbook/corpus-") for p in pages)
    index = json.loads((paths.site / theme.search_index).read_text(encoding="utf-8"))
    assert len(index[theme.entries]) > len(pages)  # an entry per page and per section
    for doc in index[theme.entries]:
        assert violations(doc["title"] + doc["text"]) == [], doc["location"]
    for svg in paths.site.rglob("*.svg"):
        assert violations(svg.read_text(encoding="utf-8")) == [], svg


def test_the_theme_keeps_its_own_scripts(corpus_site: tuple[BuildPaths, dict[str, str]]) -> None:
    paths, _ = corpus_site
    for name in ("index.html", "changes.html", "playbook/corpus-00.html", "records/corpus-01/v1.html"):
        page = Page()
        page.feed((paths.site / name).read_text(encoding="utf-8"))
        outside = [body for body, in_content in page.scripts if not in_content]
        # the theme's five, then the site's own (render.site.assets: the vega-embed bundle, charts.js, and the
        # iframe-worker shim the theme loads as a polyfill)
        assert len(outside) == 5 + len(site_assets.SCRIPTS) + len(site_assets.POLYFILLS), name
        assert not [body for body, in_content in page.scripts if in_content], name
        assert any(attrs.get("src", "").endswith(".min.js") for tag, attrs, _ in page.elements if tag == "script")


def test_hostile_text_stays_visible_as_text(corpus_site: tuple[BuildPaths, dict[str, str]]) -> None:
    paths, _ = corpus_site
    changes = (paths.site / "changes.html").read_text(encoding="utf-8")
    # the whole key in one code span: its newline shown as an escape, its markup as text, its pipe inside the cell
    assert "<td><code>k0`\\n&lt;script&gt;pwn('key')&lt;/script&gt;|</code></td>" in changes


# the default engine in the default run; the other's build (about 20 s on 2 cores) runs with -m slow, as CI does
@pytest.mark.parametrize(
    "engine", [e if e == "mkdocs" else pytest.param(e, marks=pytest.mark.slow) for e in engines.ENGINES]
)
def test_without_the_sanitizer_the_corpus_does_get_through(tmp_path: Path, engine: str) -> None:
    """The corpus is hostile enough to matter: under either engine the Markdown-level guard alone lets some run."""
    paths, _ = _build_what_the_guard_lets_through(tmp_path, clean=False, engine=engine)
    assert _site_violations(paths.site, engines.get(engine).theme)


def test_clean_fragment_keeps_markdown_and_drops_the_rest() -> None:
    kept = (
        '<h2 id="a">A<a class="headerlink" href="#a" title="Permanent link">¶</a></h2>'
        '<table><thead><tr><th style="text-align: right;">x</th></tr></thead></table>'
        '<p><a href="../evidence/ab.html" title="fit">1 ms</a> <img alt="c" src="c.svg"></p>'
    )
    lazy = kept.replace("text-align: right;", "text-align:right").replace('src="c.svg">', 'src="c.svg" loading="lazy">')
    assert sanitize.clean_fragment(kept) == lazy  # every image lazy: a chart's hidden scheme is never fetched
    assert sanitize.clean_fragment('<img src="d.svg#only-dark" loading="eager">') == (
        '<img src="d.svg#only-dark" loading="lazy">'
    )
    assert sanitize.clean_fragment('<p onclick="x()">a<script>pwn()</script></p>') == "<p>a</p>"
    clobber = '<a href="javascript:pwn()">a</a><div id="__config">b</div>'
    assert sanitize.clean_fragment(clobber) == "<a>a</a><div>b</div>"
    assert sanitize.clean_fragment('<td style="color:red;text-align:left">x</td>') == "x"  # a td outside a table
    assert sanitize.clean_fragment('<table><tr><td style="position:fixed;text-align:left">x</td></tr></table>') == (
        '<table><tbody><tr><td style="text-align:left">x</td></tr></tbody></table>'
    )


def test_a_page_without_the_content_area_is_refused(tmp_path: Path) -> None:
    with pytest.raises(sanitize.SanitizeError, match="^" + re.escape("x.html: no content area")):
        sanitize.clean_page(b"<html><body><script>ok()</script></body></html>", "x.html")
    # Zensical's pages open the article with the theme's skip-link target; without it the page is not its theme's
    material = b'<html><article class="md-content__inner md-typeset"><p>a</p></article></html>'
    with pytest.raises(sanitize.SanitizeError, match=r"^y.html: no content area \(zensical's <article"):
        sanitize.clean_page(material, "y.html", sanitize.ZENSICAL)
    zensical = material.replace(b"<p>", b'\n  <a id="__skip" tabindex="-1"></a>\n<p onclick="pwn()">')
    assert sanitize.clean_page(zensical, "z.html", sanitize.ZENSICAL) == zensical.replace(b' onclick="pwn()"', b"")
    # under the mkdocs-material theme the same anchor is content: its theme id and tabindex are dropped
    assert b'<a id="__skip"' not in sanitize.clean_page(zensical, "z.html", sanitize.MATERIAL)
    index = tmp_path / "search.json"
    index.write_text('{"docs": []}')  # mkdocs-material's shape where Zensical's is expected
    with pytest.raises(sanitize.SanitizeError, match=re.escape("search.json: not a zensical search index")):
        sanitize.clean_search_index(index, sanitize.ZENSICAL)


def test_a_symlink_out_of_the_docs_tree_is_refused(tmp_path: Path) -> None:
    docs = tmp_path / "docs"
    shutil.copytree(SITE_FIXTURE / "docs", docs)
    secret = tmp_path / "secret.txt"
    secret.write_text("host file\n")
    (docs / "leak.txt").symlink_to(secret)
    paths = BuildPaths(docs, SITE_FIXTURE / "archive", tmp_path / "build", tmp_path / "site", REPO / "mkdocs.yml")
    with pytest.raises(ProbebookError) as err:
        build(paths, site=False)
    leak = docs / "leak.txt"
    # long temp paths (xdist workers) are clipped in the message, so the link's target is checked up to its clip
    text = str(err.value)
    assert text.startswith(f"{leak}: a symbolic link to ")
    assert text.endswith(f", outside {docs}; copy the file in instead")
    target = text[len(f"{leak}: a symbolic link to ") : -len(f", outside {docs}; copy the file in instead")]
    assert str(secret).startswith(target.rstrip("…"))
    (docs / "leak.txt").unlink()
    (docs / "page.html").write_text("<script>pwn()</script>")
    with pytest.raises(ProbebookError, match=r"page\.html: only pages \(\.md\) and .* may sit under the sources"):
        build(paths, site=False)
    (docs / "page.html").unlink()
    (docs / "inside.txt").symlink_to(docs / "index.md")  # a link that stays inside the tree is fine
    build(paths, site=False)
    assert (paths.tree / "inside.txt").read_bytes() == (docs / "index.md").read_bytes()


def _page(body: str) -> bytes:
    # outside the article only what the theme's frame holds (render.site.frame): the sanitizer leaves it as it is
    return (
        '<html><body><div class="md-content"><article class="md-content__inner md-typeset">'
        f'{body}</article></div><footer class="md-footer"></footer></body></html>\n'
    ).encode()


def test_a_sweep_cleans_finished_pages_and_the_final_pass_the_rest(tmp_path: Path) -> None:
    done, writing = tmp_path / "done.html", tmp_path / "sub" / "writing.html"
    writing.parent.mkdir()
    done.write_bytes(_page('<p onclick="pwn()">kept <script>pwn()</script></p>'))
    writing.write_bytes(_page("<p>half")[:60])  # an engine still writing it: no closing </html> yet
    sweep = sanitize.BackgroundSanitizer(tmp_path)
    assert sweep.once() == 1
    assert done.read_bytes() == _page("<p>kept </p>") and sweep.left_as_cleaned(done)
    assert not sweep.left_as_cleaned(writing) and sweep.once() == 0  # nothing new is finished

    writing.write_bytes(_page('<img src="x" onerror="pwn()">'))  # the engine finished it after the last pass
    assert sanitize.clean_site(tmp_path, swept=sweep) == 1  # only the page the sweep did not clean
    assert writing.read_bytes() == _page('<img src="x" loading="lazy">')
    assert done.read_bytes() == _page("<p>kept </p>")
    assert [p.name for p in tmp_path.rglob("*") if p.name.endswith(".clean")] == []


def test_a_page_written_again_after_a_sweep_is_cleaned_by_the_final_pass(tmp_path: Path) -> None:
    page = tmp_path / "page.html"
    page.write_bytes(_page("<p>first</p>"))
    sweep = sanitize.BackgroundSanitizer(tmp_path)
    assert sweep.once() == 1
    page.write_bytes(_page("<p>second <script>pwn()</script></p>"))  # a plugin that writes pages again
    assert not sweep.left_as_cleaned(page)
    assert sanitize.clean_site(tmp_path, swept=sweep) == 1
    assert page.read_bytes() == _page("<p>second </p>")


def test_a_sweep_leaves_a_page_without_content_area_to_the_final_pass(tmp_path: Path) -> None:
    (tmp_path / "bare.html").write_bytes(b"<html><body><p>no article</p></body></html>\n")
    sweep = sanitize.BackgroundSanitizer(tmp_path)
    assert sweep.once() == 0
    with pytest.raises(sanitize.SanitizeError, match=re.escape("bare.html: no content area")):
        sanitize.clean_site(tmp_path, swept=sweep)


@pytest.mark.parametrize(
    ("config", "once"),
    [
        ("site_name: x\n", True),  # mkdocs' default plugins: search alone
        ("site_name: x\nplugins:\n  - search:\n      separator: x\n  - offline\n", True),
        ("site_name: x\nplugins: [material/search]\n", True),
        ("site_name: x\nplugins: [search, privacy]\n", False),  # rewrites pages after the build
        ("site_name: x\nhooks: [hooks.py]\n", False),
        ("site_name: x\nplugins: search\n", False),
    ],
)
def test_pages_are_swept_only_for_configs_that_write_each_page_once(tmp_path: Path, config: str, once: bool) -> None:
    from render.site.config import writes_pages_once

    path = tmp_path / "mkdocs.yml"
    path.write_text(config, encoding="utf-8")
    assert writes_pages_once(path) is once
