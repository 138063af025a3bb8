"""The examples of README.md and of the documentation site (docs/), run.

Every example on a page is run, in page order, against the installed pyframe,
on every CPython the tox matrix runs, so the documentation cannot go stale:

- ```pycon blocks are doctests (stdlib doctest, ELLIPSIS and
  NORMALIZE_WHITESPACE on, so long output may be wrapped);
- ```python blocks are run as they are;
- a ```{code-block} python with `:caption: NAME` is the file NAME, written
  into the page's working directory for the console blocks that use it;
- ```console blocks are shell sessions: each `$ command` runs with bash in the
  page's working directory, `python` and `pyframe` being this interpreter's,
  and its output (stdout and stderr) must be the lines that follow it.  The
  working directory is shown as /home/me/shop.  Where a `locals -i` command
  has no input of its own, the commands typed at its `(pyframe) ` prompts
  (`(pyframe: THREAD) ` in a threaded program) are its input.  Thread ids
  (`thread "NAME" ID` in a report, `"thread_id": ID` in JSON) differ between
  runs: any ID matches the one shown.

The python, pycon blocks and the files of a page share one namespace, as a
reader's session would.  A MyST comment line right before a block,
`% example: python>=3.12` (or `<3.15`...), runs it only on those versions;
the pages say why.  Also checked: every public name has a reference entry
followed by an example.
"""

from __future__ import annotations

import ast
import doctest
import io
import itertools
import operator
import os
import re
import subprocess
import sys
import sysconfig
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

import pytest

import pyframe

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
SHOWN_DIR = "/home/me/shop"  # the working directory, as the console examples show it
TIMEOUT = 60


@dataclass
class Block:
    path: Path
    line: int  # of the opening fence, 1-based
    kind: str  # "pycon", "python", "file", "console"
    text: str
    caption: str | None = None
    requires: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        return f"{self.path.relative_to(ROOT)}:{self.line}"


_FENCE = re.compile(r"^(?P<fence>`{3,})(?P<info>[^`]*)$")
_MARKER = re.compile(r"^%\s*example:\s*(?P<conditions>.+)$")
_CONDITION = re.compile(r"^python\s*(?P<op>>=|<)\s*(?P<version>3\.\d+)$")


def blocks_of(path: Path, text: str | None = None) -> list[Block]:
    """The examples of a page (`text`, or the file's)."""
    if text is None:
        text = path.read_text(encoding="utf-8")
    lines = text.splitlines()
    blocks = []
    index = 0
    while index < len(lines):
        match = _FENCE.match(lines[index])
        if not match:
            index += 1
            continue
        fence, info = match["fence"], match["info"].strip()
        end = next(i for i in range(index + 1, len(lines)) if lines[i] == fence)
        body = lines[index + 1 : end]
        requires = []
        before = index - 1
        while before >= 0 and _MARKER.match(lines[before]):
            requires += [c.strip() for c in _MARKER.match(lines[before])["conditions"].split(",")]
            before -= 1
        kind, caption = None, None
        if info in ("pycon", "python", "console"):
            kind = info
        elif info.startswith("{code-block}") and info.split()[1:] == ["python"]:
            options = [line for line in body if line.startswith(":")]
            body = body[len(options) :]
            captions = [o.split(None, 1)[1] for o in options if o.startswith(":caption:")]
            if captions:
                kind, caption = "file", captions[0]
            else:
                kind = "python"
            if body and body[0] == "":
                body = body[1:]
        if kind is not None:
            text = "\n".join(body) + "\n"
            blocks.append(Block(path, index + 1, kind, text, caption, requires))
        index = end + 1
    return blocks


def applies(block: Block) -> bool:
    for condition in block.requires:
        match = _CONDITION.match(condition)
        if not match:
            pytest.fail(f"{block.where}: unknown example condition {condition!r}")
        wanted = tuple(int(part) for part in match["version"].split("."))
        compare = operator.ge if match["op"] == ">=" else operator.lt
        if not compare(sys.version_info[:2], wanted):
            return False
    return True


def pages() -> list[Path]:
    """README.md and the documentation's pages that have examples."""
    found = [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]
    return [p for p in found if "_build" not in p.parts and blocks_of(p)]


# ---- running the blocks ----------------------------------------------------------


def run_pycon(block: Block, namespace: dict) -> None:
    parser = doctest.DocTestParser()
    test = parser.get_doctest(block.text, namespace, block.where, str(block.path), block.line)
    output = io.StringIO()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    runner.run(test, out=output.write, clear_globs=False)
    namespace.update(test.globs)  # DocTest ran in a copy
    if runner.failures:
        pytest.fail(f"{block.where}: the example's output differs\n{output.getvalue()}")


def run_python(block: Block, namespace: dict) -> None:
    # Line numbers in a traceback are the page's.
    code = compile("\n" * block.line + block.text, str(block.path), "exec")
    exec(code, namespace)


def _shell_env() -> dict[str, str]:
    bins = {os.path.dirname(sys.executable), sysconfig.get_path("scripts")}
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([*sorted(bins), env.get("PATH", "")])
    env.update(PYTHONDONTWRITEBYTECODE="1", TERM="dumb", PYTHON_COLORS="0", NO_COLOR="1")
    env.pop("PYTHONSTARTUP", None)
    return env


