"""The code verifiers end to end through a real server: the four ground-truth formats, scoring modes,
reward hacks that must earn nothing, legitimate programs that must pass under the same limits, and
the SandboxFusion / open-instruct compatibility routes."""

from __future__ import annotations

import json
import shutil
import uuid

import httpx
import pytest

from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards.engine._registry import InvalidInput
from olmorl.rewards._settings import SandboxSettings
from olmorl.rewards.code import extract_program, parse_ground_truth, stdout_matches

needs_bwrap = pytest.mark.skipif(shutil.which("bwrap") is None,
                                 reason="bubblewrap missing: run scripts/install-system-deps.sh")


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    log = tmp_path_factory.mktemp("srv") / "server.log"
    srv = LocalRewardServer(log_path=str(log), workers=1,
                            sandbox=SandboxSettings(parallelism=2, test_timeout_s=2.0)).start()
    yield srv.url
    srv.stop()


def score(url: str, response: str, ground_truth, verifier: str = "code", **options) -> dict:
    item = {"verifier": verifier, "response": response, "ground_truth": ground_truth, "options": options}
    r = httpx.post(url + "/v1/verify", json={"items": [item]}, timeout=120)
    assert r.status_code == 200, r.text
    return r.json()["results"][0]


# -- pure parts ------------------------------------------------------------------------------------------
def test_extract_program_takes_last_python_block_after_think():
    text = "<think>```python\nwrong()\n```</think>Here:\n```python\nfirst()\n```\n```cpp\nint x;\n```\n```\nlast()\n```"
    assert extract_program(text) == "last()\n"
    assert extract_program("print(1)") == "print(1)"


def test_ground_truth_formats_and_errors():
    assert parse_ground_truth(["assert f(1) == 2"]).format == "asserts"
    assert parse_ground_truth(json.dumps([{"input": "1", "output": "2"}])).format == "stdio"
    assert parse_ground_truth({"fn_name": "f", "inputs": [[1]], "outputs": [2]}).format == "function"
    assert parse_ground_truth({"inputs": ["1\n"], "outputs": ["2\n"]}).format == "stdio"
    assert parse_ground_truth({"test": "def check(candidate):\n    assert candidate(1) == 2\n",
                               "entry_point": "f"}).format == "check"
    for bad in ("not json", 5, [], {"fn_name": "f", "inputs": [[1]], "outputs": []}, ["assert ("],
                {"test": "x = 1", "entry_point": "f"}, "gASVCAAAAAAAAACMBHRlc3SULg=="):
        with pytest.raises(InvalidInput):
            parse_ground_truth(bad)
    with pytest.raises(InvalidInput):
        parse_ground_truth(["assert f(1) == 2"], stdio_only=True)


def test_stdout_normalization_and_float_tolerance():
    assert stdout_matches("1 2  \n3\n\n", "1 2\n3")
    assert not stdout_matches("1 2\n", "1  2\n")
    assert stdout_matches("0.3333333\n", "0.333333333", tol=1e-6)
    assert not stdout_matches("0.34\n", "0.333333333", tol=1e-6)


# -- formats and scoring -------------------------------------------------------------------------------
ADD = "```python\ndef add(a, b):\n    return a + b\n```"


@needs_bwrap
def test_assert_strings_pass_rate_all_threshold(url):
    tests = ["assert add(1, 2) == 3", "assert add(2, 2) == 4", "assert add(2, 2) == 5", "assert add('a', 'b') == 'ab'"]
    assert score(url, ADD, tests)["reward"] == 0.75
    assert score(url, ADD, tests, scoring="all")["reward"] == 0.0
    assert score(url, ADD, tests, scoring="threshold", threshold=0.99)["reward"] == 0.0
    assert score(url, ADD, tests, scoring="threshold", threshold=0.5)["reward"] == 0.75
    result = score(url, ADD, json.dumps(tests))
    assert [t["status"] for t in result["details"]["tests"]] == ["passed", "passed", "failed", "passed"]


