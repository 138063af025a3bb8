"""CPython 3.12+: the no-frame-missed scenarios of test_specialization_calls.py,
one `case_<name>` a shape of call made from skipped code (argument shapes,
closures, methods and dunders, __init__, generators, C callers, protocols,
class bodies, exec/eval, functions made by C), and what the warm-up before
the mode must have specialized in each.  test_specialization_vectorcalls.py
and test_specialization_refcounts.py reuse some of its functions and classes.
"""

import functools
import sys
import types

from specialization_support import on_this_version
from test_entry_locals import case_registry, token

# ---- no frame missed: shapes of calls from warm skipped code -----------------------

SCENARIOS = {}
scenario = case_registry(SCENARIOS)


def plain(a, b=None):
    return a


def star_target(a, *args, k=None, **kwargs):
    return a


def keywords_only(*, a, b=None):
    return a


def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)


@scenario("plain", "star_target", "keywords_only", "fib")
def case_module_functions_and_argument_shapes():
    # Functions made at import, long before the mode: the GC walk finds them.
    plain(token("a"))
    plain(token("a"), token("b"))
    plain(token("a"), b=token("b"))
    star_target(token("a"), token("x"), k=token("k"), extra=token("extra"))
    args, kwargs = (token("a"), token("x")), {"k": token("k"), "more": token("more")}
    star_target(*args, **kwargs)
    plain(*args)
    plain(**{"a": token("a")})
    keywords_only(a=token("a"))
    fib(4)


@scenario("inner", "<lambda>", "deeper", "in_loop")
def case_closures_and_lambdas_made_afresh():
    # New function objects on every call of this skipped code: the function
    # watcher must hook each, and call sites here must not inline them.
    value = token("value")

    def inner(x):
        return value, x

    for _ in range(5):
        inner(token("x"))
    get = lambda y: (value, y)  # noqa: E731
    for _ in range(5):
        get(token("y"))
    for i in range(3):

        def in_loop(z, i=i):
            return z, i

        in_loop(token("z"))

    def outer(a):
        def deeper(b):
            return a, b

        return deeper

    deeper = outer(token("a"))
    for _ in range(5):
        deeper(token("b"))


class Point:
    def __init__(self, x):
        self.x = x

    def method(self, a):
        return a

    @staticmethod
    def static(a):
        return a

    @classmethod
    def klass(cls, a):
        return a

    @property
    def prop(self):
        return self.x

    def __getitem__(self, key):
        return key

    def __call__(self, a):
        return a


POINT = Point(token("point"))
BOUND = POINT.method  # a bound method made before the mode


class Base:
    def greet(self, who):
        return who


class Derived(Base):
    def greet(self, who):
        return super().greet(who)


DERIVED = Derived()


class Bare:
    # No __init__: its type version stays, and LOAD_ATTR_PROPERTY,
    # BINARY_OP_SUBSCR_GETITEM and method calls warm before the mode guard on it.
    @property
    def prop(self):
        return self

    def __getitem__(self, key):
        return key

    def method(self, a):
        return a


BARE = Bare()


@scenario(
    "Point.method",
    "Point.static",
    "Point.klass",
    "Point.prop",
    "Point.__getitem__",
    "Point.__call__",
    "Derived.greet",
    "Base.greet",
    "Bare.prop",
    "Bare.__getitem__",
    "Bare.method",
)
def case_methods_and_dunders_called_by_the_interpreter():
    p = POINT
    p.method(token("a"))
    p.method(a=token("a"))
    BOUND(token("bound"))
    bound = p.method
    bound(token("bound here"))
    Point.method(p, token("unbound"))
    Point.static(token("a"))
    p.static(token("a"))
    Point.klass(token("a"))
    p.klass(token("a"))
    _ = p.prop
    _ = p[token("key")]
    p(token("called"))
    DERIVED.greet(token("who"))
    _ = BARE.prop
    _ = BARE[token("key")]
    BARE.method(token("a"))


class Plain:
    # A Python __init__ and no __new__: warm `Plain(...)` call sites become
    # CALL_ALLOC_AND_ENTER_INIT, guarded on the type version alone.
    def __init__(self, x, y=None):
        self.x = x


