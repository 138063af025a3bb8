"""Generated functions: entry locals and replacement code against CPython.

Hypothesis writes small Python functions as source (signatures with
positional-only, defaulted, *args, keyword-only and **kwargs parameters;
bodies with nested closures, cells, `nonlocal`, `del`, comprehensions,
generators, lambdas, class bodies, branches and try/except), compiles them and
calls them with generated arguments.  For every frame they run:

(a) pyframe's entry f_locals equal CPython's own at the frame's PY_START
    (conftest.record_entries / locals_difference);
(b) running a `code.replace()` copy of every frame's code, returned as
    pyframe.Compiled, gives the same result, or the same exception.

The generator tracks which names are bound so that most programs run to the
end, but it need not be exact: a program that raises (NameError,
UnboundLocalError, TypeError at the call) is compared like any other.

PYFRAME_FUZZ_EXAMPLES sets the number of examples (`make fuzz` runs many).
"""

import gc
import os
from dataclasses import dataclass, field

import pytest
from conftest import locals_difference, record_entries
from hypothesis import HealthCheck, example, given, note, settings
from hypothesis import strategies as st

import pyframe

EXAMPLES = int(os.environ.get("PYFRAME_FUZZ_EXAMPLES", 60))

NAMES = ("a", "b", "c", "d", "x", "y")
MAX_DEPTH = 2  # functions nested in f, and in those; no deeper


@dataclass
class Scope:
    """What the generator knows about one scope while it writes it."""

    kind: str  # "function" or "class"
    parent: "Scope | None"
    # Names bound to an int at this point of the body (as far as we know).
    ints: set = field(default_factory=set)
    # *args / **kwargs parameters: name -> "tuple" or "dict".
    containers: dict = field(default_factory=dict)
    # Names the compiler will make local here (parameters and targets so far).
    assigned: set = field(default_factory=set)
    # Names read from an enclosing function: assigning them here later would
    # make the earlier reads UnboundLocalErrors, so they are not targets.
    free_reads: set = field(default_factory=set)
    nonlocals: set = field(default_factory=set)

    def depth(self):
        return 0 if self.parent is None else 1 + self.parent.depth()

    def enclosing_functions(self):
        """The function scopes whose names code here can read, innermost first.
        Class scopes are skipped: their names are invisible to nested code."""
        scope = self.parent
        while scope is not None:
            if scope.kind == "function":
                yield scope
            scope = scope.parent


