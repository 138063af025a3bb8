"""Entry f_locals, checked against CPython itself.

Every case runs under record_entries() (conftest.py): pyframe's callback
records what each frame's f_locals and localsplus are before the frame runs,
and a sys.monitoring PY_START callback (on 3.11, a sys.settrace 'call' event
at the RESUME that starts a frame) records dict(frame.f_locals) as CPython
shows it at the same frame's first traced line.  The two must agree key for
key, object for object (`is`), in the same order, for every frame a case
runs, not only the ones it names.

Values are fresh Token objects rather than small ints or plain strings, so an
`is` match cannot be a coincidence of interning or caching.
"""

import collections.abc
import contextlib
import functools
import importlib
import sys
import textwrap
import types

import pytest
from conftest import PY312, EntryPair, locals_difference, record_entries, record_entries_traced

import pyframe


class Token(str):
    """A distinct, hashable object that says what it is in a failure message.

    A str subclass, so making one runs no Python code (no frames of its own),
    and no two are ever the same object.
    """

    __slots__ = ()

    def __repr__(self):
        return f"<token {str.__str__(self)}>"


token = Token


# ---- the corpus --------------------------------------------------------------


def case_registry(cases):
    """A `case` decorator that registers `case_<id>` functions in `cases`.

    `expect` lists qualified names (or their last dotted parts) of frames the
    case exists for: each must be among the paired frames, so a case cannot
    pass by not running what it is about.
    """

    def case(*expect):
        def register(run):
            cases[run.__name__.removeprefix("case_")] = (run, expect)
            return run

        return register

    return case


# Cases in syntax every supported CPython parses; test_entry_locals_pep695.py
# holds the 3.12+ ones.
CASES = {}
case = case_registry(CASES)


# Defaults are objects made once, as a def makes them.
B_DEFAULT, C_DEFAULT, E_DEFAULT = token("b default"), token("c default"), token("e default")


def signature(a, b=B_DEFAULT, /, c=C_DEFAULT, *args, d, e=E_DEFAULT, **kw):
    return a


@case("signature")
def case_signature_kinds():
    signature(token("a"), d=token("d"))
    signature(token("a"), token("b"), token("c"), token("x"), d=token("d"), e=None, z=token("z"))
    signature(*[token("a")], **{"d": token("d"), "c": token("c"), "extra": token("extra")})


def positional_only(a, b, /):
    return a, b


def keyword_only(*, a, b=B_DEFAULT):
    return a, b


def star_args(*args):
    return args


def star_kwargs(**kwargs):
    return kwargs


@case("positional_only", "keyword_only", "star_args", "star_kwargs")
def case_parameter_shapes():
    positional_only(token("a"), token("b"))
    keyword_only(a=token("a"))
    keyword_only(b=token("b"), a=token("a"))
    star_args()
    star_args(token("a"), token("b"))
    star_kwargs()
    star_kwargs(x=token("x"), **{"not an identifier": token("odd key")})


def no_locals():
    return 1


def unbound_locals(flag):
    if flag:
        early = token("early")
        return early
    late = flag
    return late


@case("no_locals", "unbound_locals")
def case_no_and_unbound_locals():
    no_locals()
    unbound_locals(True)
    unbound_locals(False)


@case("argument_cell", "pure_cell", "star_cells", "<lambda>")
def case_cells():
    def argument_cell(value, other):
        return lambda: value

    def star_cells(first, *args, only, **kwargs):
        # Every kind of parameter as a cell: MAKE_CELL wraps each on entry.
        return lambda: (first, args, only, kwargs)

    def pure_cell(flag):
        if flag:
            captured = token("captured")
        return lambda: captured

    argument_cell(token("value"), token("other"))()
    star_cells(token("first"), token("arg"), only=token("only"), kw=token("kw"))()
    star_cells(token("first"), only=token("only"))()
    pure_cell(True)()
    with contextlib.suppress(NameError):
        pure_cell(False)()


@case("outer", "middle", "inner")
def case_free_variables_several_levels():
    def outer(a):
        b = token("b")

        def middle(c):
            # `a` and `b` only pass through middle on their way to inner.
            def inner(d):
                return a, b, c, d

            return inner

        return middle

    outer(token("a"))(token("c"))(token("d"))