@needs_bwrap
def test_scoring_is_an_item_option_with_the_server_setting_as_default(reward_server):
    """OLMORL_SANDBOX_SCORING is the default; an item's options.scoring overrides it; a bad value is that item
    `invalid`, naming the accepted values."""
    url = reward_server(workers=1, sandbox=SandboxSettings(parallelism=1, scoring="all"))
    tests = ["assert add(1, 2) == 3", "assert add(2, 2) == 5"]
    assert (score(url, ADD, tests)["reward"], score(url, ADD, tests)["details"]["scoring"]) == (0.0, "all")
    assert score(url, ADD, tests, scoring="pass_rate")["reward"] == 0.5
    bad = score(url, ADD, tests, scoring="most")
    assert (bad["status"], bad["reward"]) == ("invalid", None)
    assert bad["error"] == "options: scoring: Input should be 'pass_rate', 'all' or 'threshold'"


@needs_bwrap
def test_stdio_function_and_check_formats(url):
    prog = "```python\nimport sys\nnums = list(map(int, sys.stdin.read().split()))\nprint(sum(nums))\n```"
    pairs = [{"input": "1 2 3\n", "output": "6\n"}, {"input": "5\n", "output": "5"}, {"input": "1\n", "output": "2"}]
    assert score(url, prog, pairs, verifier="code_stdio")["reward"] == pytest.approx(2 / 3)
    fn = "```python\ndef pair(x):\n    return (x, x + 1)\n```"
    assert score(url, fn, {"fn_name": "pair", "inputs": [[1], [5]], "outputs": [[1, 2], [[5, 6]]]})["reward"] == 1.0
    leet = "```python\nclass Solution:\n    def twice(self, x):\n        return 2 * x\n```"
    assert score(url, leet, {"fn_name": "twice", "inputs": [[4]], "outputs": [8]})["reward"] == 1.0
    check = {"test": "def check(candidate):\n    assert candidate([1, 2]) == 3\n    assert candidate([]) == 0\n",
             "entry_point": "total"}
    assert score(url, "```python\ndef total(xs):\n    return sum(xs)\n```", check)["reward"] == 1.0
    assert score(url, "```python\ndef total(xs):\n    return sum(xs) + 1\n```", check)["reward"] == 0.0


@needs_bwrap
def test_float_tolerance_option(url):
    prog = "print(1/3)"
    pairs = [{"input": "", "output": "0.333333"}]
    assert score(url, prog, pairs, verifier="code_stdio")["reward"] == 0.0
    assert score(url, prog, pairs, verifier="code_stdio", float_tolerance=1e-5)["reward"] == 1.0


@needs_bwrap
def test_invalid_items_do_not_fail_the_batch(url):
    items = [{"verifier": "code", "response": ADD, "ground_truth": "nope"},
             {"verifier": "code", "response": ADD, "ground_truth": ["assert add(1, 1) == 2"]}]
    results = httpx.post(url + "/v1/verify", json={"items": items}, timeout=60).json()["results"]
    assert [r["status"] for r in results] == ["invalid", "ok"] and results[1]["reward"] == 1.0