class PlainChild(Plain):
    pass


class Slotted:
    __slots__ = ("x",)

    def __init__(self, x):
        self.x = x


class WithNew:
    def __new__(cls, *args):
        return super().__new__(cls)

    def __init__(self, x):
        self.x = x


class Meta(type):
    def __call__(cls, *args, **kwargs):
        return super().__call__(*args, **kwargs)


class MadeByMeta(metaclass=Meta):
    def __init__(self, x):
        self.x = x


@scenario(
    "Plain.__init__", "Slotted.__init__", "WithNew.__new__", "WithNew.__init__", "Meta.__call__"
)
def case_init_via_class_calls():
    Plain(token("x"))
    Plain(token("x"), token("y"))
    Plain(token("x"), y=token("y"))
    PlainChild(token("x"))
    Slotted(token("x"))
    WithNew(token("x"))
    MadeByMeta(token("x"))


def gen(a, *rest):
    yield a
    yield rest


def delegating(a):
    yield from gen(a)


async def coroutine(a):
    return a


def drive(awaitable):
    try:
        awaitable.send(None)
    except StopIteration as stop:
        return stop.value
    raise AssertionError("the coroutine suspended")


@scenario("gen", "delegating", "<genexpr>", "coroutine", "drive")
def case_generators_and_coroutines():
    # Each generator is started as soon as it is made (conftest.record_entries
    # pairs generator frames in the order their PY_START comes).
    next(gen(token("a")))
    list(gen(token("a"), token("b")))
    for _ in gen(token("a")):
        pass
    list(delegating(token("a")))
    values = (token("v"), token("w"))
    list(item for item in values)
    drive(coroutine(token("a")))


PARTIAL = functools.partial(plain, token("partial a"))  # made before the mode


def key_of(item):
    return item


@scenario("plain", "star_target", "Point.method", "key_of")
def case_partial_and_calls_from_c():
    PARTIAL()
    functools.partial(star_target, token("a"))(token("x"), k=token("k"))
    functools.partial(POINT.method)(token("a"))
    sorted([token("b"), token("a")], key=key_of)
    list(map(plain, [token("m"), token("n")]))


class Protocols:
    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__

    def __len__(self):
        return 0

    def __iter__(self):
        return iter(())

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return None

    def __add__(self, other):
        return self

    def __contains__(self, item):
        return False

    def __getattr__(self, name):
        return name


class Overridden:
    x = 1

    def __getattribute__(self, name):
        # LOAD_ATTR_GETATTRIBUTE_OVERRIDDEN pushes this frame itself.
        return object.__getattribute__(self, name)


PROTOCOLS = Protocols()
OVERRIDDEN = Overridden()


@scenario(
    "Protocols.__eq__",
    "Protocols.__len__",
    "Protocols.__iter__",
    "Protocols.__enter__",
    "Protocols.__exit__",
    "Protocols.__add__",
    "Protocols.__contains__",
    "Protocols.__getattr__",
    "Overridden.__getattribute__",
)
def case_protocols_and_attribute_hooks():
    p = PROTOCOLS
    _ = p == token("other")
    len(p)
    list(p)
    with p:
        pass
    _ = p + token("other")
    _ = token("item") in p
    _ = p.missing
    _ = OVERRIDDEN.x


class InitSubclass:
    def __init_subclass__(cls, /, flag=None, **kwargs):
        super().__init_subclass__(**kwargs)


class Named:
    def __set_name__(self, owner, name):
        self.name = name


@scenario("Local", "Local.method", "Local.__init__", "InitSubclass.__init_subclass__", "Described")
def case_class_bodies_run_in_skipped_code():
    # __build_class__ runs a class body without the function's vectorcall.
    free = token("free")

    class Local:
        attr = free

        def __init__(self, x):
            self.x = x

        def method(self, a):
            return free, a

    for _ in range(5):
        Local(token("x")).method(token("a"))

    class Sub(InitSubclass, flag=token("flag")):
        pass

    class Described:
        field = Named()


EXEC_CODE = compile(
    "def made(a):\n    return a\nmade(given)\nclass InExec:\n    pass\n", "<spec exec>", "exec"
)
EVAL_CODE = compile("plain(given)", "<spec eval>", "eval")
FRESH_SOURCE = "def fresh(a):\n    return a\n"


