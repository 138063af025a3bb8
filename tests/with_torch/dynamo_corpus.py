"""Function shapes whose entry locals test_dynamo.py compares between pyframe,
TorchDynamo's raw eval-frame hook and CPython itself.

The test runs `workload()` twice, once under each hook, so every object a
corpus frame receives is made here, once, at import: the two runs can then be
compared object for object.  The only objects a run makes afresh are those a
call builds itself (a `*args` tuple, a `**kwargs` dict, the `bases` and
`**kwargs` handed to a metaclass's __prepare__); the test compares those
element by element.

This module needs neither torch nor pyframe.
"""

import builtins
import functools


class Token:
    """A named, unique argument value."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return f"<{self.name}>"


A, B, C, K, DEFAULT, EXTRA, PREPARED = (
    Token(name) for name in ("A", "B", "C", "K", "DEFAULT", "EXTRA", "PREPARED")
)


class Replay:
    """An iterable that is its own iterator and starts over on iter(): a
    generator expression's hidden `.0` argument is then this same object in
    both runs, not a new iterator each time."""

    def __init__(self, *items):
        self.items = items
        self.position = 0

    def __iter__(self):
        self.position = 0
        return self

    def __next__(self):
        if self.position == len(self.items):
            raise StopIteration
        self.position += 1
        return self.items[self.position - 1]


REPLAY = Replay(A, B)


# ---- arguments ----------------------------------------------------------------


def positional(a, b, c=DEFAULT):
    return a


def positional_only(a, b, /, c):
    return b


def keyword_only(a, *, k, d=DEFAULT):
    return k


def varargs(a, *args, k=DEFAULT, **kwargs):
    return args, kwargs


def depth(n, acc=A):
    # Several frames of one code object: they pair up in call order.
    return acc if n == 0 else depth(n - 1, acc)


# ---- closures and cells -------------------------------------------------------


def make_closure(x):
    # x is an argument and a cell: at entry its slot holds the bare value.
    y = B

    def closure(z):
        return x, y, z

    return closure


def outer(a):
    def middle(b):
        def innermost(c):
            # a reaches here through middle's closure.
            return a, b, c

        return innermost

    return middle


def late_binding():
    def peek():
        # `value` is a free variable whose cell is still empty on the first call.
        try:
            return value
        except NameError:
            return None

    first = peek()
    value = C
    return first, peek()


adder = lambda n: lambda m: (n, m)  # noqa: E731


square = lambda v, w=DEFAULT: v  # noqa: E731


def decorate(function):
    @functools.wraps(function)
    def wrapper(*args, **kwargs):
        return function(*args, **kwargs)

    return wrapper


@decorate
def decorated(a, b=B):
    return a


# ---- generators and coroutines ------------------------------------------------


def countdown(n, step=DEFAULT):
    total = n
    yield total
    yield step


async def coroutine(a, b=B):
    return a


def drive(coroutine_function, *args):
    # Makes the coroutine itself: a coroutine object made by the workload
    # would be a different object in each run.
    awaitable = coroutine_function(*args)
    try:
        awaitable.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the coroutine should finish on its first send()")


# How often each generator-like code object is resumed by workload(): the
# call makes the frame, then every next()/send() resumes it, the last one
# finishing it.  Keyed by co_qualname.
RESUMPTIONS = {
    "countdown": 3,  # two yields, then the end
    "coroutine": 1,
    "comprehensions.<locals>.<genexpr>": len(REPLAY.items) + 1,
}


# ---- methods ------------------------------------------------------------------


class Base:
    def greet(self, who):
        return who


class Child(Base):
    def greet(self, who, punct=EXTRA):
        # super() gives this frame a __class__ free variable.
        return super().greet(who)


class Holder:
    @classmethod
    def build(cls, value):
        return value

    @staticmethod
    def check(value, *, strict=True):
        return value


CHILD = Child()


# ---- comprehensions -----------------------------------------------------------


def comprehensions(items, x=A):
    # List and dict comprehensions run inline (PEP 709): no frames of their
    # own, and their `x` and `k` are hidden slots of this frame.  A generator
    # expression is still a frame, whose argument is the hidden `.0`.
    listed = [x for x in items]
    mapped = {k: k for k in items}
    counted = sum(1 for _ in items)
    return listed, mapped, counted, x


# ---- class bodies -------------------------------------------------------------


class Prepare(type):
    @classmethod
    def __prepare__(mcs, name, bases, **kwargs):
        # The class body starts with a namespace that is not empty.
        return {"prepared": PREPARED}


def make_classes(tag):
    class Plain:
        # A free variable of the body (tag), and a __class__ cell (method).
        label = tag

        def method(self):
            return __class__

    class Prepared(metaclass=Prepare):
        seen = prepared  # noqa: F821 (put there by Prepare.__prepare__)

    return Plain, Prepared


# ---- module-level code --------------------------------------------------------

MODULE_CODE = compile(
    "def helper(v, w=None):\n    return v\n\nresult = helper(preset)\n",
    "<corpus module>",
    "exec",
)
EXEC_WITH_LOCALS_CODE = compile("picked = first\n", "<corpus exec with locals>", "exec")


def run_module_code():
    # Fresh namespaces per run, filled with the same objects: both runs start
    # each module frame from equal contents.
    namespace = {"__builtins__": builtins, "__name__": "corpus_module", "preset": A}
    exec(MODULE_CODE, namespace)
    exec(EXEC_WITH_LOCALS_CODE, {"__builtins__": builtins}, {"first": B})


# Files whose code objects are the corpus: frames of any other code (the
# standard library, the hooks' own callbacks) are left out of the comparison.
CORPUS_FILES = frozenset({__file__, MODULE_CODE.co_filename, EXEC_WITH_LOCALS_CODE.co_filename})


def workload():
    positional(A, B)
    positional(A, B, C)
    positional_only(A, B, c=C)
    keyword_only(A, k=K)
    varargs(A, B, C, k=K, extra=EXTRA)
    varargs(A)
    depth(3)
    make_closure(A)(C)
    outer(A)(B)(C)
    late_binding()
    adder(A)(B)
    square(A)
    decorated(A)
    list(countdown(A))
    drive(coroutine, A)
    CHILD.greet(A)
    Holder.build(A)
    Holder.check(B, strict=False)
    comprehensions(REPLAY)
    make_classes(A)
    run_module_code()