# -- reward hacks: none may earn reward -------------------------------------------------------------------
HACKS = {
    "sys_exit_before_tests": "import sys\nsys.exit(0)\n",
    "sys_exit_during_test": "import sys\ndef add(a, b):\n    sys.exit(0)\n",
    "os_exit_during_test": "import os\ndef add(a, b):\n    os._exit(0)\n",
    "always_equal_object": "class Eq:\n    def __eq__(self, o): return True\n    def __sub__(self, o): return 0\n"
                           "    def __abs__(self): return 0\ndef add(a, b):\n    return Eq()\n",
    "int_subclass_equal": "class I(int):\n    def __eq__(self, o): return True\ndef add(a, b):\n    return I(0)\n",
    "patched_builtins": "import builtins, math\nbuiltins.abs = lambda x: 0\nbuiltins.sorted = lambda *a, **k: [3]\n"
                        "math.isclose = lambda *a, **k: True\ndef add(a, b):\n    return -99\n",
    "patched_assertion_error": "import builtins, sys\nbuiltins.AssertionError = KeyboardInterrupt\n"
                               "sys.excepthook = lambda *a: None\ndef add(a, b):\n    return -99\n",
    "fake_pass_markers": "import os, sys\nprint('PASSED\\nAll tests passed\\n{\"done\": true}')\n"
                         "for fd in range(3, 100):\n    try:\n        os.write(fd, b'{\"done\": true}\\n{\"site\": 0, \"values\": [3]}\\n')\n"
                         "    except OSError:\n        pass\ndef add(a, b):\n    return -99\n",
    "read_tests_from_memory": "import gc, re\ndef add(a, b):\n    for o in gc.get_objects():\n"
                              "        if isinstance(o, str) and 'add(' in o and '==' in o:\n"
                              "            return int(re.findall(r'== *(-?\\d+)', o)[0])\n    return -99\n",
    "read_tests_from_disk": "import glob\ndef add(a, b):\n    for p in glob.glob('/**/*', recursive=True)[:5000]:\n"
                            "        try:\n            if '31337' in open(p, errors='ignore').read(100000): return 31337\n"
                            "        except Exception: pass\n    return -99\n",
    "forked_daemon_writes_results": "import os, time\nif os.fork() == 0:\n    os.setsid()\n    time.sleep(0.3)\n"
                                    "    for fd in range(3, 64):\n        try: os.write(fd, b'{\"done\": true}\\n')\n"
                                    "        except OSError: pass\n    os._exit(0)\ndef add(a, b):\n    return -99\n",
    "tamper_output_channel": "import os\nfor fd in range(0, 64):\n    try: os.close(fd)\n    except OSError: pass\n"
                             "def add(a, b):\n    return -99\n",
    # Reaches the harness's own reporting functions and forges every frame it can, without knowing
    # the expected values (they never enter the sandbox), then exits before the real result.
    "frame_walk_forgery": "import os, sys\ndef add(a, b):\n    f = sys._getframe(1)\n    while f is not None:\n"
                          "        send = f.f_locals.get('send')\n        if send:\n"
                          "            for site in range(3):\n                for guess in (True, 0, 1e-12):\n"
                          "                    send({'site': site, 'values': [guess]})\n"
                          "            send({'done': True})\n            os._exit(0)\n        f = f.f_back\n    return -99\n",
}


@needs_bwrap
@pytest.mark.parametrize("name", sorted(HACKS))
def test_reward_hack_earns_nothing(url, name):
    tests = ["assert add(1, 2) == 31337", "assert abs(add(1, 1) - 31337) < 1e-9", "assert sorted([add(1, 2)]) == [3]"]
    result = score(url, f"```python\n{HACKS[name]}```", tests)
    assert result["status"] == "ok", result
    assert result["reward"] == 0.0, result["details"]


@needs_bwrap
def test_hack_cannot_fake_a_humaneval_check(url):
    check = {"test": "def check(candidate):\n    assert candidate(2) == 31337\n    assert candidate(3) == 4\n",
             "entry_point": "add1"}
    for hack in ("import sys\ndef add1(x):\n    sys.exit(0)\n",
                 "class Eq:\n    def __eq__(self, o): return True\ndef add1(x):\n    return Eq()\n"):
        assert score(url, hack, check)["reward"] == 0.0


# -- legitimate programs under the same limits -----------------------------------------------------------
LEGIT_STDIO = {
    "stdin_heavy": ("import sys\ndata = sys.stdin.buffer.read().split()\nprint(sum(map(int, data)))\n",
                    " ".join(str(i) for i in range(200000)) + "\n", str(sum(range(200000)))),
    "recursion": ("import sys\nsys.setrecursionlimit(10000)\ndef depth(n):\n    return 0 if n == 0 else 1 + depth(n - 1)\n"
                  "print(depth(int(input())))\n", "5000\n", "5000"),
    "moderately_slow": ("n = int(input())\ntotal = 0\nfor i in range(n):\n    total += i * i % 7\nprint(total)\n",
                        "1000000\n", str(sum(i * i % 7 for i in range(1000000)))),
    "stdlib": ("import heapq, bisect, itertools, collections, functools, math, re, json, fractions, decimal\n"
               "c = collections.Counter(input().split())\nprint(c.most_common(1)[0][0], math.comb(10, 3), "
               "json.dumps(sorted(c)), fractions.Fraction(1, 3) + fractions.Fraction(1, 6))\n",
               "b a b c\n", 'b 120 ["a", "b", "c"] 1/2'),
    "main_guard_and_exit": ("def main():\n    print(int(input()) + 1)\n    exit()\n\nif __name__ == '__main__':\n    main()\n",
                            "41\n", "42"),
    "threads_and_tempfile": ("import threading, tempfile\nout = []\nts = [threading.Thread(target=out.append, args=(i,)) "
                             "for i in range(8)]\n[t.start() for t in ts]\n[t.join() for t in ts]\n"
                             "with tempfile.TemporaryFile() as f:\n    f.write(b'ok'); f.seek(0); print(f.read().decode(), "
                             "sum(out))\n", "", "ok 28"),
}


