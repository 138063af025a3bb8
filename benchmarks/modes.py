"""The modes: each a context manager that installs its hook and removes it in
a finally block, so an exception (or ^C) in a workload never leaves a hook
behind for the next mode.  A new mode is one entry in MODES."""

import contextlib
import sys
import threading

import workloads

MONITORING_TOOL_NAME = "pyframe-bench"


class Mode:
    def __init__(self, name, group, describe, activate, unavailable=None, only=None, torch=False):
        self.name = name
        # "base", "floor-callback", "pyframe" or "other": the x-floor column is
        # shown for the middle two, whose cost over floor is the point.
        self.group = group
        self.describe = describe
        self._activate = activate
        self.unavailable = unavailable  # (env) -> reason or None
        self.only = only  # the workloads this mode runs, None for all
        self.torch = torch  # imports torch: loaded only when such a mode is chosen

    def runs(self, workload_name):
        return self.only is None or workload_name in self.only

    def reason(self, env):
        return self.unavailable(env) if self.unavailable else None

    def active(self, env):
        return self._activate(env)


@contextlib.contextmanager
def _none(env):
    yield


@contextlib.contextmanager
def _floor(env):
    env.floorhook.install()
    try:
        yield
    finally:
        env.floorhook.uninstall()


def _empty():
    pass


@contextlib.contextmanager
def _callback_floor(env):
    env.floorhook.install(_empty)
    try:
        yield
    finally:
        env.floorhook.uninstall()


def _pyframe_mode(make_callback):
    @contextlib.contextmanager
    def activate(env):
        pyframe = env.pyframe
        # SKIP decisions (and cached code) live on code objects and would
        # carry over into the next install: start and end each run clean.
        pyframe.reset()
        previous = pyframe.set_callback(make_callback(pyframe))
        try:
            yield
        finally:
            pyframe.set_callback(previous)
            pyframe.reset()

    return activate


@contextlib.contextmanager
def _pyframe_skip_specialized(env):
    pyframe = env.pyframe
    pyframe.set_specialization(True)
    try:
        with _pyframe_mode(_skip_callback)(env):
            yield
    finally:
        pyframe.set_specialization(False)


@contextlib.contextmanager
def _pyframe_skip_specialized_threads(env):
    # As pyframe-skip-spec, with a second thread that has the same callback
    # (and so the same cache) installed, waiting, while the workload runs.
    pyframe = env.pyframe
    with _pyframe_skip_specialized(env):
        callback = pyframe.get_callback()
        installed, done = threading.Event(), threading.Event()

        def other_thread():
            with pyframe.callback(callback):
                installed.set()
                done.wait()

        thread = threading.Thread(target=other_thread, daemon=True)
        thread.start()
        try:
            if not installed.wait(30):
                raise RuntimeError("pyframe-skip-spec-threads: the second thread did not start")
            yield
        finally:
            done.set()
            thread.join()


def _skip_callback(pyframe):
    skip = pyframe.SKIP

    def skip_every_code(frame):
        return skip

    return skip_every_code


def _observe_callback(pyframe):
    def observe(frame):
        _ = frame.f_locals

    return observe


def _cached_callback(pyframe):
    def compile_unguarded(frame):
        return pyframe.Compiled(frame.f_code.replace(), guard=None)

    return compile_unguarded


def _always_true(f_locals):
    return True


def _guarded_callback(pyframe):
    def compile_guarded(frame):
        return pyframe.Compiled(frame.f_code.replace(), guard=_always_true)

    return compile_guarded


def _on_py_start(code, instruction_offset):
    # Frame 0 is this callback; frame 1 the function that is starting.
    _ = sys._getframe(1).f_locals


