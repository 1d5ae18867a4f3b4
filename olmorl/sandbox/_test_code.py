"""A code test's own code in the test process: parsed once per prompt (`TestPlan`, kept for the group's
other completions), its names resolved (its builtins and modules are its own), run as `__main__` with
its pytest-style functions and unittest cases, every executed check counted. Standard library only (a
harness part, see `_harness`).
"""

import builtins
import sys
import types

if __name__ != "__main__":  # a module of the server; inside the sandbox the parts are one file
    from olmorl.sandbox._proxy import Proxy
    from olmorl.sandbox._wire import WireError, values_equal


# -- a test's code: what it names, how it runs, what counts as a check ---------------------------------
# A check is an executed `assert` statement (counted by instrumenting the test's AST), a unittest
# assertion (`assert*` / `fail*` of a TestCase), or the comparison of a function test. A test that
# finishes without one has judged nothing: it fails ("no check ran"). (A test that contains no check
# at all is refused by the server as invalid ground truth.)
_CHECKS = [0]
_BUILTIN_NAMES = frozenset(vars(builtins))
_STDLIB = frozenset(getattr(sys, "stdlib_module_names", ()))


def _count_check():
    _CHECKS[0] += 1


def _special(name):
    return len(name) > 4 and name.startswith("__") and name.endswith("__")


def _ast():
    """`ast`, imported by the test process for its first plan: never in the zygote, where its ~0.5 MB would
    be mapped by every fork and unmapped by every program process's exit."""
    import ast
    return ast


class TestPlan:
    """A test's code, compiled (asserts counted; with a tolerance, `==` / `!=` on numbers within it),
    and the names it uses: what the program may contribute to its namespace."""

    def __init__(self, source, tolerance):
        ast = _ast()
        self.source = source
        tree = ast.parse(source)
        self.tolerance = tolerance
        self.compiled = {}  # the program globals read live -> code
        self.used, self.imported, specials = set(), set(), set()
        self.module_attrs = {}  # name -> attributes the test reads from it (`math.isclose`)
        self.bound = set()  # names the test binds somewhere (never read live from the program)
        for node in ast.walk(tree):
            if isinstance(node, ast.Name):
                (self.used if isinstance(node.ctx, ast.Load) else self.bound).add(node.id)
            elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                self.bound.add(node.name)
            elif isinstance(node, ast.arg):
                self.bound.add(node.arg)
            elif isinstance(node, (ast.Global, ast.Nonlocal)):
                self.bound.update(node.names)
            elif isinstance(node, ast.Attribute):
                if _special(node.attr):
                    specials.add(node.attr)
                if isinstance(node.value, ast.Name):
                    self.module_attrs.setdefault(node.value.id, set()).add(node.attr)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                self.imported.update((alias.asname or alias.name).split(".")[0] for alias in node.names)
            elif isinstance(node, ast.Constant) and type(node.value) is str and _special(node.value):
                specials.add(node.value)  # getattr(x, "__name__")
        self.bound |= self.imported
        self.specials = frozenset(specials)

    def compile(self, live):
        """The instrumented code; the names in `live` (the program's plain-data globals) are read from
        the program each time the test reads them, so a call that changed one is seen."""
        live = frozenset(live) - self.bound
        code = self.compiled.get(live)
        if code is None:  # (the instrumenting rewrites the tree it visits: a fresh one each time)
            ast = _ast()
            tree = _instrument_class()(self.tolerance, live).visit(ast.parse(self.source))
            ast.fix_missing_locations(tree)
            code = self.compiled[live] = compile(tree, "<test>", "exec")
        return code


# The tests of one prompt come again with every completion of its group (GRPO): their plans (parsed,
# instrumented, compiled) are kept for the next job. Code objects are immutable, and each run gets a
# fresh namespace. Only the test process holds them; no program can reach it.
_PLANS = {}  # type: dict[tuple[str, object], TestPlan]
_KEPT = [0]  # characters of test source in _PLANS
# Test source kept, in characters: bounded so the test process's memory stays well inside its 512 MiB
# (a plan's code takes a few times its source).
PLAN_CACHE_CHARS = 4 << 20


def cached_plan(source, tolerance):
    key = (source, tolerance)
    plan = _PLANS.pop(key, None)
    if plan is None:
        plan = TestPlan(source, tolerance)
        _KEPT[0] += len(source)
    _PLANS[key] = plan  # last: the dict's order is least recently used first
    while _KEPT[0] > PLAN_CACHE_CHARS:  # (a test bigger than the whole budget is not kept either)
        oldest = next(iter(_PLANS))
        del _PLANS[oldest]
        _KEPT[0] -= len(oldest[0])
    return plan


def test_namespace(conn, program, plan, entry):
    """The test's globals: its builtins and module names are its own (the modules it imports, or a
    standard library module it uses as one: every `mod.attr` it reads exists there); the program
    contributes only the other names the test uses (a program's `queue = Queue()` read as `queue.push`).
    An explicit entry point (HumanEval's, a function test's) always comes from the program."""
    namespace = {}
    for name in plan.used - plan.imported - _BUILTIN_NAMES:
        if name in _STDLIB and name in plan.module_attrs:
            try:
                module = conn.module(name)
            except WireError:
                module = None
            if module is not None and all(hasattr(module, attr) for attr in plan.module_attrs[name]):
                namespace[name] = module
                continue
        if name in program:
            namespace[name] = program[name]
    if entry is not None and entry in program:
        namespace[entry] = program[entry]
    return namespace


