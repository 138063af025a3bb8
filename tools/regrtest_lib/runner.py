"""Running ``python -m test`` in each mode, and again where a run stopped.

Owns the modes' set-up (the sitecustomize copied from tools/regrtest_site
into a temporary directory put first on PYTHONPATH, the floorhook and
--callback c extensions built beside it, the check that each mode's hook
really is installed), the regrtest processes (output streamed to
a log and parsed as it comes, a watchdog should regrtest itself hang), the
continuations of a test file whose worker crashed or timed out with a test
case running, and the rechecks of offending ids alone.
"""

import glob
import hashlib
import importlib.util
import os
import shlex
import shutil
import signal
import subprocess
import sys
import sysconfig
import threading
import time

from .results import PSEUDO_ID_RE, ModeRun, Outcome, base_id, module_of

TOOLS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SITE_SOURCES = os.path.join(TOOLS, "regrtest_site")
FLOORHOOK_BUILDER = os.path.join(TOOLS, "floorhook", "build.py")

MODES = ("none", "floorhook", "pyframe", "locals", "spec")
REFERENCE_MODES = ("none", "floorhook")
# The runs with a pyframe callback, each compared with the reference runs:
# "pyframe" runs a cached copy of every code object, "locals" reads every
# frame's f_locals and lets the frame run, "spec" skips half of all code
# objects with the specialization mode on (CPython 3.12+) and reads the
# other half's f_locals.  All load
# regrtest_site/pyframe/sitecustomize.py; CALLBACK_ENV says which callback.
PYFRAME_MODES = ("pyframe", "locals", "spec")
# The runs allowlist.toml entries may name: pyframe (a copy of the code) and
# spec (decisions in code-extra storage, the specialization mode).  The locals
# run changes and stores nothing, so nothing may fail in it.
ALLOWLISTED_MODES = ("pyframe", "spec")
THREADS_ENV = "PYFRAME_REGRTEST_THREADS"
CALLBACK_ENV = "PYFRAME_REGRTEST_CALLBACK"
# How many times a test file that crashed or timed out is run again without
# the test cases that did it.
MAX_CONTINUATIONS = 3


def log(message):
    print(message, file=sys.stderr, flush=True)


def clean_log_dir(log_dir):
    """Remove the logs an earlier run left in a reused --log-dir."""
    for pattern in (*(mode + ".log" for mode in MODES), "continue*-*.log", "recheck-*.log"):
        for path in glob.glob(os.path.join(log_dir, pattern)):
            os.unlink(path)


def load_floorhook_builder():
    spec = importlib.util.spec_from_file_location("floorhook_build", FLOORHOOK_BUILDER)
    builder = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(builder)
    return builder


def build_extension(source, module, target_dir):
    """Compile a one-file extension with the running interpreter's sysconfig
    (as tools/floorhook/build.py does; CC from the environment wins)."""
    config = sysconfig.get_config_var
    compiler = shlex.split(config("LDSHARED"))
    if os.environ.get("CC"):
        compiler[:1] = shlex.split(os.environ["CC"])
    command = [
        *compiler,
        *shlex.split(config("CFLAGS") or ""),
        *shlex.split(config("CCSHARED") or ""),
        "-I" + sysconfig.get_paths()["include"],
        source,
        "-o",
        os.path.join(target_dir, module + config("EXT_SUFFIX")),
    ]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(
            "building %s failed:\n$ %s\n%s%s"
            % (module, shlex.join(command), done.stdout, done.stderr)
        )


def prepare_sites(tmp, callback):
    """{mode: directory to put first on PYTHONPATH, or None}."""
    sites = {"none": None}
    for mode in ("floorhook", *PYFRAME_MODES):
        site = os.path.join(tmp, mode)
        os.makedirs(site)
        source = "pyframe" if mode in PYFRAME_MODES else mode
        shutil.copy(os.path.join(SITE_SOURCES, source, "sitecustomize.py"), site)
        sites[mode] = site
    load_floorhook_builder().build(sites["floorhook"])
    if callback == "c":
        source = os.path.join(SITE_SOURCES, "freshcopy.c")
        build_extension(source, "regrtest_freshcopy", sites["pyframe"])
    return sites


