"""Assert decomposition: the parts of a test that can be computed without the program are computed
here, in the server; only the sub-expressions that need the program (probes) run in the sandbox,
and their values come back as plain data.

`assert f(3) == [1, 2]` becomes `__probe__(site, f(3))` inside and `P0 == [1, 2]` outside, so the
sandbox never sees the expected value and an object with a forged `__eq__` never reaches a comparison.
"""

from __future__ import annotations

import ast
import math
import operator
from dataclasses import dataclass
from fractions import Fraction
from decimal import Decimal
from typing import Any

_PROBE = "__olmorl_p"
_SAFE_CALLS = {
    "abs": abs, "len": len, "round": round, "sorted": sorted, "set": set, "list": list, "tuple": tuple,
    "min": min, "max": max, "sum": sum, "all": all, "any": any, "str": str, "int": int, "float": float,
    "bool": bool, "frozenset": frozenset, "dict": dict, "isclose": math.isclose,
}
_SAFE_MATH = {"isclose": math.isclose, "pi": math.pi, "e": math.e, "inf": math.inf, "nan": math.nan,
              "tau": math.tau, "sqrt": math.sqrt, "floor": math.floor, "ceil": math.ceil, "fabs": math.fabs}
_BINOPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv,
           ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod, ast.Pow: operator.pow}
_CMPOPS = {ast.Eq: operator.eq, ast.NotEq: operator.ne, ast.Lt: operator.lt, ast.LtE: operator.le,
           ast.Gt: operator.gt, ast.GtE: operator.ge, ast.Is: operator.is_, ast.IsNot: operator.is_not,
           ast.In: lambda a, b: a in b, ast.NotIn: lambda a, b: a not in b}
_MAX_SIZE = 10**6


@dataclass(frozen=True)
class Site:
    """One decomposed assert: `check` is evaluated here with the probe values bound."""

    check: ast.Expression
    probes: int
    source: str  # the original assert, for details


def _is_outside(node: ast.AST) -> bool:
    """Whether `node` (with probes replaced) can be evaluated here without the program."""
    if isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.List, ast.Tuple, ast.Set)):
        return all(not isinstance(e, ast.Starred) for e in node.elts)
    if isinstance(node, ast.Dict):
        return all(k is not None for k in node.keys)
    if isinstance(node, (ast.UnaryOp, ast.BoolOp, ast.Compare, ast.Subscript, ast.Slice)):
        return not isinstance(getattr(node, "op", None), ast.Invert)
    if isinstance(node, ast.BinOp):
        return type(node.op) in _BINOPS
    if isinstance(node, ast.Attribute):
        return isinstance(node.value, ast.Name) and node.value.id == "math" and node.attr in _SAFE_MATH
    if isinstance(node, ast.Call):
        func = node.func
        known = (isinstance(func, ast.Name) and func.id in _SAFE_CALLS) or (
            isinstance(func, ast.Attribute) and _is_outside(func))
        return known and not any(isinstance(a, ast.Starred) for a in node.args) and all(
            k.arg for k in node.keywords)
    return False


class _Splitter(ast.NodeTransformer):
    """Replace every maximal sub-expression that needs the program by a probe placeholder."""

    def __init__(self) -> None:
        self.probes: list[ast.expr] = []

    def visit(self, node: ast.AST) -> ast.AST:
        if isinstance(node, ast.expr_context):
            return node
        if isinstance(node, ast.expr) and not _is_outside(node):
            self.probes.append(node)
            return ast.copy_location(ast.Name(id=f"{_PROBE}{len(self.probes) - 1}", ctx=ast.Load()), node)
        if isinstance(node, ast.Attribute):
            return node  # math.<constant or function>: nothing inside to probe
        if isinstance(node, ast.Call):  # a safe function: probe its arguments, never its name
            node.args = [self.visit(a) for a in node.args]
            for keyword in node.keywords:
                keyword.value = self.visit(keyword.value)
            return node
        return self.generic_visit(node)


def split_assert(stmt: ast.Assert) -> tuple[ast.stmt, Site] | None:
    """(the in-sandbox statement, the outside check), or None when nothing is left to check outside."""
    splitter = _Splitter()
    check = splitter.visit(ast.Expression(body=ast.fix_missing_locations(_copy(stmt.test))))
    if not splitter.probes:
        return None  # a constant assert: keep it inside as it is
    ast.fix_missing_locations(check)
    call = ast.Expr(value=ast.Call(func=ast.Name(id="__probe__", ctx=ast.Load()),
                                   args=[ast.Constant(value=-1), *splitter.probes], keywords=[]))
    return ast.copy_location(call, stmt), Site(check=check, probes=len(splitter.probes),
                                               source=ast.unparse(stmt)[:300])


def _copy(node: ast.AST) -> ast.AST:
    return ast.parse(ast.unparse(node), mode="eval").body