@case("read_late", "read_deleted")
def case_empty_free_cells():
    def assigned_after():
        def read_late():
            try:
                return later
            except NameError:
                return None

        read_late()  # `later` still an empty cell
        later = token("later")
        return read_late()

    def deleted():
        gone = token("gone")

        def read_deleted():
            try:
                return gone
            except NameError:
                return None

        read_deleted()
        del gone
        return read_deleted()

    assigned_after()
    deleted()


@case("fact", "even", "odd")
def case_self_recursive_inner_functions():
    def make():
        def fact(n):
            return 1 if n <= 1 else n * fact(n - 1)

        def even(n):
            return True if n == 0 else odd(n - 1)

        def odd(n):
            return False if n == 0 else even(n - 1)

        return fact(4), even(3)

    make()


@case("bump", "make_counter")
def case_nonlocal():
    def make_counter(start):
        count = start

        def bump(step=1):
            nonlocal count
            count = count + step if isinstance(step, int) else step
            return count

        return bump

    bump = make_counter(0)
    bump()
    bump(token("step"))
    bump(token("again"))


class Base:
    def greet(self, who):
        return who

    @classmethod
    def make(cls, who):
        return who


class Child(Base):
    def greet(self, who):
        # `self` is a cell as well as an argument, next to the free __class__.
        again = lambda: self  # noqa: E731
        return super().greet(who), again

    @classmethod
    def make(cls, who):
        return super().make(who)

    def explicit(self):
        return __class__


@case("Child.greet", "Child.make", "Child.explicit", "Base.greet", "Base.make", "Klass")
def case_zero_argument_super():
    child = Child()
    child.greet(token("who"))
    Child.make(token("who"))
    child.explicit()

    # The class body's own __class__ cell, and its methods' free __class__.
    class Klass(Base):
        def greet(self, who):
            return super().greet(who)

    Klass().greet(token("who"))


@case("template.<locals>.body", "renamed")
def case_function_type_with_substituted_closure():
    def template():
        x = token("x")
        y = token("y")

        def body(p, q=None):
            return x, y, p, q

        return body

    body = template()
    body(token("p"))
    code = body.__code__
    globals_ = {"__builtins__": __builtins__}
    full = types.FunctionType(
        code,
        globals_,
        "substituted",
        (token("q default"),),
        (types.CellType(token("new x")), types.CellType(token("new y"))),
    )
    full(token("p"))
    # An empty cell: `y` is unbound in the new function.
    empty = types.FunctionType(
        code, globals_, "substituted", None, (types.CellType(token("x")), types.CellType())
    )
    with contextlib.suppress(NameError):
        empty(token("p"), token("q"))
    # Defaults and closure swapped on an existing function.
    full.__defaults__ = (token("replaced default"),)
    full(token("p"))
    renamed = types.FunctionType(
        code.replace(co_name="renamed", co_qualname="renamed"), globals_, closure=body.__closure__
    )
    renamed(token("p"), q=token("q"))


@case("K", "Nested", "method")
def case_class_bodies():
    def make(free):
        other = token("other")

        class K:
            uses_free = free
            comprehension = [free for _ in range(2)]
            own = [item for item in (other, free)]
            pairs = {key: value for key, value in [(1, free)]}

            class Nested:
                again = free

            def method(self, arg):
                return free, arg

        K().method(token("arg"))
        return K

    make(token("free"))


@case("Prepared")
def case_class_body_with_prepared_namespace():
    class Meta(type):
        @classmethod
        def __prepare__(mcs, name, bases, **kwds):
            # The body starts with something in it already.
            return {"preset": kwds.get("preset")}

        def __new__(mcs, name, bases, namespace, **kwds):
            return super().__new__(mcs, name, bases, namespace)

    class Prepared(metaclass=Meta, preset=token("preset")):
        seen = preset  # noqa: F821  (put there by __prepare__)


class Namespace(collections.abc.MutableMapping):
    """A locals mapping that is not a dict: every access is Python code."""

    def __init__(self, **preset):
        self.data = dict(preset)

    def __getitem__(self, key):
        return self.data[key]

    def __setitem__(self, key, value):
        self.data[key] = value

    def __delitem__(self, key):
        del self.data[key]

    def __iter__(self):
        return iter(self.data)

    def __len__(self):
        return len(self.data)


