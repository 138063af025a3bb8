"""Run a function in a forked child process and take its result back.

test_dynamo_generated.py runs each generated program in a child forked from
the test process: every program then starts from the same state, and what
native Dynamo keeps of each compile after torch._dynamo.reset() (the
metadata of resume functions, ShapeEnvs with their fake tensors: 0.4 MB a
program with torch 2.13) dies with the child instead of adding up, to GBs
in a long run.  A child that crashes or hangs is reported as
an error naming how it ended, so that the program that did it is shrunk and
printed like any other failure.
"""

import os
import pickle
import select
import signal
import time
import traceback
import warnings


class ChildFailed(AssertionError):
    """The child died, hung, or its function raised (the message says which)."""


def call(function, *args, timeout):
    """function(*args), run in a forked child; its result must pickle."""
    read_end, write_end = os.pipe()
    with warnings.catch_warnings():
        # 3.12+ warns when a process with threads (torch's) forks: the child
        # only runs Python and small tensor ops on this thread.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:  # the child: never return into pytest
        try:
            os.close(read_end)
            try:
                data = pickle.dumps(("returned", function(*args)))
            except BaseException:
                data = pickle.dumps(("raised", traceback.format_exc()))
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(data)
        finally:
            os._exit(0)
    os.close(write_end)
    try:
        data = _read(read_end, time.monotonic() + timeout)
    except TimeoutError:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
        raise ChildFailed(f"the child hung: no result in {timeout} s") from None
    finally:
        os.close(read_end)
    _, status = os.waitpid(pid, 0)
    if os.WIFSIGNALED(status):
        name = signal.Signals(os.WTERMSIG(status)).name
        raise ChildFailed(f"the child was killed by {name}")
    if not data:
        raise ChildFailed(f"the child exited ({os.waitstatus_to_exitcode(status)}) with no result")
    kind, value = pickle.loads(data)
    if kind == "raised":
        raise ChildFailed(f"the child raised:\n{value}")
    return value


def _read(fd, deadline):
    chunks = []
    while True:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([fd], [], [], remaining)[0]:
            raise TimeoutError
        chunk = os.read(fd, 1 << 16)
        if not chunk:
            return b"".join(chunks)
        chunks.append(chunk)