@contextlib.contextmanager
def _monitoring(env):
    mon = sys.monitoring
    free = [t for t in (mon.PROFILER_ID, 3, 4, mon.OPTIMIZER_ID) if mon.get_tool(t) is None]
    if not free:
        raise RuntimeError("no free sys.monitoring tool id")
    tool = free[0]
    mon.use_tool_id(tool, MONITORING_TOOL_NAME)
    try:
        mon.register_callback(tool, mon.events.PY_START, _on_py_start)
        mon.set_events(tool, mon.events.PY_START)
        yield
    finally:
        # free_tool_id() alone leaves the events and callback in place on 3.12.
        try:
            mon.set_events(tool, mon.events.NO_EVENTS)
            mon.register_callback(tool, mon.events.PY_START, None)
        finally:
            mon.free_tool_id(tool)


def _trace_calls(frame, event, arg):
    if event == "call":
        _ = frame.f_locals
    return None  # no local tracing: only 'call' events


@contextlib.contextmanager
def _settrace(env):
    previous = sys.gettrace()
    sys.settrace(_trace_calls)
    try:
        yield
    finally:
        sys.settrace(previous)


@contextlib.contextmanager
def _dynamo_skip(env):
    hook = env.dynamo
    seen = set()
    skip_result = hook.skip_result

    def skip_every_code(frame, cache_entry=None, frame_state=None):
        code = frame.f_code
        seen.add(code)
        if skip_result is None:  # torch before ConvertFrameReturn
            hook.skip_code(code)
        return skip_result

    previous = hook.set_eval_frame(skip_every_code)
    try:
        yield
    finally:
        hook.set_eval_frame(previous)
        # Dynamo keeps SKIP on the code objects; forget it as pyframe.reset() does.
        if hook.reset_code is not None:
            for code in seen:
                hook.reset_code(code)


def _only_add_one(compile_callback, skip):
    """A callback that compiles workloads.add_one and skips every other code:
    what torch.compile(add_one) scopes Dynamo to.  Installed around the whole
    workload, Dynamo would otherwise trace the loop that calls add_one too."""
    target = workloads.add_one.__code__

    def callback(frame, *rest):
        if frame.f_code is target:
            return compile_callback(frame, *rest)
        return skip

    return callback


@contextlib.contextmanager
def _dynamo(env):
    import torch._dynamo

    hook = env.dynamo
    # torch.compile(fn, backend="eager")'s callback, used by Dynamo's own hook.
    callback = _only_add_one(torch._dynamo.optimize("eager").callback, hook.skip_result)
    previous = hook.set_eval_frame(callback)
    try:
        yield
    finally:
        hook.set_eval_frame(previous)


@contextlib.contextmanager
def _pyframe_dynamo(env):
    import torch._dynamo

    import pyframe.dynamo

    # The same callback, set the same way, with pyframe.dynamo in place of
    # Dynamo's C layer for the run (its uninstall() forgets what it compiled:
    # the warm-up compiles again).
    with pyframe.dynamo.installed():
        layer = torch._C._dynamo.eval_frame
        callback = _only_add_one(torch._dynamo.optimize("eager").callback, env.dynamo.skip_result)
        previous = layer.set_eval_frame(callback)
        try:
            yield
        finally:
            layer.set_eval_frame(previous)


def _needs_floorhook(env):
    return env.floorhook_reason


def _needs_pyframe(env):
    return env.pyframe_reason


def _needs_compiled(env):
    if env.pyframe is None:
        return env.pyframe_reason
    if not hasattr(env.pyframe, "Compiled"):
        return "pyframe %s has no pyframe.Compiled yet (callbacks cannot return code)" % getattr(
            env.pyframe, "__version__", "?"
        )
    return None


def _needs_specialization_mode(env):
    if env.pyframe is None:
        return env.pyframe_reason
    if sys.version_info < (3, 12) or not hasattr(env.pyframe, "set_specialization"):
        return "pyframe's specialization mode needs CPython 3.12 or later"
    return None


def _needs_dynamo(env):
    return env.dynamo_reason


def _needs_dynamo_and_pyframe(env):
    return env.dynamo_reason or env.pyframe_reason


def _needs_monitoring(env):
    # PEP 669 is CPython 3.12's; on 3.11 `settrace` is the stdlib way to see
    # every frame's entry locals.
    return None if hasattr(sys, "monitoring") else "no sys.monitoring before CPython 3.12"