class NamespaceMeta(type):
    @classmethod
    def __prepare__(mcs, name, bases, **kwds):
        return Namespace(preset=token("preset"))

    def __new__(mcs, name, bases, namespace):
        return super().__new__(mcs, name, bases, dict(namespace))


@case("InMapping", "Namespace.__setitem__")
def case_locals_mapping_not_a_dict():
    class InMapping(metaclass=NamespaceMeta):
        seen = preset  # noqa: F821  (put there by __prepare__)
        items = [item for item in (1, 2)]

        def method(self):
            return __class__

    # The comprehension reads no name of the mapping: on 3.11 it is a
    # function of its own, whose free names are globals.
    exec(
        "x = given\ny = [x] + [n for n in range(2)]", {"given": token("g")}, Namespace(z=token("z"))
    )


MODULE_SOURCE = textwrap.dedent(
    """
    import sys
    top = [value for value in range(3)]
    squares = {n: n * n for n in range(3)}
    # A hidden comprehension variable that is also a cell.
    getters = [lambda: cell for cell in range(2)]

    def helper(arg, *, kw=None):
        local = arg
        return [local for _ in range(1)]

    class InModule:
        attr = [item for item in (1, 2)]
        nested = [[inner for inner in range(outer)] for outer in range(3)]
        getters = [lambda: cell for cell in range(2)]

        def method(self):
            return self

    helper(top)
    InModule().method()
    """
)


@case("<module>", "helper", "InModule", "InModule.method")
def case_module_level_code():
    module = types.ModuleType("corpus_module")
    exec(compile(MODULE_SOURCE, "<corpus module>", "exec"), module.__dict__)


@case("<module>", "helper", "InModule")
def case_exec_with_separate_locals():
    globals_ = {"given": token("given")}
    locals_ = {"already": token("already")}
    exec(compile(MODULE_SOURCE, "<corpus exec>", "exec"), globals_, locals_)


@case("<module>")
def case_exec_and_eval_strings():
    globals_ = {"g": token("g")}
    exec("x = g\ny = [g for _ in range(2)]", globals_)
    eval("[g, x]", globals_)
    eval("(g, here)", globals_, {"here": token("here")})


@case("exec_target")
def case_exec_function_code():
    # Optimized code run by exec has both fast locals and a locals mapping.
    def exec_target():
        local = token("local")
        return local

    exec(exec_target.__code__, {"token": token, "g": token("g")})
    exec(exec_target.__code__, {"token": token}, {"separate": token("separate")})


@case("exec_closure")
def case_exec_code_with_closure():
    captured = token("captured")

    def exec_closure():
        return captured

    closure = (types.CellType(token("replacement")),)
    exec(exec_closure.__code__, {}, closure=closure)


def comprehension_shadows_cell():
    x = token("x")

    def get():
        return x

    shadowed = [x for x in range(3)]
    return get(), shadowed


def comprehension_shadows_argument(x):
    return [x for x in range(3)], x


def comprehension_shadows_argument_cell(x):
    # `x` is an argument, a cell, and the comprehension's own variable.
    get = lambda: x  # noqa: E731
    return [x for x in range(3)], get


def comprehension_with_cell_variable():
    # Each lambda sees the comprehension's `i` as it ends: that is the point.
    return [f() for f in [lambda: i for i in range(3)]]  # noqa: B023


def comprehension_kinds(items):
    as_set = {item for item in items if item}
    as_dict = {item: index for index, item in enumerate(items)}
    nested = [[a, b] for a in items for b in [a]]
    return as_set, as_dict, nested


@case(
    "comprehension_shadows_cell",
    "comprehension_shadows_argument",
    "comprehension_shadows_argument_cell",
    "comprehension_with_cell_variable",
    "comprehension_kinds",
)
def case_inlined_comprehensions():
    comprehension_shadows_cell()
    comprehension_shadows_argument(token("x"))
    comprehension_shadows_argument_cell(token("x"))
    comprehension_with_cell_variable()
    comprehension_kinds([token("one"), token("two")])


def generator(a, *rest, start=None):
    local = start
    yield a
    yield local


