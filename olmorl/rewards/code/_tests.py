"""Ground truth of the code verifiers: the four accepted formats, turned into sandbox tests.

1. `["assert f(1) == 2", ...]`                        assert statements (open-instruct, AceCoder)
2. `[{"input": "1 2\\n", "output": "3\\n"}, ...]`      stdin/stdout pairs (competitive programming)
3. `{"fn_name": "f", "inputs": [[1], ...], "outputs": [2, ...]}`  function calls (APPS/TACO/LCB)
4. `{"test": "def check(candidate): ...", "entry_point": "f"}`     HumanEval style

Each may also come as a string holding that JSON. Nothing is ever unpickled.
"""

from __future__ import annotations

import ast
import functools
import json
from dataclasses import dataclass
from typing import Any, Literal

from olmorl.rewards.engine._registry import InvalidInput
from olmorl.sandbox import TestInput

Format = Literal["asserts", "stdio", "function", "check"]


@dataclass
class CompiledTest:
    input: TestInput  # what the sandbox's test process runs and judges
    label: str


@dataclass
class TestSuite:
    format: Format
    tests: list[CompiledTest]


def parse_ground_truth(raw: Any, *, stdio_only: bool = False) -> TestSuite:
    value = raw
    if isinstance(raw, str):
        try:
            value = json.loads(raw)
        except ValueError:
            raise InvalidInput("ground_truth is a string but not JSON; give the tests as a JSON list/object "
                               "(or a string holding one)") from None
    if isinstance(value, dict) and "inputs" in value and "outputs" in value:
        if value.get("fn_name") and not stdio_only:
            return _function_tests(value)
        value = _pairs_from_io(value)
    if isinstance(value, list) and value and all(isinstance(t, dict) for t in value):
        return _stdio_tests(value)
    if stdio_only:
        raise InvalidInput("code_stdio expects a list of {\"input\": str, \"output\": str} pairs "
                           "(or {\"inputs\": [...], \"outputs\": [...]})")
    if isinstance(value, list) and value and all(isinstance(t, str) for t in value):
        return TestSuite("asserts", [_assert_test(i, src) for i, src in enumerate(value)])
    if isinstance(value, dict) and isinstance(value.get("test"), str) and isinstance(value.get("entry_point"), str):
        return _check_tests(value["test"], value["entry_point"])
    raise InvalidInput(
        "ground_truth must be one of: a list of assert strings; a list of {input, output} stdin/stdout "
        "pairs; {fn_name, inputs, outputs}; {test, entry_point} (HumanEval check). Got "
        f"{type(value).__name__}{' (empty)' if value in ([], {}) else ''}"
    )


def _pairs_from_io(value: dict[str, Any]) -> list[dict[str, Any]]:
    inputs, outputs = value["inputs"], value["outputs"]
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise InvalidInput("ground_truth inputs/outputs must be lists of the same length")
    return [{"input": i, "output": o} for i, o in zip(inputs, outputs)]


def _stdio_tests(pairs: list[dict[str, Any]]) -> TestSuite:
    tests = []
    for i, pair in enumerate(pairs):
        stdin, stdout = pair.get("input"), pair.get("output")
        if isinstance(stdout, list) and all(isinstance(s, str) for s in stdout):
            stdout = "\n".join(stdout)
        if not isinstance(stdin, str) or not isinstance(stdout, str):
            raise InvalidInput(f"ground_truth[{i}]: a stdio test needs string 'input' and 'output'")
        tests.append(CompiledTest(TestInput(stdin=stdin, expected_stdout=stdout), f"stdio[{i}]"))
    return TestSuite("stdio", tests)


def _function_tests(value: dict[str, Any]) -> TestSuite:
    name = value["fn_name"]
    if not isinstance(name, str) or not name.isidentifier():
        raise InvalidInput("ground_truth.fn_name must be a Python identifier")
    inputs, outputs = value["inputs"], value["outputs"]
    if not isinstance(inputs, list) or not isinstance(outputs, list) or len(inputs) != len(outputs):
        raise InvalidInput("ground_truth inputs/outputs must be lists of the same length")
    tests = []
    for i, (args, expected) in enumerate(zip(inputs, outputs)):
        args = args if isinstance(args, list) else [args]
        tests.append(CompiledTest(TestInput(call=name, args=args, expected=expected), f"{name}[{i}]"))
    return TestSuite("function", tests)


# The tests of one prompt come again with every completion of its group (GRPO): a test source already found
# valid is not parsed again (ast.parse was a fifth of the server's CPU per HumanEval item). Sources over this
# many characters (HumanEval's longest is 1.8 k) are parsed each time: the cache holds 4 MB of source at most.
CACHED_SOURCE_CHARS = 16 << 10


def _parse(source: str, where: str) -> ast.Module:
    try:
        return ast.parse(source)
    except (SyntaxError, ValueError) as exc:
        raise InvalidInput(f"{where} is not valid Python: {exc}") from None


def _checked(module: ast.Module, where: str) -> None:
    """A test must contain a check (an assert statement, a unittest assert*/fail* call): one without
    could pass any program (the sandbox also fails a test that ran none)."""
    for node in ast.walk(module):
        if isinstance(node, ast.Assert) or isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                and node.func.attr.startswith(("assert", "fail")):
            return
    raise InvalidInput(f"{where} contains no check (no assert statement or unittest assertion): "
                       "it would pass any program")


def _validate(source: str, where: str, needs_check_function: bool) -> None:
    """Raise InvalidInput unless `source` parses and runs a check (and, for a HumanEval test, defines
    check(candidate))."""
    module = _parse(source, where)
    if needs_check_function and not any(isinstance(n, ast.FunctionDef) and n.name == "check" for n in module.body):
        raise InvalidInput(f"{where} must define check(candidate)")
    _checked(module, where)


_validate_cached = functools.lru_cache(maxsize=256)(_validate)  # (an InvalidInput is never cached)


def _validated(source: str, where: str, needs_check_function: bool = False) -> None:
    (_validate_cached if len(source) <= CACHED_SOURCE_CHARS else _validate)(source, where, needs_check_function)


def _assert_test(index: int, source: str) -> CompiledTest:
    _validated(source, f"ground_truth[{index}]")
    return CompiledTest(TestInput(code=source), source.strip()[:200])


def _check_tests(source: str, entry_point: str) -> TestSuite:
    if not entry_point.isidentifier():
        raise InvalidInput("ground_truth.entry_point must be a Python identifier")
    _validated(source, "ground_truth.test", needs_check_function=True)
    code = f"{source}\n\ncheck({entry_point})\n"
    return TestSuite("check", [CompiledTest(TestInput(code=code, entry=entry_point), f"check({entry_point})")])
