"""What the modes need: the hook providers, each loaded once or kept with the
reason it is missing, so that one absent tool (a compiler for floorhook, torch)
leaves the other modes running."""

import importlib.util
import os
import warnings

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


class Env:
    """The hook providers the modes use, each either loaded or with a reason."""

    def __init__(self, build_dir, want_torch):
        self.floorhook, self.floorhook_reason = _load_floorhook(build_dir)
        self.pyframe, self.pyframe_reason = _load_pyframe()
        self.dynamo, self.dynamo_reason = (None, "not requested")
        if want_torch:
            self.dynamo, self.dynamo_reason = _load_dynamo()


def _load_floorhook(build_dir):
    path = os.path.join(REPO, "tools", "floorhook", "build.py")
    try:
        spec = importlib.util.spec_from_file_location("_floorhook_build", path)
        builder = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(builder)
        return builder.load(build_dir), None
    except Exception as exc:  # a missing compiler must not stop the other modes
        return None, "floorhook could not be built: %s: %s" % (type(exc).__name__, exc)


def _load_pyframe():
    try:
        import pyframe
    except ImportError as exc:
        return None, "pyframe is not importable here: %s" % exc
    return pyframe, None


def pyframe_build_kind(pyframe):
    """'debug' if the extension has assert()s compiled in, else 'release'.

    A debug build (PYFRAME_DEBUG=1) keeps assert() and so links glibc's
    __assert_fail; release builds compile asserts out.  Only a heuristic (and
    only for glibc), but it catches the usual mistake of timing the dev venv.
    """
    from pyframe import _cframe

    try:
        with open(_cframe.__file__, "rb") as f:
            data = f.read()
    except OSError:
        return "unknown"
    return "debug" if b"__assert_fail" in data else "release"


class DynamoHook:
    """TorchDynamo's PEP 523 hook, driven directly with a callback that skips.

    The callback protocol (torch/csrc/dynamo/eval_frame_cpp.cpp, torch >= 2.6)
    is callback(frame, cache_entry, frame_state) -> an object with
    frame_exec_strategy, apply_to_code and guarded_code; the default
    torch._dynamo.types.ConvertFrameReturn() means "run this frame as is and
    skip this code from now on", stored on the code object like pyframe.SKIP.
    Older torch read None as "no compiled code" and needed skip_code(code).
    """

    def __init__(self, torch):
        from torch._C._dynamo import eval_frame

        self.version = torch.__version__
        self.set_eval_frame = eval_frame.set_eval_frame
        self.get_eval_frame_callback = getattr(eval_frame, "get_eval_frame_callback", None)
        self.reset_code = getattr(eval_frame, "reset_code", None)
        self.skip_code = getattr(eval_frame, "skip_code", None)
        try:
            from torch._dynamo.types import ConvertFrameReturn
        except ImportError:
            ConvertFrameReturn = None
        if ConvertFrameReturn is not None:
            # One instance serves every frame: the hook only reads it.
            self.skip_result = ConvertFrameReturn()
        elif self.skip_code is not None:
            self.skip_result = None
        else:
            raise RuntimeError(
                "torch %s has neither ConvertFrameReturn nor skip_code" % self.version
            )


def _load_dynamo():
    try:
        with warnings.catch_warnings():
            # torch warns on import when numpy is missing: not our business.
            warnings.simplefilter("ignore")
            import torch
    except Exception as exc:
        return None, "torch is not importable here (%s: %s)" % (type(exc).__name__, exc)
    try:
        return DynamoHook(torch), None
    except Exception as exc:
        return None, "torch %s: Dynamo's eval-frame hook is not usable: %s" % (
            torch.__version__,
            exc,
        )


def describe_pyframe(env):
    if env.pyframe is None:
        return "not importable (%s)" % env.pyframe_reason
    p = env.pyframe
    kind = pyframe_build_kind(p)
    text = "%s, %s build, %s" % (getattr(p, "__version__", "?"), kind, os.path.dirname(p.__file__))
    if kind == "debug":
        text += "  <-- WARNING: debug build (asserts, -O1); time a release build"
    return text