def mode_env(mode, site, threads, callback):
    env = dict(os.environ)
    env.pop(THREADS_ENV, None)
    env.pop(CALLBACK_ENV, None)
    if site is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [site, env.get("PYTHONPATH")]))
        if threads:
            env[THREADS_ENV] = "1"
        if mode == "pyframe":
            env[CALLBACK_ENV] = callback
        elif mode in ("locals", "spec"):
            env[CALLBACK_ENV] = mode
    return env


PREFLIGHT = {
    "none": "import sys; assert 'sitecustomize' not in sys.modules; print('no hook')",
    "floorhook": (
        "import sitecustomize, floorhook; assert floorhook.installed(); "
        "print('floorhook installed by', sitecustomize.__file__)"
    ),
    "pyframe": (
        "import sitecustomize, pyframe; "
        "assert pyframe.hook_installed() and pyframe.get_callback() is not None; "
        "f = lambda: 1; f(); [(code, guard, hits)] = pyframe.cache_entries(f.__code__); "
        "assert code is not f.__code__ and code == f.__code__; "
        "print('pyframe', pyframe.__version__, 'from', pyframe.__file__, "
        "'callback', pyframe.get_callback(), 'installed by', sitecustomize.__file__)"
    ),
    "locals": (
        "import sitecustomize, pyframe; "
        "assert pyframe.hook_installed(); "
        "assert pyframe.get_callback().__name__ == '_regrtest_read_f_locals'; "
        "f = lambda: 1; f(); assert pyframe.cache_entries(f.__code__) == []; "
        "print('pyframe', pyframe.__version__, 'from', pyframe.__file__, "
        "'callback', pyframe.get_callback(), 'installed by', sitecustomize.__file__)"
    ),
    "spec": (
        "import sitecustomize, pyframe; "
        "assert pyframe.specialization_enabled(); "
        "assert pyframe.get_callback().__name__ == '_regrtest_skip_half'; "
        "print('pyframe', pyframe.__version__, 'from', pyframe.__file__, "
        "'callback', pyframe.get_callback(), 'in the specialization mode, installed by', "
        "sitecustomize.__file__)"
    ),
}


THREAD_PREFLIGHT = (
    "; import threading; seen = []; "
    "t = threading.Thread(target=lambda: seen.append(pyframe.get_callback())); "
    "t.start(); t.join(); assert seen[0] is pyframe.get_callback(), seen; "
    "print('and in threading.Thread (--threads)')"
)