@needs_bwrap
@pytest.mark.parametrize("name", sorted(LEGIT_STDIO))
def test_legitimate_program_passes(url, name):
    program, stdin, expected = LEGIT_STDIO[name]
    result = score(url, f"```python\n{program}```", [{"input": stdin, "output": expected}], verifier="code_stdio")
    assert result["reward"] == 1.0, result["details"]


# -- compatibility routes -----------------------------------------------------------------------------
@needs_bwrap
def test_sandbox_fusion_run_code(url):
    r = httpx.post(url + "/run_code", json={"code": "print(input()[::-1])", "language": "python",
                                            "stdin": "abc", "run_timeout": 5}).json()
    assert r["status"] == "Success" and r["run_result"]["stdout"] == "cba\n" and r["run_result"]["return_code"] == 0
    r = httpx.post(url + "/run_code", json={"code": "import time\ntime.sleep(10)", "language": "python",
                                            "run_timeout": 0.5}).json()
    assert r["status"] == "Failed" and r["run_result"]["status"] == "TimeLimitExceeded"
    r = httpx.post(url + "/run_code", json={"code": "raise ValueError('x')", "language": "python"}).json()
    assert r["status"] == "Failed" and r["run_result"]["return_code"] == 1 and "ValueError" in r["run_result"]["stderr"]
    r = httpx.post(url + "/run_code", json={"code": "x", "language": "cobol"}).json()
    assert r["status"] == "SandboxError" and "unknown language" in r["message"]
    assert httpx.get(url + "/v1/ping").text == "pong"


@needs_bwrap
def test_open_instruct_test_program_routes(url):
    r = httpx.post(url + "/test_program", json={"program": "def f(x):\n    return x * 2",
                                                "tests": ["assert f(1) == 2", "assert f(2) == 5"],
                                                "max_execution_time": 1.0}).json()
    assert r["results"] == [1, 0] and r["runtimes"][1] == -1.0 and r["runtimes"][0] >= 0
    r = httpx.post(url + "/test_program_stdio", json={"program": "print(int(input()) * 2)",
                                                      "tests": [{"input": "2\n", "output": "4\n"},
                                                                {"input": "3\n", "output": "7\n"}]}).json()
    assert r["results"] == [1, 0]
    assert httpx.post(url + "/test_program", json={"program": "x", "tests": "garbage"}).status_code == 400
    assert httpx.get(url + "/health").json() == {"status": "healthy"}


def test_a_test_source_already_found_valid_is_not_parsed_again(monkeypatch):
    """Every completion of a GRPO group brings its prompt's tests again: the server parses each source once."""
    import ast

    from olmorl.rewards.code import _tests

    parsed = []
    real_parse = ast.parse

    def counting_parse(source, *args, **kwargs):
        parsed.append(source)
        return real_parse(source, *args, **kwargs)

    monkeypatch.setattr(_tests.ast, "parse", counting_parse)
    fresh = uuid.uuid4().hex  # sources this process has not seen yet
    check = {"test": f"def check(candidate):\n    assert candidate(3) == 4  # {fresh}\n", "entry_point": "f"}
    asserts = [f"assert g(1) == 2  # {fresh}"]
    for _ in range(3):
        assert parse_ground_truth(check).tests[0].input.code.endswith("check(f)\n")
        assert parse_ground_truth(asserts).format == "asserts"
    assert parsed == [check["test"], asserts[0]]
    for bad in ({"test": "def check(c):\n    pass\n", "entry_point": "f"}, ["x = 1"], ["assert ("]):
        for _ in range(2):  # an invalid source is refused every time
            with pytest.raises(InvalidInput):
                parse_ground_truth(bad)