class _Sink:
    def write(self, text):
        return len(text)

    def flush(self):
        pass


def run_test_code(conn, plan, names, tolerance):
    """Run the test as `__main__` (its `if __name__ == "__main__":` block runs), then the pytest-style
    `test*` functions and unittest TestCase classes it defines. Its own output goes nowhere."""
    module = types.ModuleType("__main__")
    namespace = module.__dict__
    namespace.update(names)
    live = [name for name, value in names.items() if not isinstance(value, (Proxy, type, types.ModuleType))]
    code = plan.compile(live)
    namespace.update(__builtins__=dict(vars(builtins)), __olmorl_check__=_count_check,
                     __olmorl_global__=conn.read_global,
                     __olmorl_close__=lambda a, b: values_equal(a, b, tolerance),
                     __olmorl_differ__=lambda a, b: _differ(a, b, tolerance))
    saved = sys.modules.get("__main__"), sys.argv, sys.stdout, sys.stderr
    sys.modules["__main__"], sys.argv, sys.stdout, sys.stderr = module, ["test"], _Sink(), _Sink()
    try:
        if "unittest" in plan.imported:
            _count_unittest_assertions(__import__("unittest"))
        try:
            exec(code, namespace)
        except SystemExit as exc:  # unittest.main(): its status says whether every case passed
            if exc.code not in (None, 0, False):
                raise AssertionError(f"the test exited with status {exc.code!r}") from None
        for name, value in list(namespace.items()):
            if name.startswith("test") and type(value) is types.FunctionType \
                    and value.__code__.co_filename == "<test>" and not _required_parameters(value):
                value()
        if "unittest" in sys.modules:
            _run_test_cases(sys.modules["unittest"], namespace)
    finally:
        sys.modules["__main__"], sys.argv, sys.stdout, sys.stderr = saved
        if saved[0] is None:
            del sys.modules["__main__"]


def _differ(a, b, tolerance):
    if isinstance(a, Proxy) or isinstance(b, Proxy):
        return a != b  # a program object is never unequal to test data just by identity (see `_proxy`)
    return not values_equal(a, b, tolerance)


def _required_parameters(fn):
    code = fn.__code__
    return code.co_argcount + code.co_kwonlyargcount - len(fn.__defaults__ or ()) - len(fn.__kwdefaults__ or {})


def _run_test_cases(unittest, namespace):
    _count_unittest_assertions(unittest)
    for value in list(namespace.values()):
        if isinstance(value, type) and issubclass(value, unittest.TestCase) and value.__module__ == "__main__":
            result = unittest.TestResult()
            unittest.defaultTestLoader.loadTestsFromTestCase(value).run(result)
            for problems, exc in ((result.errors, RuntimeError), (result.failures, AssertionError)):
                if problems:
                    case, trace = problems[0]
                    raise exc(f"{case.id()}: {trace.strip().splitlines()[-1][:1000]}")


def _count_unittest_assertions(unittest):
    case = unittest.TestCase
    if getattr(case, "_olmorl_counted", False):
        return
    for name in dir(case):
        if name.startswith(("assert", "fail")) and type(getattr(case, name)) is types.FunctionType:
            setattr(case, name, _counted(getattr(case, name)))
    case._olmorl_counted = True


def _counted(method):
    def counted(*args, **kwargs):
        _count_check()
        return method(*args, **kwargs)
    return counted


_INSTRUMENT = []  # type: list[type]  # the class below, made once `ast` is imported (see `_ast`)


def _instrument_class():
    if not _INSTRUMENT:
        _INSTRUMENT.append(_make_instrument(_ast()))
    return _INSTRUMENT[0]


def _make_instrument(ast):
    class Instrument(ast.NodeTransformer):
        """Counts every executed `assert`; with a tolerance, `a == b` / `a != b` compare numbers within it."""

        def __init__(self, tolerance, live):
            self.tolerance = tolerance
            self.live = live

        def visit_Name(self, node):
            if node.id not in self.live or not isinstance(node.ctx, ast.Load):
                return node
            read = ast.Call(func=ast.Name(id="__olmorl_global__", ctx=ast.Load()), args=[ast.Constant(node.id)],
                            keywords=[])
            return ast.copy_location(read, node)

        def visit_Assert(self, node):
            self.generic_visit(node)
            count = ast.Expr(ast.Call(func=ast.Name(id="__olmorl_check__", ctx=ast.Load()), args=[], keywords=[]))
            return [ast.copy_location(count, node), node]

        def visit_Compare(self, node):
            self.generic_visit(node)
            if self.tolerance is None or len(node.ops) != 1 or not isinstance(node.ops[0], (ast.Eq, ast.NotEq)):
                return node
            name = "__olmorl_close__" if isinstance(node.ops[0], ast.Eq) else "__olmorl_differ__"
            call = ast.Call(func=ast.Name(id=name, ctx=ast.Load()), args=[node.left, node.comparators[0]], keywords=[])
            return ast.copy_location(call, node)

    return Instrument
