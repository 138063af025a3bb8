"""Which test files a run takes: files, directories and list files, sharded.

A directory stands for its test_*.py files (not recursive: PyTorch's
test/dynamo is flat, and its subdirectories hold helpers).  A list file
(any argument not ending in .py) names one path a line, relative to the
list file's directory, with # comments.  Files are named in the results by
their path relative to --root, the same on every machine.
"""

from __future__ import annotations

import csv
import hashlib
import os
import zlib
from dataclasses import dataclass


class SelectionError(Exception):
    """A path or list that names no test file."""


@dataclass(frozen=True)
class TestFile:
    path: str  # absolute
    name: str  # relative to the root: the key in the results
    sha: str  # of the file's content: a changed file is a new file
    commit: str  # where the file was taken from, or ""


def expand(arguments: list[str]) -> list[str]:
    """The absolute paths of the test files the arguments name, in order, once each."""
    paths: list[str] = []
    for argument in arguments:
        if os.path.isdir(argument):
            found = sorted(
                entry.path
                for entry in os.scandir(argument)
                if entry.is_file() and entry.name.startswith("test_") and entry.name.endswith(".py")
            )
            if not found:
                raise SelectionError(f"{argument}: a directory with no test_*.py file")
            paths += found
        elif argument.endswith(".py"):
            if not os.path.isfile(argument):
                raise SelectionError(f"{argument}: no such test file")
            paths.append(argument)
        elif os.path.isfile(argument):
            paths += expand(read_list(argument))
        else:
            raise SelectionError(f"{argument}: neither a test file, a directory nor a list file")
    unique: dict[str, None] = {}
    for path in paths:
        unique.setdefault(os.path.abspath(path), None)
    return list(unique)


def read_list(list_file: str) -> list[str]:
    base = os.path.dirname(os.path.abspath(list_file))
    entries = []
    with open(list_file) as handle:
        for line in handle:
            line = line.split("#", 1)[0].strip()
            if line:
                entries.append(os.path.join(base, line))
    if not entries:
        raise SelectionError(f"{list_file}: a list file that names no path")
    return entries


def read_manifest(manifest: str | None) -> dict[str, str]:
    """{path relative to the manifest's directory: commit} from a TSV whose first
    two columns are those (the fetchers' MANIFEST.tsv: path, commit, chars, status)."""
    if not manifest:
        return {}
    base = os.path.dirname(os.path.abspath(manifest))
    commits = {}
    with open(manifest, newline="") as handle:
        for row in csv.reader(handle, delimiter="\t"):
            if len(row) >= 2 and not row[0].startswith("#"):
                commits[os.path.normpath(os.path.join(base, row[0]))] = row[1]
    return commits


def parse_shard(text: str) -> tuple[int, int]:
    """ "I/N" -> (I, N), 1 <= I <= N."""
    try:
        index, count = (int(part) for part in text.split("/"))
    except ValueError:
        raise SelectionError(f"--shard {text!r}: expected I/N, as 1/4") from None
    if not 1 <= index <= count:
        raise SelectionError(f"--shard {text!r}: I must be between 1 and N")
    return index, count


def in_shard(name: str, shard: tuple[int, int]) -> bool:
    # By a hash of the name, not the position: a file stays in its shard
    # when files are added to the directory between sessions.
    index, count = shard
    return zlib.crc32(name.encode()) % count == index - 1


def select(
    arguments: list[str], root: str, manifest: str | None, shard: tuple[int, int] | None
) -> list[TestFile]:
    commits = read_manifest(manifest)
    files = []
    for path in expand(arguments):
        name = os.path.relpath(path, root)
        if shard and not in_shard(name, shard):
            continue
        with open(path, "rb") as handle:
            sha = hashlib.sha256(handle.read()).hexdigest()[:16]
        files.append(TestFile(path, name, sha, commits.get(os.path.normpath(path), "")))
    return files
