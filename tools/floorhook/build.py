"""Build the floorhook test/benchmark extension (floorhook.c beside this file).

This directory is not a package: load this file by path, then build into a
directory of your choice and import from there::

    import importlib.util, sys
    spec = importlib.util.spec_from_file_location("floorhook_build", PATH_TO_THIS_FILE)
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    floorhook = builder.load(tmp_dir)        # or: sys.path.insert(0, builder.build(tmp_dir))

From a shell: ``python tools/floorhook/build.py DIR`` builds into DIR and
prints it.

The compiler is called directly with the running interpreter's sysconfig
(compiler, release CFLAGS, include dir, extension suffix), so a bare venv
without setuptools can build it too.
"""

import importlib
import os
import shlex
import subprocess
import sys
import sysconfig
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE = os.path.join(HERE, "floorhook.c")
MODULE = "floorhook"


def extension_path(target_dir):
    """Where build() puts the module for the running interpreter.

    The name carries the ABI tag (e.g. .cpython-312-x86_64-linux-gnu.so), so
    3.12 and 3.13 builds can share one target_dir.
    """
    return os.path.join(target_dir, MODULE + sysconfig.get_config_var("EXT_SUFFIX"))


def _up_to_date(target):
    # The builder counts as a source too: a change of flags here must rebuild.
    try:
        built = os.stat(target).st_mtime_ns
    except FileNotFoundError:
        return False
    newest_source = max(os.stat(p).st_mtime_ns for p in (SOURCE, os.path.abspath(__file__)))
    return built > newest_source


def _command(output):
    config = sysconfig.get_config_var
    # LDSHARED is the compiler driver with the platform's flags for a loadable
    # module ("gcc -shared ..." on Linux, "-bundle -undefined dynamic_lookup"
    # on macOS); CC from the environment wins, as with setuptools.
    ldshared = shlex.split(config("LDSHARED"))
    if os.environ.get("CC"):
        ldshared[:1] = shlex.split(os.environ["CC"])
    return [
        *ldshared,
        *shlex.split(config("CFLAGS") or ""),
        *shlex.split(config("CCSHARED") or ""),
        "-std=gnu11",
        "-Wextra",
        "-Wno-unused-parameter",
        "-I" + sysconfig.get_paths()["include"],
        SOURCE,
        "-o",
        output,
    ]


def build(target_dir):
    """Compile floorhook into target_dir unless an up-to-date build is there.

    Returns target_dir, ready for sys.path.  Raises RuntimeError with the
    compiler's output if compiling fails.
    """
    target_dir = os.path.abspath(os.fspath(target_dir))
    os.makedirs(target_dir, exist_ok=True)
    target = extension_path(target_dir)
    if _up_to_date(target):
        return target_dir
    # Compile to a private name and rename: parallel test workers building
    # into the same directory never import a half-written file.
    fd, partial = tempfile.mkstemp(prefix=".floorhook-", suffix=".so", dir=target_dir)
    os.close(fd)
    try:
        command = _command(partial)
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(
                "building floorhook failed:\n$ %s\n%s%s"
                % (shlex.join(command), done.stdout, done.stderr)
            )
        # mkstemp made it private (0600); make it an ordinary module file.
        os.chmod(partial, 0o755)
        os.replace(partial, target)
    finally:
        if os.path.exists(partial):
            os.unlink(partial)
    return target_dir


def load(target_dir):
    """build(target_dir), then import floorhook from there and return it."""
    path = build(target_dir)
    if path not in sys.path:
        sys.path.insert(0, path)
    importlib.invalidate_caches()
    return importlib.import_module(MODULE)


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python tools/floorhook/build.py TARGET_DIR")
    print(build(sys.argv[1]))