def exec_target():
    local = token("local")
    return local


@scenario("<module>", "made", "InExec", "plain", "exec_target", "fresh")
def case_exec_and_eval():
    # exec() and eval() run their code without a function's vectorcall.
    exec(EXEC_CODE, {"given": token("given")})
    eval(EVAL_CODE, {"plain": plain, "given": token("given")})
    eval("plain(given)", {"plain": plain, "given": token("given")})
    exec(exec_target.__code__, {"token": token})
    # Code compiled in the mode, and a function made from it: called from a
    # loop, so the call site here would inline it if it could.
    namespace = {}
    exec(compile(FRESH_SOURCE, "<spec fresh>", "exec"), namespace)
    fresh = namespace["fresh"]
    for _ in range(5):
        fresh(token("a"))


RENAMED = plain.__code__.replace(co_name="renamed", co_qualname="renamed")


@scenario("plain", "renamed")
def case_functions_made_by_c_code():
    made = types.FunctionType(plain.__code__, globals(), None, (None,))
    for _ in range(5):
        made(token("a"))
    renamed = types.FunctionType(RENAMED, {"__builtins__": __builtins__}, None, (None,))
    for _ in range(5):
        renamed(token("a"))
    with_default = types.FunctionType(plain.__code__, globals(), "copy", (token("default"),))
    for _ in range(5):
        with_default(token("a"))


# What the warm-up before the mode must have specialized in each scenario's
# own code, so that no scenario passes by never meeting an inlining site.
INLINE_AFTER_WARM_UP = {
    "module_functions_and_argument_shapes": on_this_version(
        {
            "CALL_PY_EXACT_ARGS",
            "CALL_PY_GENERAL",
            "CALL_KW_PY",
            "CALL_EX_PY",
        }
    ),
    # New function objects every call, of the same code: the same version.
    "closures_and_lambdas_made_afresh": on_this_version({"CALL_PY_EXACT_ARGS", "CALL_PY_GENERAL"}),
    "methods_and_dunders_called_by_the_interpreter": on_this_version(
        {
            "CALL_PY_EXACT_ARGS",
            "CALL_BOUND_METHOD_EXACT_ARGS",
            "CALL_KW_PY",
            "LOAD_ATTR_PROPERTY",
            "BINARY_OP_SUBSCR_GETITEM",
        }
    ),
    "init_via_class_calls": on_this_version({"CALL_ALLOC_AND_ENTER_INIT"}),
    "generators_and_coroutines": on_this_version({"CALL_PY_EXACT_ARGS", "CALL_PY_GENERAL"}),
    "partial_and_calls_from_c": set(),  # C calls them
    # `with` calls __enter__ and __exit__ as Python calls.
    "protocols_and_attribute_hooks": on_this_version(
        {
            "CALL_PY_EXACT_ARGS",
            "CALL_PY_GENERAL",
            "LOAD_ATTR_GETATTRIBUTE_OVERRIDDEN",
        }
    ),
    # A new class every call, warm within the call's own loop.
    "class_bodies_run_in_skipped_code": on_this_version(
        {"CALL_ALLOC_AND_ENTER_INIT", "CALL_PY_EXACT_ARGS"}
    ),
    "exec_and_eval": on_this_version({"CALL_PY_EXACT_ARGS"}),
    # types.FunctionType() gives its functions no version: nothing to inline.
    "functions_made_by_c_code": set(),
}
if sys.version_info < (3, 14):
    # `with` calls __enter__ and __exit__ from C (BEFORE_WITH) until 3.14's
    # LOAD_SPECIAL and CALL (gh-120507).
    INLINE_AFTER_WARM_UP["protocols_and_attribute_hooks"] -= {
        "CALL_PY_EXACT_ARGS",
        "CALL_PY_GENERAL",
    }
if sys.version_info < (3, 13):
    # 3.12's CALL_PY_WITH_DEFAULTS takes only positional calls that leave
    # defaults to fill; the scenario's other shapes stay CALL.
    INLINE_AFTER_WARM_UP["generators_and_coroutines"] -= {"CALL_PY_GENERAL"}
