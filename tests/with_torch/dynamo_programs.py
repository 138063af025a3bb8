"""A grammar of small torch programs for tests/with_torch/test_dynamo_generated.py.

Hypothesis draws each program as source text: a module with a global int
`G`, a list `LOG` that records side effects, a context manager class `Ctx`,
a compiled `helper(t, k)` (its decorator `COMPILE` is supplied by whoever
runs the program: torch.compile, or nothing for eager runs), `plain(t, k)`
under torch.compiler.disable (recursive or not) and `f(x, n)`, whose body
mixes tensor arithmetic with Python: closures over cells (with `nonlocal`),
generators consumed in the body, try/except/finally, `with Ctx()` (which may
swallow exceptions) and `with torch.no_grad()`, global reads and writes,
`random` and `torch.rand` draws, graph breaks (`.item()`, `print()`,
`torch._dynamo.graph_break()`, branches on tensor values), calls of `helper`
(a compiled function called from a compiled one) and of `plain`, and
raised exceptions.  A program also has a call sequence
whose argument shapes, dtypes and Python types change, so that Dynamo
recompiles.

The writer knows which names are bound (every name it makes is fresh; a name
bound inside a block is not read after it), so programs run to the end unless
they raise on purpose (or on values: `//` by zero, a float passed to
`range()` or `.item()` on a tensor with many elements).
"""

from dataclasses import dataclass, field

from hypothesis import strategies as st

PRELUDE = """\
import random
import torch

G = {g}
LOG = []


class Ctx:
    def __init__(self, tag, swallow):
        self.tag = tag
        self.swallow = swallow

    def __enter__(self):
        LOG.append(("enter", self.tag))
        return len(LOG)

    def __exit__(self, kind, value, traceback):
        LOG.append(("exit", self.tag, kind is not None))
        return self.swallow


"""

# helper(t, k) is compiled (a compiled function called from a compiled one);
# plain(t, k) is run by Dynamo's disable, recursive or not, and may call helper.
FUNCTIONS = (
    ("helper", "@COMPILE", ()),
    ("plain", "@torch.compiler.disable(recursive={recursive})", ("helper",)),
)

SHAPES = ((3,), (4,), (2, 3), ())
DTYPES = ("float32", "float64", "int64")
MAX_DEPTH = 2  # blocks nest this deep at most


@dataclass
class Name:
    text: str
    kind: str  # "tensor" or "scalar"
    owner: int  # the function scope that binds it


@dataclass
class Scope:
    """The names code at one point of a function body can read, and which of
    them it can rebind (its own, and those declared nonlocal)."""

    function: int
    names: list = field(default_factory=list)
    nonlocals: set = field(default_factory=set)
    depth: int = 0  # how many blocks deep
    nested: bool = False  # inside a closure or generator: define no more functions

    def block(self):
        return Scope(self.function, list(self.names), self.nonlocals, self.depth + 1, self.nested)

    def of(self, kind):
        return [name.text for name in self.names if name.kind == kind]

    def rebindable(self, kind):
        return [
            name.text
            for name in self.names
            if name.kind == kind and (name.owner == self.function or name.text in self.nonlocals)
        ]


@dataclass(frozen=True)
class Arguments:
    """One call f(x, n): x a tensor (shape, dtype) or a Python float, n a
    Python int, float or bool."""

    shape: tuple
    dtype: str  # or "python float": x is not a tensor
    n: object

    def make(self, torch):
        if self.dtype == "python float":
            return 1.5, self.n
        numel = 1
        for size in self.shape:
            numel *= size
        x = (torch.arange(numel, dtype=torch.float64) - 1.5).reshape(self.shape)
        return x.to(getattr(torch, self.dtype)), self.n

    def __repr__(self):
        x = "1.5" if self.dtype == "python float" else f"tensor{list(self.shape)}:{self.dtype}"
        return f"f({x}, {self.n!r})"


@dataclass
class Program:
    source: str
    calls: tuple  # of Arguments

    def __repr__(self):
        return "\n" + self.source + "calls: " + ", ".join(map(repr, self.calls))