class Writer:
    """Writes one program with Hypothesis' draw(), as lines of source."""

    def __init__(self, draw):
        self.draw = draw
        self.lines = []
        self.counter = 0

    def choose(self, options):
        return self.draw(st.sampled_from(options))

    def flag(self):
        return self.draw(st.booleans())

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, indent, text):
        self.lines.append("    " * indent + text)

    # ---- expressions --------------------------------------------------------

    def readable(self, scope):
        """(name, owner) pairs of int names code in `scope` can read now."""
        found = [(name, scope) for name in sorted(scope.ints)]
        shadowed = set(scope.assigned)
        for outer in scope.enclosing_functions():
            found += [(n, outer) for n in sorted(outer.ints) if n not in shadowed]
            shadowed |= outer.assigned
        return found

    def read(self, scope, name, owner):
        # The name is free in every function scope from `scope` out to its
        # owner (exclusive): none of them may assign it afterwards.
        walk = scope
        while walk is not owner and walk is not None:
            if walk.kind == "function":
                walk.free_reads.add(name)
            walk = walk.parent
        return name

    def expr(self, scope, depth=0):
        readable = self.readable(scope)
        kinds = ["literal"]
        if readable:
            kinds += ["name", "name"]
        if depth < 2:
            kinds += ["binary", "binary", "conditional"]
        if scope.containers:
            kinds.append("container")
        kind = self.choose(kinds)
        if kind == "literal":
            return str(self.draw(st.integers(-3, 20)))
        if kind == "name":
            name, owner = self.choose(readable)
            return self.read(scope, name, owner)
        if kind == "container":
            name = self.choose(sorted(scope.containers))
            if scope.containers[name] == "tuple":
                return self.choose([f"len({name})", f"sum({name})"])
            key = self.choose(["k1", "k2", "a"])
            return self.choose([f"len({name})", f"{name}.get({key!r}, 0)"])
        left, right = self.expr(scope, depth + 1), self.expr(scope, depth + 1)
        if kind == "binary":
            return self.choose(
                [f"({left} + {right})", f"({left} - {right})", f"({left} * {right} % 97)"]
            )
        test = self.expr(scope, depth + 1)
        return f"({left} if {test} > 5 else {right})"

    # ---- statements ---------------------------------------------------------

    def target(self, scope):
        """A name to assign in `scope`: not one read from outside before."""
        options = [n for n in NAMES if n not in scope.free_reads or n in scope.nonlocals]
        return self.choose(options) if options else None

    def assign(self, scope, indent, name, value):
        self.emit(indent, f"{name} = {value}")
        scope.ints.add(name)
        scope.assigned.add(name)

    def statements(self, scope, indent, count_range=(1, 4)):
        start = len(self.lines)
        count = self.draw(st.integers(*count_range))
        for _ in range(count):
            self.statement(scope, indent)
        if count_range[0] > 0 and len(self.lines) == start:
            self.emit(indent, "pass")  # a block needs a statement

    def statement(self, scope, indent):
        kinds = ["assign", "assign", "comprehension"]
        if indent < 4:  # if/try blocks nest this deep at most
            kinds += ["if", "try"]
        deletable = sorted(scope.ints - scope.free_reads)
        if deletable:
            kinds.append("del")
        if scope.kind == "function" and scope.depth() < MAX_DEPTH:
            kinds += ["closure", "closure", "generator", "lambda", "class"]
        kind = self.choose(kinds)
        if kind == "assign":
            name = self.target(scope)
            if name is not None:
                self.assign(scope, indent, name, self.expr(scope))
        elif kind == "del":
            name = self.choose(deletable)
            self.emit(indent, f"del {name}")
            scope.ints.discard(name)
            scope.assigned.add(name)
        elif kind == "comprehension":
            self.comprehension(scope, indent)
        elif kind == "if":
            self.branch(scope, indent)
        elif kind == "try":
            self.try_except(scope, indent)
        elif kind == "closure":
            self.closure(scope, indent)
        elif kind == "generator":
            self.generator(scope, indent)
        elif kind == "lambda":
            self.lambda_(scope, indent)
        else:
            self.class_body(scope, indent)

    def comprehension(self, scope, indent):
        name = self.target(scope)
        if name is None:
            return
        variable = self.choose(NAMES)
        # The iteration variable is visible in the element only: a child
        # scope models that (it shadows an outer name of the same spelling).
        inner = Scope("function", scope, ints={variable}, assigned={variable})
        element = self.expr(inner)
        count = self.draw(st.integers(0, 4))
        form = self.choose(["list", "set", "dict", "genexpr", "lambda"])
        source = {
            "list": f"sum([{element} for {variable} in range({count})])",
            "set": f"len({{{element} for {variable} in range({count})}})",
            "dict": f"sum({{{variable}: {element} for {variable} in range({count})}}.values())",
            "genexpr": f"sum({element} for {variable} in range({count}))",
            # A lambda in the element makes the iteration variable a cell.
            "lambda": f"sum([(lambda: {element})() for {variable} in range({count})])",
        }[form]
        self.assign(scope, indent, name, source)

    def branch(self, scope, indent):
        self.emit(indent, f"if {self.expr(scope)} > 5:")
        before = set(scope.ints)
        self.statements(scope, indent + 1, (1, 2))
        after_then = set(scope.ints)
        scope.ints = set(before)
        self.emit(indent, "else:")
        self.statements(scope, indent + 1, (1, 2))
        scope.ints &= after_then

    def try_except(self, scope, indent):
        before = set(scope.ints)
        self.emit(indent, "try:")
        self.statements(scope, indent + 1, (1, 3))
        after_body = set(scope.ints)
        # The handler may start anywhere in the body.
        scope.ints = before & after_body
        self.emit(indent, "except Exception:")
        self.statements(scope, indent + 1, (1, 2))
        scope.ints &= after_body

    def parameters(self, scope, allow_star=True):
        """A parameter list for a new function scope: its text, and a
        Signature to write calls with."""
        names = list(self.draw(st.permutations(NAMES)))
        positional_only = self.draw(st.integers(0, 1))
        positional = self.draw(st.integers(0, 2))
        keyword_only = self.draw(st.integers(0, 1))
        signature = Signature(star=allow_star and self.flag(), star_star=allow_star and self.flag())
        parts = []
        taken = names[: positional_only + positional + keyword_only]
        defaults_from = self.draw(st.integers(0, positional_only + positional))
        for index, name in enumerate(taken[: positional_only + positional]):
            has_default = index >= defaults_from
            default = f"={self.draw(st.integers(0, 9))}" if has_default else ""
            parts.append(name + default)
            kind = "positional-only" if index < positional_only else "positional"
            signature.parameters.append((name, kind, has_default))
            if index == positional_only - 1:
                parts.append("/")
        if signature.star:
            parts.append("*args")
            scope.containers["args"] = "tuple"
        elif keyword_only:
            parts.append("*")
        for name in taken[positional_only + positional :]:
            has_default = self.flag()
            default = f"={self.draw(st.integers(0, 9))}" if has_default else ""
            parts.append(name + default)
            signature.parameters.append((name, "keyword-only", has_default))
        if signature.star_star:
            parts.append("**kw")
            scope.containers["kw"] = "dict"
        scope.ints |= set(taken)
        scope.assigned |= set(taken) | set(scope.containers)
        return ", ".join(parts), signature

    def arguments(self, signature, value):
        """A call that binds: (positional values, {keyword: value});
        `value()` makes each value."""
        positional, keywords = [], {}
        # True while every positional parameter so far went by position.
        by_position = True
        for name, kind, has_default in signature.parameters:
            skip = has_default and self.flag()
            if kind == "keyword-only":
                if not skip:
                    keywords[name] = value()
            elif by_position and not skip:
                if kind == "positional" and self.draw(st.integers(0, 3)) == 0:
                    by_position = False
                    keywords[name] = value()
                else:
                    positional.append(value())
            elif by_position:
                by_position = False  # defaults are a suffix: the rest have them
            elif kind == "positional" and not skip:
                keywords[name] = value()
            # else: a positional-only parameter after a gap keeps its default.
        if signature.star and by_position and self.flag():
            positional += [value() for _ in range(self.draw(st.integers(1, 2)))]
        if signature.star_star:
            for key in self.draw(st.lists(st.sampled_from(["k1", "k2", "a"]), max_size=2)):
                # A positional-only parameter's name is free for **kw.
                if key not in keywords and key not in signature.binds_by_keyword():
                    keywords[key] = value()
        return positional, keywords

    def returns(self, scope, indent):
        values = [self.read(scope, n, o) for n, o in self.readable(scope)[:6]]
        values += [self.expr(scope) for _ in range(self.draw(st.integers(0, 1)))]
        if "kw" in scope.containers:
            values.append("sorted(kw.items())")
        if "args" in scope.containers:
            values.append("args")
        self.emit(indent, f"return ({', '.join(values)}{',' if values else ''})")

    def closure(self, scope, indent):
        """A nested function, called at once; it may rebind or delete
        variables of `scope` through `nonlocal`."""
        name = self.fresh("inner")
        inner = Scope("function", scope)
        text, signature = self.parameters(inner, allow_star=False)
        parameters = [parameter for parameter, _, _ in signature.parameters]
        self.emit(indent, f"def {name}({text}):")
        candidates = sorted(scope.assigned - set(parameters) - set(scope.containers))
        declared = [n for n in candidates if self.flag()][:2]
        if declared:
            self.emit(indent + 1, f"nonlocal {', '.join(declared)}")
            inner.nonlocals = set(declared)
            inner.assigned |= set(declared)
            inner.ints |= {n for n in declared if n in scope.ints}
        self.statements(inner, indent + 1, (0, 3))
        self.returns(inner, indent + 1)
        scope.assigned.add(name)
        positional, keywords = self.arguments(signature, lambda: self.expr(scope))
        arguments = ", ".join(positional + [f"{k}={v}" for k, v in keywords.items()])
        result = self.target(scope)
        if result is not None:
            self.emit(indent, f"{result} = len({name}({arguments}))")
        else:
            self.emit(indent, f"{name}({arguments})")
        # After the call, `scope`'s nonlocal variables are as the inner left them.
        for variable in declared:
            if variable in inner.ints:
                scope.ints.add(variable)
            else:
                scope.ints.discard(variable)
        if result is not None:
            scope.ints.add(result)
            scope.assigned.add(result)

    def generator(self, scope, indent):
        name = self.fresh("gen")
        inner = Scope("function", scope)
        inner.ints.add("n")
        inner.assigned.add("n")
        self.emit(indent, f"def {name}(n):")
        loop = self.choose(NAMES)
        inner.ints.add(loop)
        inner.assigned.add(loop)
        self.emit(indent + 1, f"for {loop} in range(n):")
        self.emit(indent + 2, f"yield {self.expr(inner)}")
        if self.flag():
            self.emit(indent + 1, f"yield from ({self.expr(inner)} for _ in range(2))")
        scope.assigned.add(name)
        result = self.target(scope)
        if result is not None:
            # Consumed at once, in the order made, as record_entries needs.
            self.assign(scope, indent, result, f"sum({name}({self.draw(st.integers(0, 3))}))")

    def lambda_(self, scope, indent):
        name = self.fresh("fn")
        inner = Scope("function", scope, ints={"q"}, assigned={"q"})
        body = self.expr(inner)
        self.emit(indent, f"{name} = lambda q={self.draw(st.integers(0, 5))}: {body}")
        scope.assigned.add(name)
        result = self.target(scope)
        if result is not None:
            self.assign(scope, indent, result, f"{name}()")

    def class_body(self, scope, indent):
        name = self.fresh("K")
        body = Scope("class", scope)
        self.emit(indent, f"class {name}:")
        attribute = self.choose(NAMES)
        # Assigned in the class body, the name is the class's there: a read of
        # it looks in the class namespace and the globals, not the function.
        body.assigned.add(attribute)
        self.emit(indent + 1, f"{attribute} = {self.expr(body)}")
        method = Scope("function", body, assigned={"self"})
        self.emit(indent + 1, "def m(self):")
        self.emit(indent + 2, f"return {self.expr(method)}")
        scope.assigned.add(name)
        result = self.target(scope)
        if result is not None:
            self.assign(scope, indent, result, f"{name}.{attribute} + {name}().m()")


