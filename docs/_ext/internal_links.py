"""Checks every internal link of the built HTML site.

Once the HTML is written, each href and src of every page that points inside
the site (no scheme, not mailto:) must name a file that was written, and a
#fragment must name an id on that page.  A broken one is a warning, so the
-W build CI runs fails on it.  This catches what Sphinx's own reference
checks cannot see: links in raw HTML, in the theme, to downloaded files, and
to headings' anchors through plain Markdown links.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from urllib.parse import unquote, urlsplit

from sphinx.application import Sphinx
from sphinx.util import logging

logger = logging.getLogger(__name__)


class _Page(HTMLParser):
    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.ids: set[str] = set()
        self.links: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        for name, value in attrs:
            if value is None:
                continue
            if name in ("id", "name"):
                self.ids.add(value)
            elif (name == "href" and tag in ("a", "link")) or (
                name == "src" and tag in ("img", "script")
            ):
                self.links.append(value)


def broken_links(outdir: Path) -> list[tuple[str, str, str]]:
    """(page, link, why) for every internal link of the site that leads nowhere."""
    pages: dict[Path, _Page] = {}
    for path in outdir.rglob("*.html"):
        page = _Page()
        page.feed(path.read_text(encoding="utf-8"))
        pages[path.resolve()] = page
    broken = []
    for path, page in sorted(pages.items()):
        for link in page.links:
            parts = urlsplit(link)
            if parts.scheme or parts.netloc or link.startswith(("mailto:", "javascript:")):
                continue
            target = (path.parent / unquote(parts.path)).resolve() if parts.path else path
            if target.is_dir():
                target = target / "index.html"
            page_name = str(path.relative_to(outdir.resolve()))
            if not target.exists():
                broken.append((page_name, link, "no such file"))
            elif parts.fragment and target.suffix == ".html":
                ids = pages[target].ids if target in pages else set()
                if unquote(parts.fragment) not in ids:
                    broken.append((page_name, link, "no such anchor"))
    return broken


def check(app: Sphinx, exception: Exception | None) -> None:
    if exception is not None or app.builder.format != "html":
        return
    outdir = Path(app.outdir)
    broken = broken_links(outdir)
    for page, link, why in broken:
        logger.warning("broken internal link in %s: %s (%s)", page, link, why)
    if not broken:
        logger.info(
            "internal links: every link of %d pages leads somewhere",
            len(list(outdir.rglob("*.html"))),
        )


def setup(app: Sphinx) -> dict[str, object]:
    app.connect("build-finished", check)
    return {"version": "1", "parallel_read_safe": True}