class Writer:
    """Writes one program with Hypothesis' draw(), as lines of source."""

    def __init__(self, draw):
        self.draw = draw
        self.lines = []
        self.counter = 0
        self.functions = 0

    def choose(self, options):
        return self.draw(st.sampled_from(options))

    def chance(self, one_in):
        return self.draw(st.integers(0, one_in - 1)) == 0

    def fresh(self, prefix):
        self.counter += 1
        return f"{prefix}{self.counter}"

    def emit(self, indent, text):
        self.lines.append("    " * indent + text)

    def new_function(self):
        self.functions += 1
        return self.functions

    # ---- expressions --------------------------------------------------------

    def scalar(self, scope, depth=0):
        kinds = ["literal", "name", "name", "random"]
        if depth < 2:
            kinds += ["binary", "binary", "item", "global", "log"]
        kind = self.choose(kinds)
        if kind == "name":
            return self.choose(scope.of("scalar"))
        if kind == "literal":
            return self.choose(["0", "1", "2", "3", "0.5", "1.5", "True"])
        if kind == "random":
            return self.choose(["random.random()", "random.randint(0, 3)", "random.uniform(1, 2)"])
        if kind == "item":  # a graph break, or a RuntimeError for many elements
            tensor = self.tensor(scope, depth + 1)
            return self.choose([f"{tensor}.sum().item()", f"{tensor}.max().item()"])
        if kind == "global":
            return "G"
        if kind == "log":
            return "len(LOG)"
        left, right = self.scalar(scope, depth + 1), self.scalar(scope, depth + 1)
        operator = self.choose(["+", "-", "*", "//", "max"])
        if operator == "max":
            return f"max({left}, {right})"
        return f"({left} {operator} {right})"

    def tensor(self, scope, depth=0):
        kinds = ["name", "name"]
        if depth < 2:
            kinds += ["unary", "binary", "binary", "scalar", "random", "helper"]
        kind = self.choose(kinds)
        if kind == "name":
            return self.choose(scope.of("tensor"))
        inner = self.tensor(scope, depth + 1)
        if kind == "unary":
            return self.choose(
                [
                    f"{inner}.sin()",
                    f"{inner}.abs()",
                    f"torch.relu({inner})",
                    f"{inner}.sum()",
                    f"{inner}.float()",
                    f"({inner} * 2).cos()",
                ]
            )
        if kind == "binary":
            other = self.tensor(scope, depth + 1)
            return f"({inner} {self.choose(['+', '-', '*'])} {other})"
        if kind == "scalar":
            return f"({inner} {self.choose(['+', '-', '*'])} {self.scalar(scope, depth + 1)})"
        if kind == "random":
            return self.choose(
                [
                    f"({inner} * random.random())",
                    f"({inner} + random.randint(0, 3))",
                    f"({inner} + torch.rand(()))",
                ]
            )
        if self.callables:
            function = self.choose(self.callables)
            return f"{function}({inner}, {self.scalar(scope, depth + 1)})"
        return inner

    def condition(self, scope):
        if self.chance(3):  # a branch on a tensor's value: a graph break
            return f"{self.tensor(scope, 1)}.sum() > 0"
        return f"{self.scalar(scope, 1)} > {self.choose(['0', '1', '2'])}"

    # ---- statements ---------------------------------------------------------

    def bind(self, scope, indent, kind, value):
        options = scope.rebindable(kind)
        if options and self.chance(3):
            self.emit(indent, f"{self.choose(options)} = {value}")
            return
        name = self.fresh("t" if kind == "tensor" else "s")
        self.emit(indent, f"{name} = {value}")
        scope.names.append(Name(name, kind, scope.function))

    def statements(self, scope, indent, low, high):
        start = len(self.lines)
        for _ in range(self.draw(st.integers(low, high))):
            self.statement(scope, indent)
        if len(self.lines) == start:
            self.emit(indent, "pass")

    def statement(self, scope, indent):
        kinds = ["tensor", "tensor", "tensor", "scalar", "scalar"]
        kinds += ["print", "break", "global", "log", "raise"]
        if scope.depth < MAX_DEPTH:
            kinds += ["if", "for", "try", "with"]
        if not scope.nested and self.nesting:
            kinds += ["closure", "closure", "generator"]
        kind = self.choose(kinds)
        if kind in ("tensor", "scalar"):
            value = self.tensor(scope) if kind == "tensor" else self.scalar(scope)
            self.bind(scope, indent, kind, value)
        elif kind == "print":
            value = self.choose([self.tensor(scope, 1), self.scalar(scope, 1)])
            self.emit(indent, f'print("{self.fresh("p")}", {value})')
        elif kind == "break":
            self.emit(indent, "torch._dynamo.graph_break()")
        elif kind == "global":
            self.emit(indent, f"G = G + {self.choose(['1', '2', 'len(LOG)'])}")
        elif kind == "log":
            self.emit(indent, f"LOG.append({self.scalar(scope, 1)})")
        elif kind == "if":
            self.emit(indent, f"if {self.condition(scope)}:")
            self.statements(scope.block(), indent + 1, 1, 2)
            if self.chance(2):
                self.emit(indent, "else:")
                self.statements(scope.block(), indent + 1, 1, 2)
        elif kind == "for":
            body = scope.block()
            variable = self.fresh("i")
            body.names.append(Name(variable, "scalar", scope.function))
            self.emit(indent, f"for {variable} in range({self.choose(['0', '1', '2', '3'])}):")
            self.statements(body, indent + 1, 1, 2)
        elif kind == "try":
            self.try_block(scope, indent)
        elif kind == "with":
            self.with_block(scope, indent)
        elif kind == "closure":
            self.closure(scope, indent)
        elif kind == "generator":
            self.generator(scope, indent)
        else:
            condition = self.condition(scope)
            error = self.choose(["ValueError", "KeyError", "RuntimeError"])
            self.emit(indent, f"if {condition}:")
            self.emit(indent + 1, f'raise {error}("{self.fresh("e")}", {self.scalar(scope, 2)})')

    def try_block(self, scope, indent):
        self.emit(indent, "try:")
        self.statements(scope.block(), indent + 1, 1, 2)
        handlers = self.draw(st.integers(0 if self.chance(2) else 1, 2))
        for _ in range(handlers):
            handler = scope.block()
            caught = self.choose(["ValueError", "Exception", "(KeyError, ZeroDivisionError)"])
            error = self.fresh("err")
            self.emit(indent, f"except {caught} as {error}:")
            self.emit(indent + 1, f"LOG.append(type({error}).__name__)")
            self.statements(handler, indent + 1, 0, 2)
        if handlers == 0 or self.chance(2):
            self.emit(indent, "finally:")
            self.emit(indent + 1, f'LOG.append("{self.fresh("finally")}")')
            self.statements(scope.block(), indent + 1, 0, 2)

    def with_block(self, scope, indent):
        body = scope.block()
        entered = self.fresh("w")
        body.names.append(Name(entered, "scalar", scope.function))
        manager = self.choose(["Ctx", "Ctx", "torch.no_grad()", "torch.enable_grad()"])
        if manager == "Ctx":
            swallow = self.choose(["False", "True"])
            self.emit(indent, f'with Ctx("{entered}", {swallow}) as {entered}:')
        else:
            body.names.pop()
            self.emit(indent, f"with {manager}:")
        self.statements(body, indent + 1, 1, 2)

    def closure(self, scope, indent):
        """A nested function over the cells of `scope`, called at once (and
        perhaps again later): it may rebind some of them through nonlocal."""
        name = self.fresh("inner")
        inner = Scope(self.new_function(), list(scope.names), depth=scope.depth, nested=True)
        own = [n.text for n in scope.names if n.owner == scope.function]
        declared = sorted({self.choose(own) for _ in range(self.draw(st.integers(0, 2)))})
        argument = self.fresh("a")
        inner.names.append(Name(argument, "tensor", inner.function))
        inner.nonlocals = set(declared)
        self.emit(indent, f"def {name}({argument}):")
        self.emit(indent + 1, "global G")
        if declared:
            self.emit(indent + 1, f"nonlocal {', '.join(declared)}")
        self.statements(inner, indent + 1, 1, 2)
        self.emit(indent + 1, f"return {self.tensor(inner)}")
        for _ in range(self.draw(st.integers(1, 2))):
            self.bind(scope, indent, "tensor", f"{name}({self.tensor(scope, 1)})")

    def generator(self, scope, indent):
        """A generator over the cells of `scope`, consumed at once by sum(),
        list() or a for loop."""
        name = self.fresh("gen")
        inner = Scope(self.new_function(), list(scope.names), depth=scope.depth, nested=True)
        count, variable = self.fresh("k"), self.fresh("j")
        inner.names.append(Name(count, "scalar", inner.function))
        self.emit(indent, f"def {name}({count}):")
        self.emit(indent + 1, "global G")
        self.emit(indent + 1, f"for {variable} in range({count}):")
        body = inner.block()
        body.names.append(Name(variable, "scalar", inner.function))
        if self.chance(2):
            self.statements(body, indent + 2, 1, 2)
        self.emit(indent + 2, f"yield {self.tensor(body)}")
        size = self.choose(["0", "1", "2", "3"])
        form = self.choose(["sum", "list", "for"])
        if form == "sum":
            self.bind(scope, indent, "tensor", f"sum({name}({size}), {self.tensor(scope, 1)})")
        elif form == "list":
            self.bind(scope, indent, "scalar", f"len(list({name}({size})))")
        else:
            target = self.choose(scope.rebindable("tensor"))
            value = self.fresh("v")
            self.emit(indent, f"for {value} in {name}({size}):")
            self.emit(indent + 1, f"{target} = {target} + {value}")

    def returns(self, scope, indent):
        first = self.tensor(scope)
        if first in scope.of("tensor"):
            first += " + 1"  # an op: a graph to compile, at least where x is a tensor
        values = [first]
        values += [self.choose(scope.of("tensor")) for _ in range(self.draw(st.integers(0, 2)))]
        values += [self.scalar(scope, 1) for _ in range(self.draw(st.integers(0, 2)))]
        self.emit(indent, f"return ({', '.join(values)},)")