def number_sites(stmt: ast.stmt, site_id: int) -> None:
    stmt.value.args[0] = ast.Constant(value=site_id)  # type: ignore[attr-defined]


# -- evaluation here ---------------------------------------------------------------------------------
class OutsideError(ValueError):
    pass


def evaluate(site: Site, values: list[Any], float_tolerance: float | None = None) -> bool:
    """Evaluate the outside part of an assert with the probe values (already decoded plain data)."""
    if len(values) != site.probes:
        raise OutsideError("wrong number of probe values")
    env = {f"{_PROBE}{i}": v for i, v in enumerate(values)}
    return bool(_Eval(env, float_tolerance).run(site.check.body))


class _Eval:
    def __init__(self, env: dict[str, Any], tol: float | None) -> None:
        self.env = env
        self.tol = tol

    def run(self, node: ast.AST) -> Any:
        method = getattr(self, "_" + type(node).__name__, None)
        if method is None:
            raise OutsideError(f"cannot evaluate {type(node).__name__} outside")
        return method(node)

    def _Constant(self, node: ast.Constant) -> Any:
        return node.value

    def _Name(self, node: ast.Name) -> Any:
        if node.id in self.env:
            return self.env[node.id]
        raise OutsideError(f"unknown name {node.id}")

    def _List(self, node: ast.List) -> Any:
        return [self.run(e) for e in node.elts]

    def _Tuple(self, node: ast.Tuple) -> Any:
        return tuple(self.run(e) for e in node.elts)

    def _Set(self, node: ast.Set) -> Any:
        return {self.run(e) for e in node.elts}

    def _Dict(self, node: ast.Dict) -> Any:
        return {self.run(k): self.run(v) for k, v in zip(node.keys, node.values)}  # type: ignore[arg-type]

    def _UnaryOp(self, node: ast.UnaryOp) -> Any:
        value = self.run(node.operand)
        return {ast.Not: operator.not_, ast.USub: operator.neg, ast.UAdd: operator.pos}[type(node.op)](value)

    def _BoolOp(self, node: ast.BoolOp) -> Any:
        result: Any = None
        for expr in node.values:
            result = self.run(expr)
            if isinstance(node.op, ast.And) != bool(result):
                return result
        return result

    def _BinOp(self, node: ast.BinOp) -> Any:
        left, right = self.run(node.left), self.run(node.right)
        if isinstance(node.op, ast.Pow) and isinstance(right, int) and abs(right) > 4096:
            raise OutsideError("exponent too large to evaluate outside")
        if isinstance(node.op, ast.Mult):
            for seq, n in ((left, right), (right, left)):
                if isinstance(seq, (str, bytes, list, tuple)) and isinstance(n, int) and len(seq) * n > _MAX_SIZE:
                    raise OutsideError("sequence repetition too large")
        return _BINOPS[type(node.op)](left, right)

    def _Compare(self, node: ast.Compare) -> Any:
        left = self.run(node.left)
        for op, comp in zip(node.ops, node.comparators):
            right = self.run(comp)
            if isinstance(op, (ast.Eq, ast.NotEq)) and self.tol is not None:
                ok = values_equal(left, right, self.tol) == isinstance(op, ast.Eq)
            else:
                ok = _CMPOPS[type(op)](left, right)
            if not ok:
                return False
            left = right
        return True

    def _Subscript(self, node: ast.Subscript) -> Any:
        return self.run(node.value)[self.run(node.slice)]

    def _Slice(self, node: ast.Slice) -> Any:
        parts = (node.lower, node.upper, node.step)
        return slice(*(None if p is None else self.run(p) for p in parts))

    def _Attribute(self, node: ast.Attribute) -> Any:
        return _SAFE_MATH[node.attr]

    def _Call(self, node: ast.Call) -> Any:
        func = _SAFE_CALLS[node.func.id] if isinstance(node.func, ast.Name) else self.run(node.func)
        args = [self.run(a) for a in node.args]
        kwargs = {k.arg: self.run(k.value) for k in node.keywords}
        if any(isinstance(a, int) and abs(a) > _MAX_SIZE for a in args) and func in (list, tuple, set, str):
            raise OutsideError("argument too large")
        return func(*args, **kwargs)


def values_equal(a: Any, b: Any, tol: float | None = None) -> bool:
    """`a == b` on plain data, with numbers compared within `tol` (relative or absolute) if given."""
    if tol is not None and _is_number(a) and _is_number(b):
        return math.isclose(float(a), float(b), rel_tol=tol, abs_tol=tol)
    if tol is not None and type(a) is type(b) and isinstance(a, (list, tuple)) and len(a) == len(b):
        return all(values_equal(x, y, tol) for x, y in zip(a, b))
    if tol is not None and isinstance(a, dict) and isinstance(b, dict) and a.keys() == b.keys():
        return all(values_equal(a[k], b[k], tol) for k in a)
    return a == b


def _is_number(x: Any) -> bool:
    return type(x) in (int, float, Fraction, Decimal)