@dataclass
class Signature:
    parameters: list = field(default_factory=list)  # (name, kind, has_default)
    star: bool = False
    star_star: bool = False

    def binds_by_keyword(self):
        return {name for name, kind, _ in self.parameters if kind != "positional-only"}


@dataclass
class Program:
    source: str
    args: tuple
    kwargs: dict

    def call(self):
        return f"f(*{self.args!r}, **{self.kwargs!r})"


@st.composite
def programs(draw):
    writer = Writer(draw)
    scope = Scope("function", None)
    text, signature = writer.parameters(scope)
    writer.emit(0, f"def f({text}):")
    writer.statements(scope, 1, (1, 6))
    writer.returns(scope, 1)
    source = "\n".join(writer.lines) + "\n"
    if draw(st.integers(0, 9)) == 0:
        # Now and then a call that may not bind: TypeError before any frame.
        names = [name for name, _, _ in signature.parameters] + ["k1"]
        positional = draw(st.lists(st.integers(-5, 50), max_size=4))
        keywords = draw(st.dictionaries(st.sampled_from(names), st.integers(-5, 50)))
    else:
        positional, keywords = writer.arguments(signature, lambda: draw(st.integers(-5, 50)))
    return Program(source, tuple(positional), keywords)


def outcome(function, program):
    """What calling the function gives: its result, or its exception."""
    try:
        return ("returned", function(*program.args, **program.kwargs))
    except Exception as error:
        return ("raised", type(error).__name__, str(error))