arguments = st.builds(
    Arguments,
    st.sampled_from(SHAPES),
    st.sampled_from(DTYPES + DTYPES + ("python float",)),
    st.sampled_from([0, 1, 2, 3, 0.5, 2.5, True]),
)


@st.composite
def programs(draw):
    writer = Writer(draw)
    writer.lines = PRELUDE.format(g=draw(st.integers(0, 3))).splitlines()
    # Small functions with no functions of their own; f calls them.
    writer.nesting = False
    for name, decorator, callables in FUNCTIONS:
        writer.emit(0, "")
        writer.emit(0, decorator.format(recursive=writer.choose(["True", "False"])))
        writer.emit(0, f"def {name}(t, k):")
        writer.emit(1, "global G")
        writer.callables = callables
        scope = Scope(writer.new_function())
        scope.names = [Name("t", "tensor", scope.function), Name("k", "scalar", scope.function)]
        writer.statements(scope, 1, 0, 2)
        writer.emit(1, f"return {writer.tensor(scope)}")
        writer.emit(0, "")
    writer.emit(0, "")
    writer.emit(0, "def f(x, n):")
    writer.emit(1, "global G")
    writer.callables, writer.nesting = tuple(name for name, _, _ in FUNCTIONS), True
    scope = Scope(writer.new_function())
    scope.names = [Name("x", "tensor", scope.function), Name("n", "scalar", scope.function)]
    writer.statements(scope, 1, 1, 5)
    writer.returns(scope, 1)
    calls = draw(st.lists(arguments, min_size=1, max_size=3))
    return Program("\n".join(writer.lines) + "\n", tuple(calls))
