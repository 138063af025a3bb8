"""Sphinx configuration of pyframe's documentation site.

`make docs` builds it (tox -e docs): warnings are errors, every internal link
is checked (_ext/internal_links.py), and the examples on every page are run by
tests/test_docs_examples.py.  Pages are Markdown (MyST); the API reference is
made by sphinx-autoapi from the typed stub pyframe/_cframe.pyi and the
modules' docstrings, read without importing pyframe.
"""

from __future__ import annotations

import ast
import sys
from pathlib import Path

DOCS = Path(__file__).resolve().parent
ROOT = DOCS.parent
sys.path.insert(0, str(DOCS / "_ext"))


def _version() -> str:
    """pyframe.__version__, the one place the version is written."""
    tree = ast.parse((ROOT / "pyframe" / "__init__.py").read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(
            isinstance(target, ast.Name) and target.id == "__version__" for target in node.targets
        ):
            return ast.literal_eval(node.value)
    raise RuntimeError("pyframe/__init__.py has no __version__")


project = "pyframe"
author = "the pyframe authors"
copyright = "2026, the pyframe authors"
release = version = _version()

extensions = [
    "myst_parser",
    "sphinx.ext.autodoc",  # autoapi's autodoc-style directives build on it
    "autoapi.extension",
    "sourcelinks",
    "internal_links",
]

source_suffix = {".md": "markdown", ".rst": "restructuredtext"}
root_doc = "index"
exclude_patterns = ["_build", "README.md"]

# MyST: headings get anchors for [text](page.md#anchor) links.
myst_heading_anchors = 3
myst_enable_extensions = ["colon_fence", "deflist"]

# The reference is written by hand (docs/reference/), with autoapi's
# directives pulling each name's signature, types and docstring from the
# sources: the stub for the compiled module, the package for pyframe.dynamo.
autoapi_dirs = [str(ROOT / "pyframe")]
autoapi_file_patterns = ["*.pyi", "*.py"]
autoapi_ignore = ["*/cli/*", "*/__main__.py"]
autoapi_generate_api_docs = False
autoapi_add_toctree_entry = False
autoapi_options = ["members", "undoc-members", "imported-members"]
autoapi_member_order = "bysource"
autodoc_typehints = "signature"

# Every cross-reference must resolve, except to the standard library, whose
# inventory this offline build cannot fetch.
nitpicky = True
nitpick_ignore_regex = [
    (r"py:.*", r"(types|typing|collections\.abc|contextlib|weakref)\..*"),
    (r"py:.*", r"(Any|Final|Literal|TypeAlias|NoReturn)"),
    (r"py:class", r"_Sentinel"),  # the sentinels' private type; see the reference
]

html_theme = "furo"
html_title = f"pyframe {release}"
html_static_path: list[str] = []
html_copy_source = False
html_show_sourcelink = False
pygments_style = "friendly"
pygments_dark_style = "monokai"

# The type aliases the stub defines are documented under pyframe._cframe
# (they exist for type checkers only); signatures name them unqualified.
_ALIASES = ("Callback", "CallbackResult", "Guard", "SlotKind", "OnDrop", "DropReason", "Decision")


def _resolve_alias(app, env, node, contnode):
    """`Callback`, `pyframe.Callback` -> the entry of pyframe._cframe.Callback."""
    target = node.get("reftarget", "")
    name = target.rpartition(".")[2]
    if node.get("refdomain") != "py" or name not in _ALIASES:
        return None
    if target not in (name, f"pyframe.{name}", f"pyframe._cframe.{name}"):
        return None
    return env.get_domain("py").resolve_xref(
        env, node["refdoc"], app.builder, "data", f"pyframe._cframe.{name}", node, contnode
    )


def setup(app):
    app.connect("missing-reference", _resolve_alias)