EVERYTHING = Program(
    """\
def f(a, /, b=1, *args, c, d=2, **kw):
    x = a + b
    def inner1(y=3):
        nonlocal x
        x = x + y + c
        del a_ if False else None
        return (x,)
    x = len(inner1())
    del b
    def gen2(n):
        for y in range(n):
            yield y + a + x
    y = sum(gen2(3))
    fn3 = lambda q=1: q + d
    b = sum([(lambda: a + c)() for c in range(3)])
    class K4:
        a = x + d
        def m(self):
            return c
    return (a, x, y, fn3(), b, K4.a + K4().m(), args, sorted(kw.items()))
""".replace("        del a_ if False else None\n", ""),
    (1, 2, 3, 4),
    {"c": 5, "a": 6, "k1": 7},
)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    # The autouse fixture checks once per test that no callback leaked; each
    # example removes its own callbacks in `with` blocks and resets pyframe.
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(programs())
@example(EVERYTHING)
def test_generated_functions_entry_locals_and_replacement(program):
    note(program.source)
    note("called as " + program.call())
    namespace = {}
    exec(compile(program.source, "<generated>", "exec"), namespace)
    function = namespace["f"]
    expected = outcome(function, program)
    note(f"CPython: {expected!r}")

    # (a) entry locals of every frame, pyframe's against CPython's.  No
    # collection while recording: one that falls due runs gc.callbacks
    # (Hypothesis has one) at the RESUME of record_entries' pyframe callback,
    # before it can tell PY_START to look away, and PY_START would record
    # frames pyframe rightly does not see (they run inside its callback).
    enabled = gc.isenabled()
    gc.disable()
    try:
        result, pairs = record_entries(outcome, function, program)
    finally:
        if enabled:
            gc.enable()
    assert result == expected
    assert any(pair.code is function.__code__ for pair in pairs) or expected[0] == "raised"
    for pair in pairs:
        difference = locals_difference(pair.got, pair.want)
        assert difference is None, f"{pair.qualname} call #{pair.call}: {difference}"

    # (b) every frame runs a copy of its code, cached on the original.
    copies = {}

    def compiled(frame):
        code = frame.f_code
        if code not in copies:
            copies[code] = code.replace()
        return pyframe.Compiled(copies[code])

    try:
        with pyframe.callback(compiled):
            replaced = outcome(function, program)
    finally:
        pyframe.reset()
    assert replaced == expected
    if expected[0] == "returned":
        assert function.__code__ in copies


def test_the_generator_writes_what_it_promises():
    """The generator is exercised as a generator: its programs compile, most
    run to the end, and the features the docstring lists all turn up."""
    seen = set()
    ran = []

    @settings(max_examples=100, deadline=None, database=None)
    @given(programs())
    def collect(program):
        namespace = {}
        exec(compile(program.source, "<generated>", "exec"), namespace)
        ran.append(outcome(namespace["f"], program)[0] == "returned")
        for feature in ("nonlocal", "del ", "yield", "lambda", "class ", "*args", "**kw", "/"):
            if feature in program.source:
                seen.add(feature)
        if " for " in program.source:
            seen.add("comprehension")

    collect()
    assert seen >= {"nonlocal", "del ", "yield", "lambda", "class ", "*args", "**kw", "/"}
    assert "comprehension" in seen
    assert sum(ran) >= len(ran) // 3, f"only {sum(ran)} of {len(ran)} programs returned"


if __name__ == "__main__":
    pytest.main([__file__])