def sessions(text: str) -> list[tuple[str, list[str]]]:
    """[(command, expected output lines)] of a console block."""
    result: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        if line.startswith("$ "):
            result.append((line[2:], []))
        elif result:
            result[-1][1].append(line)
        else:
            raise AssertionError(f"console block output before any `$ ` command: {line!r}")
    return result


# `(pyframe) `, or `(pyframe: Thread-2 (worker)) ` once the program has started threads.
_PROMPT = re.compile(r"\(pyframe(?:: .*?)?\) ")
_THREAD_ID = re.compile(r'(thread "(?:[^"\\]|\\.)*" |"thread_id": )\d+')


def _any_thread_id(lines: list[str]) -> list[str]:
    return [_THREAD_ID.sub(r"\1<thread id>", line) for line in lines]


def run_console(block: Block, workdir: Path) -> None:
    python = os.path.basename(sys.executable)
    for command, expected in sessions(block.text):
        typed = None
        if re.search(r"\blocals\b.* -i\b", command) and not re.search(r"\s\|\s", command):
            # What a user typed at the prompts of a terminal session.
            prompts = [_PROMPT.match(line) for line in expected]
            typed = "".join(
                line[prompt.end() :] + "\n"
                for line, prompt in zip(expected, prompts, strict=True)
                if prompt is not None and line != prompt.group()
            )
        # `python` is this interpreter, whatever its name.
        shell_command = re.sub(r"(?<![\w/.-])python(?= )", python, command)
        done = subprocess.run(
            ["bash", "-c", shell_command + " 2>&1"],
            cwd=workdir,
            input=typed or "",
            capture_output=True,
            text=True,
            timeout=TIMEOUT,
            env=_shell_env(),
        )
        got = done.stdout.replace(str(workdir), SHOWN_DIR).splitlines()
        got, expected = _any_thread_id(got), _any_thread_id(expected)
        if got != expected:
            diff = "\n".join(
                f"{'  ' if a == b else '! '}{b!r:60}  (got {a!r})"
                for a, b in itertools.zip_longest(got, expected, fillvalue="")
            )
            pytest.fail(f"{block.where}: `$ {command}` printed otherwise:\n{diff}")


@pytest.mark.parametrize("page", pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_examples(page: Path, tmp_path: Path) -> None:
    blocks = blocks_of(page)
    namespace: dict = {"__name__": "__docs__"}
    workdir = tmp_path / "shop"
    workdir.mkdir()
    ran = 0
    for block in blocks:
        if not applies(block):
            continue
        ran += 1
        try:
            if block.kind == "pycon":
                run_pycon(block, namespace)
            elif block.kind == "python":
                run_python(block, namespace)
            elif block.kind == "file":
                (workdir / block.caption).write_text(block.text, encoding="utf-8")
            else:
                run_console(block, workdir)
        finally:
            left = pyframe.get_callback()
            pyframe.set_callback(None)
        assert left is None, f"{block.where}: the example left a callback installed"
    if not ran:
        pytest.skip("no example of this page runs on this version")


def test_blocks_are_found() -> None:
    """The parser sees what a page shows (a fence it skipped would go untested)."""
    page = textwrap.dedent(
        """\
        ```pycon
        >>> 1 + 1
        2
        ```

        % example: python>=3.12
        ```console
        $ echo hi
        hi
        ```

        ```{code-block} python
        :caption: shop.py

        print("x")
        ```
        """
    )
    blocks = [(b.kind, b.caption, b.requires) for b in blocks_of(DOCS / "probe.md", page)]
    assert blocks == [
        ("pycon", None, []),
        ("console", None, ["python>=3.12"]),
        ("file", "shop.py", []),
    ]


# ---- every public name has a reference entry with an example -----------------------

_ENTRY = re.compile(r"^\.\. autoapi(?P<kind>\w+):: (?P<name>\S+)$")


def reference_entries() -> dict[str, tuple[Path, int]]:
    """Names documented by the reference pages' autoapi directives -> where."""
    entries = {}
    for path in sorted((DOCS / "reference").glob("*.md")):
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            match = _ENTRY.match(line.strip())
            if match:
                entries[match["name"]] = (path, number)
    return entries


def public_names() -> list[str]:
    names = [f"pyframe.{name}" for name in pyframe.__all__]
    names += [f"pyframe.Frame.{n}" for n in dir(pyframe.Frame) if not n.startswith("_")]
    # pyframe.dynamo imports torch: read its __all__ without importing it.
    dynamo = Path(pyframe.__file__).parent / "dynamo" / "__init__.py"
    source = dynamo.read_text(encoding="utf-8")
    for node in ast.parse(source).body:
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets
        ):
            names += [f"pyframe.dynamo.{name}" for name in ast.literal_eval(node.value)]
    return names


def test_every_public_name_has_a_reference_entry_with_an_example() -> None:
    entries = reference_entries()
    missing = [name for name in public_names() if name not in entries]
    assert not missing, f"no reference entry (docs/reference/) for {missing}"
    for name in public_names():
        path, number = entries[name]
        # The entry's example: the first block after it, before the next entry.
        lines = path.read_text(encoding="utf-8").splitlines()[number:]
        following = []
        for line in lines:
            if _ENTRY.match(line.strip()):
                break
            following.append(line)
        text = "\n".join(following)
        assert re.search(r"^```(pycon|python|console|\{literalinclude\}.*)$", text, re.M), (
            f"{path.relative_to(ROOT)}:{number}: {name} has no example"
        )