@case("generator", "<genexpr>", "lazy")
def case_generators():
    gen = generator(token("a"), token("rest"), start=token("start"))
    next(gen)
    list(gen)
    values = (token("v"), token("w"))
    list(item for item in values)
    outer = token("outer")
    # A generator expression with a free variable, and a generator with a cell.
    next(item for item in values if item is not outer)

    def lazy(seed):
        yield lambda: seed

    next(lazy(token("seed")))()


class Awaitable:
    def __await__(self):
        yield "suspended"
        return token("awaited")


def drive(coroutine):
    """Run a coroutine that needs no event loop."""
    try:
        while True:
            coroutine.send(None)
    except StopIteration as stop:
        return stop.value


@case("coroutine", "inner_coroutine", "Awaitable.__await__")
def case_coroutines():
    async def inner_coroutine(value):
        return value

    async def coroutine(a, *, b=B_DEFAULT):
        first = await inner_coroutine(a)
        second = await Awaitable()
        return first, second, b

    drive(coroutine(token("a")))


@case("agen", "consume")
def case_async_generators():
    async def agen(limit, cell_arg):
        for index in range(limit):
            yield lambda: cell_arg
            yield index

    async def consume():
        return [item async for item in agen(2, token("cell arg"))]

    drive(consume())
    # An async generator stepped by hand.
    stepper = agen(1, token("by hand"))
    with contextlib.suppress(StopIteration):
        stepper.__anext__().send(None)
    stepper.aclose().close()


@case("<lambda>")
def case_lambdas():
    outer = token("outer")
    (lambda: None)()
    (lambda a, /, b=None, *rest, c, **kw: a)(token("a"), c=token("c"))
    (lambda: outer)()
    (lambda x: lambda: x)(token("x"))()


def many_locals_source(count):
    params = [f"p{i}" for i in range(count)]
    locals_ = [f"v{i}" for i in range(count)]
    # Cells and frees at slot indices far past 255 (EXTENDED_ARG operands).
    lines = [
        f"def many({', '.join(params)}):",
        *(f"    {name} = {param}" for name, param in zip(locals_, params, strict=True)),
        "    def inner(q):",
        f"        return q, p{count - 1}, {locals_[-1]}",
        "    return inner",
    ]
    return "\n".join(lines) + "\n"


@case("many", "many.<locals>.inner")
def case_more_than_256_locals():
    namespace = {}
    exec(compile(many_locals_source(300), "<many locals>", "exec"), namespace)
    args = [token(f"p{i}") for i in range(300)]
    namespace["many"](*args)(token("q"))


class Shapes:
    def __init__(self, value):
        self.value = value

    def __new__(cls, *args, **kwargs):
        # A Python __new__ also keeps 3.13 from turning Shapes(...) calls into
        # CALL_ALLOC_AND_ENTER_INIT, which skips PEP 523 hooks (tests/py313).
        return super().__new__(cls)

    def method(self, arg, *args, **kwargs):
        return arg

    @property
    def prop(self):
        return self.value

    @prop.setter
    def prop(self, new):
        self.value = new

    def __getitem__(self, key):
        return key

    def __eq__(self, other):
        return self is other

    __hash__ = object.__hash__

    @classmethod
    def build(cls, value):
        return cls(value)

    @staticmethod
    def static(a, b=None):
        return a

    def __call__(self, arg):
        return arg


@case(
    "Shapes.__init__",
    "Shapes.__new__",
    "Shapes.method",
    "Shapes.prop",
    "Shapes.__getitem__",
    "Shapes.__eq__",
    "Shapes.build",
    "Shapes.static",
    "Shapes.__call__",
)
def case_methods_and_dunders():
    shapes = Shapes(token("value"))
    shapes.method(token("arg"), token("extra"), key=token("kw"))
    _ = shapes.prop
    shapes.prop = token("new")
    _ = shapes[token("key")]
    _ = shapes == token("other")
    Shapes.build(token("built"))
    Shapes.static(token("a"))
    shapes.static(token("a"), b=token("b"))
    shapes(token("called"))
    bound = shapes.method
    bound(token("via bound"))


