"""The {source} role: links from the documentation into pyframe's code.

    {source}`cframe/localsplus.c`                  the file
    {source}`cframe/localsplus.c:entry_value`      the line that defines entry_value
    {source}`how it reads slots <cframe/compat.h:compat_frame_slot>`   with a title

The site carries the code it links to: each file named by a {source} role gets
a page of its own under _code/ (highlighted, every line numbered and
anchored), as sphinx.ext.viewcode does for Python modules, so the links work
offline and show the code the site was built from.  A path that is not in the
repository, or a name that no line of the file defines, is a warning (an error
in the -W build CI runs): the links cannot go stale.
"""

from __future__ import annotations

import html
import re
from pathlib import Path

from docutils import nodes
from pygments import highlight
from pygments.formatters import HtmlFormatter
from pygments.lexers import get_lexer_for_filename
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxRole

logger = logging.getLogger(__name__)

ROOT = Path(__file__).resolve().parents[2]
PAGE_PREFIX = "_code/"
_TITLED = re.compile(r"^(?P<title>.+?)\s*<(?P<target>[^<>]+)>$", re.DOTALL)


def definition_line(path: Path, name: str) -> int | None:
    """The first line that defines `name`: a C function or macro (the name at
    the start of a line, or after #define), a struct, or a Python/Cython def
    or class."""
    patterns = [
        rf"^{re.escape(name)}\s*\(",  # C: the return type is on the line above
        rf"^#\s*define\s+{re.escape(name)}\b",
        rf"^(typedef\s+)?(struct|enum)\s+{re.escape(name)}\b",
        rf"^\s*(async\s+)?(def|class|cdef\s+class|cdef)\s+(\w+\s+)*{re.escape(name)}\b",
        rf"^\}}\s*{re.escape(name)}\s*;",  # typedef struct {...} name;
    ]
    lines = path.read_text(encoding="utf-8").splitlines()
    for pattern in patterns:
        regex = re.compile(pattern)
        for number, line in enumerate(lines, start=1):
            if regex.search(line):
                return number
    return None


class source_link(nodes.General, nodes.Inline, nodes.Element):
    """A link to a code page, resolved once the builder is known."""


class SourceRole(SphinxRole):
    def run(self) -> tuple[list[nodes.Node], list[nodes.system_message]]:
        text = self.text.strip()
        match = _TITLED.match(text)
        title, target = (match["title"], match["target"]) if match else (None, text)
        path_text, _, name = target.partition(":")
        path = ROOT / path_text
        if not path.is_file() or ROOT not in path.resolve().parents:
            logger.warning(
                "{source}: no file %r in the repository", path_text, location=self.get_location()
            )
            return [nodes.literal(text, title or target)], []
        line = None
        if name:
            line = definition_line(path, name)
            if line is None:
                logger.warning(
                    "{source}: nothing in %s defines %r",
                    path_text,
                    name,
                    location=self.get_location(),
                )
                return [nodes.literal(text, title or target)], []
        linked = self.env.domaindata.setdefault("sourcelinks", {})
        linked.setdefault(self.env.docname, set()).add(path_text)
        node = source_link(path=path_text, line=line)
        node += nodes.literal(
            text, title or (f"{name}()" if name and path.suffix in (".c", ".h") else target)
        )
        return [node], []


def resolve_links(app: Sphinx, doctree: nodes.document, docname: str) -> None:
    for node in list(doctree.findall(source_link)):
        if app.builder.format != "html":
            node.replace_self(node.children)
            continue
        uri = app.builder.get_relative_uri(docname, PAGE_PREFIX + node["path"])
        if node["line"] is not None:
            uri += f"#L-{node['line']}"
        reference = nodes.reference("", "", internal=True, refuri=uri)
        reference += node.children
        node.replace_self(reference)


def code_pages(app: Sphinx):
    files = set().union(*app.env.domaindata.get("sourcelinks", {}).values())
    formatter = HtmlFormatter(linenos="inline", lineanchors="L", anchorlinenos=True)
    for path_text in sorted(files):
        path = ROOT / path_text
        lexer = get_lexer_for_filename(path.name)
        if path.suffix in (".pyx", ".pxi", ".pxd"):
            from pygments.lexers import CythonLexer

            lexer = CythonLexer()
        body = (
            f"<h1>{html.escape(path_text)}</h1>\n"
            f"<p>The file as this site was built from it.</p>\n"
            + highlight(path.read_text(encoding="utf-8"), lexer, formatter)
        )
        yield PAGE_PREFIX + path_text, {"title": path_text, "body": body}, "page.html"


# The files each page links to, kept in the environment between builds.
def purge_doc(app: Sphinx, env, docname: str) -> None:
    env.domaindata.get("sourcelinks", {}).pop(docname, None)


def merge_env(app: Sphinx, env, docnames, other) -> None:  # parallel reads
    linked = env.domaindata.setdefault("sourcelinks", {})
    for docname in docnames:
        if docname in other.domaindata.get("sourcelinks", {}):
            linked[docname] = other.domaindata["sourcelinks"][docname]


def setup(app: Sphinx) -> dict[str, object]:
    app.add_role("source", SourceRole())
    app.add_node(source_link)
    app.connect("doctree-resolved", resolve_links)
    app.connect("html-collect-pages", code_pages)
    app.connect("env-purge-doc", purge_doc)
    app.connect("env-merge-info", merge_env)
    return {"version": "1", "parallel_read_safe": True, "env_version": 1}