MODES = [
    Mode("none", "base", "no hook", _none),
    Mode("floor", "base", "floorhook: pass-through PEP 523 hook", _floor, _needs_floorhook),
    Mode(
        "callback-floor",
        "floor-callback",
        "floorhook calling an empty Python function per new frame",
        _callback_floor,
        _needs_floorhook,
    ),
    Mode(
        "pyframe-skip",
        "pyframe",
        "pyframe, callback returns SKIP",
        _pyframe_mode(_skip_callback),
        _needs_pyframe,
    ),
    Mode(
        "pyframe-skip-spec",
        "pyframe",
        "pyframe in the specialization mode, callback returns SKIP",
        _pyframe_skip_specialized,
        _needs_specialization_mode,
    ),
    Mode(
        "pyframe-skip-spec-threads",
        "pyframe",
        "as pyframe-skip-spec, with a second thread of the same callback installed, waiting",
        _pyframe_skip_specialized_threads,
        _needs_specialization_mode,
    ),
    Mode(
        "pyframe-observe",
        "pyframe",
        "pyframe, callback reads f_locals",
        _pyframe_mode(_observe_callback),
        _needs_pyframe,
    ),
    Mode(
        "pyframe-cached",
        "pyframe",
        "pyframe, Compiled(code.replace(), guard=None)",
        _pyframe_mode(_cached_callback),
        _needs_compiled,
    ),
    Mode(
        "pyframe-guarded",
        "pyframe",
        "pyframe, Compiled(code.replace(), guard=<returns True>)",
        _pyframe_mode(_guarded_callback),
        _needs_compiled,
    ),
    Mode(
        "monitoring",
        "other",
        "sys.monitoring PY_START reading f_locals",
        _monitoring,
        _needs_monitoring,
    ),
    Mode("settrace", "other", "sys.settrace 'call' events reading f_locals", _settrace),
    Mode(
        "dynamo-skip",
        "other",
        "TorchDynamo eval-frame hook skipping each code",
        _dynamo_skip,
        _needs_dynamo,
        torch=True,
    ),
    # The timed run of the two compiled modes is warm calls of compiled code
    # (Dynamo's keeps it from one round to the next; pyframe-dynamo compiles
    # again in each warm-up).  benchmarks/bench_dynamo.py compares them
    # through torch.compile itself.
    Mode(
        "dynamo",
        "other",
        "torch.compile(add_one, backend='eager') in Dynamo's own hook",
        _dynamo,
        _needs_dynamo,
        torch=True,
        only=("tensor",),
    ),
    Mode(
        "pyframe-dynamo",
        "other",
        "torch.compile(add_one, backend='eager') on pyframe.dynamo.install()",
        _pyframe_dynamo,
        _needs_dynamo_and_pyframe,
        torch=True,
        only=("tensor",),
    ),
]
# The widest mode name: the reports' first column.
NAME_WIDTH = max(len(mode.name) for mode in MODES)

MODES_BY_NAME = {m.name: m for m in MODES}


class LeftoverHook(RuntimeError):
    """A mode's cleanup did not remove everything: later numbers would lie."""


def check_clean(env):
    left = []
    if env.floorhook is not None and env.floorhook.installed():
        left.append("floorhook")
    if env.pyframe is not None and (
        env.pyframe.hook_installed() or env.pyframe.get_callback() is not None
    ):
        left.append("pyframe")
    if env.pyframe is not None and getattr(env.pyframe, "specialization_enabled", bool)():
        left.append("pyframe's specialization mode")
    if sys.gettrace() is not None:
        left.append("sys.settrace")
    dynamo = env.dynamo
    if dynamo is not None and dynamo.get_eval_frame_callback is not None:
        if dynamo.get_eval_frame_callback() is not None:
            left.append("TorchDynamo callback")
    for tool in range(6 if hasattr(sys, "monitoring") else 0):
        if sys.monitoring.get_tool(tool) == MONITORING_TOOL_NAME:
            left.append("sys.monitoring tool %d" % tool)
    if left:
        raise LeftoverHook("hooks left installed after a mode: " + ", ".join(left))