class Dunders:
    """Dunder methods CPython calls from C slots and protocols."""

    def __init_subclass__(cls, /, flag=None, **kwargs):
        super().__init_subclass__(**kwargs)

    def __set_name__(self, owner, name):
        self.name = name

    def __get__(self, instance, owner=None):
        return self

    def __iter__(self):
        return self

    def __next__(self):
        raise StopIteration

    def __len__(self):
        return 0

    def __bool__(self):
        return True

    def __enter__(self):
        return self

    def __exit__(self, *exc_info):
        return None

    def __contains__(self, item):
        return False

    def __add__(self, other):
        return self

    def __hash__(self):
        return 0

    def __getattr__(self, name):
        return name

    def __class_getitem__(cls, item):
        return cls


@case(
    "Dunders.__init_subclass__",
    "Dunders.__set_name__",
    "Dunders.__get__",
    "Dunders.__iter__",
    "Dunders.__next__",
    "Dunders.__len__",
    "Dunders.__bool__",
    "Dunders.__enter__",
    "Dunders.__exit__",
    "Dunders.__contains__",
    "Dunders.__add__",
    "Dunders.__hash__",
    "Dunders.__getattr__",
    "Dunders.__class_getitem__",
)
def case_dunder_protocols():
    class Owner(Dunders, flag=token("flag")):
        described = Dunders()

    owner = Owner()
    _ = owner.described
    list(owner)
    len(owner)
    bool(owner)
    with owner:
        pass
    _ = token("item") in owner
    _ = owner + token("other")
    hash(owner)
    _ = owner.missing
    _ = Dunders[token("param")]