def preflight(mode, env, cwd, threads):
    """Check the mode's sitecustomize really installs its hook (a failing
    sitecustomize only prints a warning and the run would go on hook-less)."""
    check = PREFLIGHT[mode] + (THREAD_PREFLIGHT if threads and mode in PYFRAME_MODES else "")
    done = subprocess.run(
        [sys.executable, "-c", check],
        env=env,
        cwd=cwd,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0 or done.stderr.strip():
        raise RuntimeError(
            "%s: the sitecustomize check failed (exit %d):\n%s%s"
            % (mode, done.returncode, done.stdout, done.stderr)
        )
    return done.stdout.strip()


def run_regrtest(label, regrtest_args, env, cwd, log_path, deadline, tests):
    """Run ``python -m test`` with `regrtest_args`; stream its output into
    `log_path`, progress lines to stderr.  Returns (Outcome, exit code,
    seconds)."""
    outcome = Outcome(tests)
    command = [sys.executable, "-m", "test", *regrtest_args]
    start = time.monotonic()
    with open(log_path, "w", encoding="utf-8") as log_file:
        log_file.write("$ %s\n" % shlex.join(command))
        log_file.flush()
        process = subprocess.Popen(
            command,
            env=env,
            cwd=cwd,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL,
            text=True,
            errors="replace",
            start_new_session=True,
        )
        watchdog = threading.Timer(deadline, stop, (label, process, deadline))
        watchdog.daemon = True
        watchdog.start()
        try:
            for line in process.stdout:
                log_file.write(line)
                progress = outcome.feed(line)
                if progress is not None:
                    log("[%s] %s" % (label, progress))
            returncode = process.wait()
        except BaseException:
            stop(label, process, None)
            raise
        finally:
            watchdog.cancel()
    return outcome, returncode, time.monotonic() - start


def stop(label, process, deadline):
    """Interrupt regrtest (it then stops its workers), kill it if it lingers."""
    if process.poll() is not None:
        return
    if deadline is not None:
        log("[%s] still running after %d s: interrupting it" % (label, deadline))
    try:
        os.killpg(process.pid, signal.SIGINT)
        process.wait(60)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass


def single_file_args(test, timeout, extra, match=(), ignore=()):
    """regrtest arguments to run one test file in one worker process (so a
    crash ends the worker, not regrtest)."""
    args = ["-v", "-j1", "--timeout", str(timeout), *extra]
    for test_id in match:
        args += ["-m", test_id]
    for test_id in ignore:
        args += ["-i", test_id]
    return [*args, test]


def run_mode(mode, regrtest_args, env, cwd, log_dir, deadline, tests, timeout, extra):
    """The mode's main run, then each test file that crashed or timed out with
    a test case running is run again without the cases that stopped it."""
    log("[%s] starting: %s -m test %s" % (mode, sys.executable, shlex.join(regrtest_args)))
    log_path = os.path.join(log_dir, mode + ".log")
    outcome, returncode, seconds = run_regrtest(
        mode, regrtest_args, env, cwd, log_path, deadline, tests
    )
    run = ModeRun(mode, outcome, returncode, seconds, log_path)
    for test in tests:
        ignored = []
        for round_ in range(1, MAX_CONTINUATIONS + 1):
            stopped = [c for c in run.last(test).stopped_cases(test) if c not in ignored]
            if not stopped:
                break
            ignored += stopped
            label = "%s %s, without %s" % (mode, test, " ".join(stopped))
            log_path = os.path.join(log_dir, "continue%d-%s-%s.log" % (round_, mode, test))
            args = single_file_args(test, timeout, extra, ignore=ignored)
            segment, _, more = run_regrtest(
                label, args, env, cwd, log_path, timeout * 2 + 120, [test]
            )
            run.segments.append(segment)
            run.logs.append(log_path)
            run.seconds += more
            run.continued[test] = list(ignored)
    failures = run.failures()
    log(
        "[%s] done in %.0f s: exit %d, %d failing test ids, %s"
        % (mode, run.seconds, run.returncode, len(failures), run.main.totals)
    )
    return run


def recheck(mode, offending, envs, cwd, log_dir, timeout, extra):
    """Run each of `mode`'s offending ids again, alone (its test file with -m
    for the test), under floorhook and `mode`.  Returns {id: {mode:
    "fail"|"pass"}}."""
    by_file = {}
    for test_id in offending:
        by_file.setdefault(module_of(test_id), set()).add(test_id)
    verdicts = {}
    for test, ids in sorted(by_file.items()):
        match = ()
        if not any(PSEUDO_ID_RE.match(t) and base_id(t) == test for t in ids):
            match = sorted({base_id(t) for t in ids})
        args = single_file_args(test, timeout, extra, match=match)
        for which in ("floorhook", mode):
            label = "recheck %s %s" % (which, test)
            name = which if which == mode else "%s-for-%s" % (which, mode)
            log_path = os.path.join(log_dir, "recheck-%s-%s.log" % (name, test))
            outcome, _, _ = run_regrtest(
                label, args, envs[which], cwd, log_path, timeout * 2 + 120, [test]
            )
            failed = outcome.failures()
            for test_id in ids:
                verdict = "fail" if test_id in failed else "pass"
                verdicts.setdefault(test_id, {})[which] = verdict
    return verdicts


def extension_digest():
    """sha256 of the pyframe extension this interpreter imports (the tree may
    be rebuilt while the run goes on: the report says if it was)."""
    try:
        spec = importlib.util.find_spec("pyframe._cframe")
    except ImportError:
        spec = None
    if spec is None or not spec.origin:
        return None, None
    with open(spec.origin, "rb") as f:
        return spec.origin, hashlib.sha256(f.read()).hexdigest()[:16]