def logged(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        return func(*args, **kwargs)

    return wrapper


@logged
def decorated(a, b=None):
    return a


@functools.cache
def cached(key):
    return key


def partial_target(a, b, *, c=None):
    return a, b, c


@contextlib.contextmanager
def managed(resource):
    yield resource


class Decorated:
    def target(self, a, b=None):
        return a

    partial_method = functools.partialmethod(target, token("bound a"))

    @functools.cached_property
    def computed(self):
        return token("computed")


@functools.singledispatch
def dispatched(arg):
    return arg


@dispatched.register
def _(arg: int):
    return arg


@case(
    "wrapper",
    "decorated",
    "cached",
    "partial_target",
    "managed",
    "Decorated.target",
    "Decorated.computed",
    "dispatched",
)
def case_decorated_and_partial():
    decorated(token("a"), b=token("b"))
    cached.cache_clear()  # a cache hit would run no frame
    cached(token("key"))
    functools.partial(partial_target, token("a"))(token("b"))
    functools.partial(partial_target, token("a"), c=token("c"))(b=token("b"))
    with managed(token("resource")):
        pass
    instance = Decorated()
    instance.partial_method(b=token("b"))
    _ = instance.computed
    dispatched(token("str"))


@case("<module>", "_find_and_load")
def case_import_machinery():
    # importlib's frozen Python: a real, varied population of frames.
    name = "corpus_generated_module"
    sys.modules.pop(name, None)
    spec = importlib.machinery.ModuleSpec(name, None)
    module = importlib.util.module_from_spec(spec)
    exec(compile(MODULE_SOURCE, "<generated>", "exec"), module.__dict__)
    sys.modules[name] = module
    try:
        importlib.import_module(name)
        __import__("json.decoder")
    finally:
        del sys.modules[name]


# ---- the tests -------------------------------------------------------------


def _expected_frames_ran(pairs, expect):
    names = [pair.qualname for pair in pairs]
    for wanted in expect:
        options = wanted.split("|")
        if not any(
            name == option or name.endswith("." + option) for name in names for option in options
        ):
            pytest.fail(f"no frame named {wanted!r} reached both recorders; saw {names}")


def run_case(name, cases=CASES, record=record_entries):
    run, expect = cases[name]
    _, pairs = record(run)
    _expected_frames_ran(pairs, expect)
    return pairs


def check_entry_locals(pairs):
    for pair in pairs:
        problem = locals_difference(pair.got, pair.want)
        assert problem is None, f"{pair.qualname} (call #{pair.call}): {problem}"
        if not pair.optimized:
            # Module, class and exec code: the very mapping CPython uses.
            assert pair.got_mapping is pair.want_mapping, (
                f"{pair.qualname} (call #{pair.call}): pyframe's f_locals is not "
                f"the frame's own locals mapping"
            )


@pytest.mark.parametrize("name", list(CASES))
def test_entry_locals_match_cpython(name):
    check_entry_locals(run_case(name))


@pytest.mark.skipif(not PY312, reason="3.11's oracle is this one (conftest.record_entries)")
@pytest.mark.parametrize("name", list(CASES))
def test_settrace_oracle_agrees_where_py_start_is_the_oracle(name):
    # 3.11 has no sys.monitoring: its oracle is sys.settrace's 'call' event at
    # the RESUME that starts a frame.  Where both exist, pyframe matches that
    # one too, so the two oracles agree on the corpus.
    check_entry_locals(run_case(name, record=record_entries_traced))


def expected_slot_names(code):
    """co_localsplusnames, rebuilt from what code objects expose: locals
    (arguments first), then cells that are not also locals, then frees."""
    cells_only = [name for name in code.co_cellvars if name not in code.co_varnames]
    return [*code.co_varnames, *cells_only, *code.co_freevars]


def expected_kind(code, name):
    if name in code.co_freevars:
        return "free"
    if name in code.co_cellvars:
        return "local+cell" if name in code.co_varnames else "cell"
    return "local"


def check_localsplus(pair: EntryPair):
    code = pair.code
    where = f"{pair.qualname} (call #{pair.call})"
    names = [name for name, _, _ in pair.localsplus]
    assert names == expected_slot_names(code), f"{where}: slot names"
    for index, (name, kind, value) in enumerate(pair.localsplus):
        # PEP 709: a function's inlined comprehension variables are ordinary
        # locals; module and class code have fast locals only for them, and
        # those are hidden.  No comprehension has run when a frame starts.
        hidden = not pair.optimized and index < len(code.co_varnames)
        assert (kind == "hidden") == hidden, f"{where}: kind of {name!r} is {kind!r}"
        if hidden:
            assert value is pyframe.UNBOUND, f"{where}: hidden {name!r} bound at entry"
            continue
        assert kind == expected_kind(code, name), f"{where}: kind of {name!r}"
        if not pair.optimized:
            # Class bodies keep free variables out of their namespace: the
            # oracle cannot see them.  Their cells are all empty at entry.
            if kind != "free":
                assert value is pyframe.UNBOUND, f"{where}: {name!r} bound at entry"
            continue
        if name in pair.want:
            assert value is pair.want[name], f"{where}: value of {name!r}"
        else:
            assert value is pyframe.UNBOUND, f"{where}: {name!r} should be UNBOUND"


@pytest.mark.parametrize("name", list(CASES))
def test_localsplus_matches_code_and_cpython(name):
    for pair in run_case(name):
        check_localsplus(pair)


def test_localsplus_kinds_of_a_known_function():
    def outer(arg_cell, plain):
        only_cell = token("only cell")

        def inner():
            return arg_cell, only_cell

        return inner

    a, b = token("arg_cell"), token("plain")
    _, pairs = record_entries(outer, a, b)
    inner = outer(a, b)
    _, inner_pairs = record_entries(inner)
    (outer_pair,) = [pair for pair in pairs if pair.code is outer.__code__]
    assert [(name, kind) for name, kind, _ in outer_pair.localsplus] == [
        ("arg_cell", "local+cell"),
        ("plain", "local"),
        ("inner", "local"),
        ("only_cell", "cell"),
    ]
    # Tokens compare equal by text: check identity.
    values = [value for _, _, value in outer_pair.localsplus]
    assert values[0] is a and values[1] is b
    assert values[2] is pyframe.UNBOUND and values[3] is pyframe.UNBOUND
    (inner_pair,) = [pair for pair in inner_pairs if pair.code is inner.__code__]
    assert [(name, kind) for name, kind, _ in inner_pair.localsplus] == [
        ("arg_cell", "free"),
        ("only_cell", "free"),
    ]
    assert inner_pair.localsplus[0][2] is a
    assert inner_pair.localsplus[1][2] is inner.__closure__[1].cell_contents


def test_class_body_free_variables_in_localsplus():
    seen = []

    def make(free):
        class Body:
            value = free

        return Body

    free = token("free")

    def callback(frame):
        if frame.f_code.co_name == "Body":
            seen.append(frame.localsplus)

    with pyframe.callback(callback):
        make(free)
    (slots,) = seen
    # The oracle cannot see a class body's free variables (they are not in
    # its namespace): check the closure's cell contents are what pyframe shows.
    (value,) = [value for name, kind, value in slots if kind == "free"]
    assert value is free


def yield_from(value):
    yield from generator(value)


def hot_calls(shapes):
    shapes.method(shapes)
    _ = shapes[shapes]
    _ = shapes.prop
    for _ in generator(shapes):
        pass
    list(yield_from(shapes))
    no_locals()
    positional_only(shapes, shapes)
    signature(shapes, d=shapes)


def test_frames_at_call_sites_specialized_before_the_hook():
    # CPython's specializing interpreter rewrites call sites that ran often
    # (CALL_PY_EXACT_ARGS, CALL_BOUND_METHOD_EXACT_ARGS, BINARY_SUBSCR_GETITEM,
    # LOAD_ATTR_PROPERTY, FOR_ITER_GEN, SEND_GEN...) into forms that push the
    # callee's frame themselves; with a PEP 523 hook installed they must fall
    # back to calls the hook sees.  Warm them up first, hook-free.
    shapes = Shapes(token("value"))
    for _ in range(200):
        hot_calls(shapes)
    _, pairs = record_entries(hot_calls, shapes)
    _expected_frames_ran(
        pairs,
        [
            "Shapes.method",
            "Shapes.__getitem__",
            "Shapes.prop",
            "generator",
            "yield_from",
            "no_locals",
            "positional_only",
            "signature",
        ],
    )
    for pair in pairs:
        problem = locals_difference(pair.got, pair.want)
        assert problem is None, f"{pair.qualname} (call #{pair.call}): {problem}"


def test_warm_call_sites_with_the_hook_alone():
    # The oracle traces, and a traced frame may run its instructions
    # unspecialized (3.11's sys.settrace does): the run above may not have
    # met the specialized call sites.  Here nothing but pyframe watches the
    # warmed-up calls; they must reach it as often, with the same locals, as
    # in a run the oracle watched.
    shapes = Shapes(token("value"))
    for _ in range(200):
        hot_calls(shapes)
    alone = collections.defaultdict(list)

    def callback(frame):
        alone[frame.f_code].append(dict(frame.f_locals))

    with pyframe.callback(callback):
        hot_calls(shapes)
    _, pairs = record_entries(hot_calls, shapes)
    watched = collections.defaultdict(list)
    for pair in pairs:
        watched[pair.code].append(pair.want)
    assert {code.co_qualname: len(seen) for code, seen in alone.items()} == {
        code.co_qualname: len(seen) for code, seen in watched.items()
    }
    for code, seen in alone.items():
        for call, (got, want) in enumerate(zip(seen, watched[code], strict=True)):
            assert list(got) == list(want), f"{code.co_qualname} #{call}"
            for name, value in got.items():
                # Objects made per call (an empty **kwargs dict) only compare equal.
                same = value is want[name] or (type(value) is dict and value == want[name])
                assert same, f"{code.co_qualname} #{call}: {name!r}"


def test_locals_difference_names_the_first_difference():
    one, two = token("one"), token("two")
    assert locals_difference({"a": one, "b": two}, {"a": one, "b": two}) is None
    assert "missing key 'b'" in locals_difference({"a": one}, {"a": one, "b": two})
    assert "extra key 'b'" in locals_difference({"a": one, "b": two}, {"a": one})
    assert "different object for 'a'" in locals_difference({"a": token("one")}, {"a": one})
    assert "different order at position 0" in locals_difference(
        {"b": two, "a": one}, {"a": one, "b": two}
    )


# ---- shapes whose entry locals differ between 3.12 and 3.13 (tests/py31x) ----


def exec_target():
    local = token("local")
    return local


class PresetCellNames(type):
    """Starts class bodies with entries named like their cells."""

    @classmethod
    def __prepare__(mcs, name, bases, **kwds):
        return {"__class__": token("preset class"), "other": token("other")}

    def __new__(mcs, name, bases, namespace):
        # What the body left in the namespace (locals() would not do: on 3.12
        # it is an observer that changes the namespace too).
        cls = super().__new__(mcs, name, bases, namespace)
        cls.seen = set(namespace)
        return cls


def make_preset_class():
    class Preset(metaclass=PresetCellNames):
        def method(self):
            return __class__

    return Preset
