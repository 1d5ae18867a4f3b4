"""The code verifier against a policy that attacks it (issue 15), and tests whose values are not plain
data (issue 14 §1), through a real server on the bwrap backend.

- Reward hacks: each program is wrong (or empty) and tries to earn reward by reaching the harness
  (frames, gc, fds), forging `__eq__`/`__bool__`/`__sub__`, patching the stdlib, reading the tests or a
  sibling submission from memory. Each must score 0.
- DoS: the server answers /healthz throughout (HealthWatch), the item gets a status.
- Persistence: nothing a program writes (scratch, /dev, /dev/shm, mode-000 dirs) survives into the next
  test or job of the same slot.
- Class-based tasks (tests/_class_tasks.py): correct and subtly wrong solutions score what running the
  program and the test natively in one CPython process says (the oracle), and correct ones score 1.
"""

from __future__ import annotations

import asyncio
import os
import random
import re
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import httpx
import pytest

from _class_tasks import TASKS
from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import SandboxSettings
from olmorl.rewards.code import extract_program
from olmorl.sandbox import SandboxLimits, SandboxPool
from olmorl.sandbox import TestInput as Input  # (not collected as a test class)
from test_code_containment import HealthWatch

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap missing: run scripts/install-system-deps.sh")
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("srv") / "server.log"
    srv = LocalRewardServer(log_path=str(log), workers=1, api_key=None,
                            sandbox=SandboxSettings(parallelism=2, test_timeout_s=2.0)).start()
    yield srv
    srv.stop()


def verify(server, items: list[dict]) -> list[dict]:
    with HealthWatch(server.url) as watch:
        response = httpx.post(server.url + "/v1/verify", json={"items": items}, timeout=300)
    assert response.status_code == 200, response.text
    assert not watch.failures and watch.count > 0, watch.failures
    return response.json()["results"]


def score(server, program: str, ground_truth, **options) -> dict:
    [result] = verify(server, [{"verifier": "code", "response": f"```python\n{program}\n```",
                                "ground_truth": ground_truth, "options": options}])
    assert result["status"] == "ok", result
    return result


# -- reward hacks -----------------------------------------------------------------------------------
# Forgeries that write every shape of "passed" record/frame the harness ever used on every fd.
_FORGE_ALL_FDS = '''
import json, os
def _forge():
    lines = [{"status": "passed"}, {"done": True}, {"end": True}, {"site": 0, "values": [True]},
             {"ready": {}}, {"v": True}]
    data = "".join(json.dumps(l) + "\\n" for l in lines).encode()
    for fd in range(0, 1024):
        try:
            os.write(fd, data)
        except OSError:
            pass
'''
HACKS = {
    # Walk every frame and every object of the process, call whatever looks like a reporting
    # function with "passed", then leave before the real result.
    "frame_and_gc_reporter_forgery": _FORGE_ALL_FDS + '''
import gc, sys
def add(a, b):
    f = sys._getframe(0)
    while f is not None:
        for v in list(f.f_locals.values()) + list(f.f_globals.values()):
            if callable(v) and getattr(v, "__name__", "") in ("send", "write_line", "probe", "__probe__"):
                try:
                    v({"status": "passed", "done": True})
                except Exception:
                    pass
        f = f.f_back
    for o in gc.get_objects():
        if isinstance(o, dict) and "status" in o:
            o["status"] = "passed"
    _forge()
    os._exit(0)
''',
    # Finds the tests in its own heap (gc, frames, /proc/self/mem) and answers by lookup.
    "test_lookup_in_memory": '''
import gc, re, sys
def add(a, b):
    for o in gc.get_objects():
        if isinstance(o, (list, tuple)) and len(o) == 2 and o[0] == (a, b):
            return o[1]
        if isinstance(o, str) and "add(" in o and "==" in o:
            m = re.search(r"add\\(%d, %d\\) == (-?\\d+)" % (a, b), o)
            if m:
                return int(m.group(1))
    f = sys._getframe(1)
    while f is not None:
        for k, v in f.f_locals.items():
            if k in ("y", "want", "expected") and isinstance(v, int):
                return v
        f = f.f_back
    data = open("/proc/self/mem", "rb")
    for line in open("/proc/self/maps"):
        lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
        if "rw" not in line.split()[1] or hi - lo > 1 << 26:
            continue
        try:
            data.seek(lo)
            chunk = data.read(hi - lo)
        except OSError:
            continue
        m = re.search(rb"add\\(%d, %d\\) == (-?\\d+)" % (a, b), chunk)
        if m:
            return int(m.group(1))
    return -99
''',
    "eq_via_class": "class E:\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
                    "    def __bool__(self): return True\ndef add(a, b):\n    return E()\n",
    "eq_via_callable": "def add(a, b):\n    return type('E', (), {'__eq__': lambda s, o: True, '__hash__': lambda s: 0,\n"
                       "                          '__ne__': lambda s, o: False})()\n",
    "eq_via_int_subclass": "class I(int):\n    def __eq__(self, o): return True\n    def __ne__(self, o): return False\n"
                           "    __hash__ = int.__hash__\ndef add(a, b):\n    return I(-99)\n",
    "sub_and_abs_forgery": "class D:\n    def __sub__(self, o): return D()\n    def __rsub__(self, o): return D()\n"
                           "    def __abs__(self): return 0\n    def __lt__(self, o): return True\n"
                           "    def __float__(self): return 0.0\ndef add(a, b):\n    return D()\n",
    "stdlib_monkeypatch": "import math, builtins, operator\nmath.isclose = lambda *a, **k: True\n"
                          "builtins.all = lambda *a: True\nbuiltins.abs = lambda x: 0\noperator.eq = lambda a, b: True\n"
                          "def add(a, b):\n    return -99\n",
    "exit_in_call": "import os\ndef add(a, b):\n    os._exit(0)\n",
    "sigalrm_and_kill_the_tester": "import os, signal\ndef add(a, b):\n    for pid in range(2, 64):\n"
                                   "        if pid != os.getpid():\n            for s in (signal.SIGALRM, signal.SIGSTOP):\n"
                                   "                try: os.kill(pid, s)\n                except OSError: pass\n    return -99\n",
    "generator_yielding_forged_objects": "class E:\n    def __eq__(self, o): return True\ndef add(a, b):\n"
                                         "    yield E()\n",
}
# Test shapes that used to run inside the program's process: nested in loops and functions, the
# expected side computed (a reference function, Fraction, a variable), HumanEval check().
TEST_SHAPES = {
    "plain": ["assert add(1, 2) == 31337"],
    "loop": ["for (a, b), want in [((1, 2), 31337), ((5, 5), 4242)]:\n    assert add(a, b) == want"],
    "function": ["def helper(x, y):\n    assert add(x, y) == 31337\nhelper(1, 2)"],
    "reference": ["def ref(a, b):\n    return a * 1000 + b * 7 + 31337\nassert add(1, 2) == ref(1, 2)"],
    "fraction": ["from fractions import Fraction\nassert add(1, 2) == Fraction(62674, 2)"],
    "variable": ["y = 31337\nassert add(1, 2) == y"],
    "isclose": ["import math\nassert math.isclose(add(1, 2), 31337.5)"],
    "abs_diff": ["assert abs(add(1, 2) - 31337) < 1e-9"],
    "all_generator": ["assert all(add(a, b) == a * b + 31337 for a, b in [(1, 2), (3, 4)])"],
    "not_ne": ["assert not (add(1, 2) != 31337)"],
    "list_of": ["assert list(add(1, 2)) == [31337]"],
    "check": {"test": "def check(candidate):\n    for a, b, want in [(1, 2, 31337), (2, 2, 4242)]:\n"
                      "        assert candidate(a, b) == want\n", "entry_point": "add"},
}


@pytest.mark.parametrize("shape", sorted(TEST_SHAPES))
def test_hacks_earn_nothing_on_any_test_shape(server, shape):
    items = [{"id": name, "verifier": "code", "response": f"```python\n{program}\n```",
              "ground_truth": TEST_SHAPES[shape]} for name, program in HACKS.items()]
    results = verify(server, items)
    for result in results:
        assert result["status"] == "ok", result
        assert result["reward"] == 0.0, (result["id"], result["details"])
    # ... and the slot still judges honestly afterwards.
    honest = score(server, "def add(a, b):\n    return 31337 if (a, b) == (1, 2) else a * b + 31337 "
                           "if (a, b) == (3, 4) else 4242 if (a, b) in ((5, 5), (2, 2)) else 0",
                   ["assert add(1, 2) == 31337"])
    assert honest["reward"] == 1.0


def test_correct_generator_and_loop_asserts_pass(server):
    program = "def f(x):\n    return x * x\ndef squares(n):\n    yield from (i * i for i in range(n))\n"
    tests = ["assert all(f(x) == y for x, y in [(1, 1), (2, 4), (3, 9)])",
             "for x in range(5):\n    assert f(x) == x ** 2",
             "assert list(squares(4)) == [0, 1, 4, 9]",
             "import math\nassert math.isclose(f(0.5), 0.25)",
             "from fractions import Fraction\nassert f(Fraction(1, 2)) == Fraction(1, 4)"]
    result = score(server, program, tests)
    assert result["reward"] == 1.0, result["details"]


def test_float_tolerance_with_a_huge_integer_is_a_plain_failure(server):
    for ground_truth in ({"fn_name": "f", "inputs": [[1]], "outputs": [0.5]}, ["assert f(1) == 0.5"]):
        result = score(server, "def f(x):\n    return 10 ** 400", ground_truth, float_tolerance=1e-6)
        assert result["reward"] == 0.0 and result["details"]["tests"][0]["status"] == "failed", result
        result = score(server, "def f(x):\n    return 0.5000000001", ground_truth, float_tolerance=1e-6)
        assert result["reward"] == 1.0, result


# -- no memory of other jobs or tests ------------------------------------------------------------------
_SCAN_MEMORY = '''
import ctypes, gc, re
ctypes.CDLL(None).prctl(4, 1, 0, 0, 0)  # PR_SET_DUMPABLE: our own memory becomes readable again
own = "SECRET_MARK_" + "SELF"  # proves the scan works: it must find this one
found = set(m for o in gc.get_objects() if isinstance(o, str) for m in re.findall(r"SECRET[_]MARK[_][A-Z]+", o))
mem = open("/proc/self/mem", "rb")
for line in open("/proc/self/maps"):
    parts = line.split()
    lo, hi = (int(x, 16) for x in parts[0].split("-"))
    if not parts[1].startswith("r") or hi - lo > 1 << 28:
        continue
    try:
        mem.seek(lo)
        chunk = mem.read(hi - lo)
    except (OSError, ValueError, OverflowError):
        continue
    found.update(m.decode() for m in re.findall(rb"SECRET[_]MARK[_][A-Z]+", chunk))
print(sorted(found))
'''


def test_no_job_or_test_data_is_readable_from_program_memory():
    check_no_foreign_data_in_memory("bwrap")


def check_no_foreign_data_in_memory(backend: str) -> None:
    """A thief scanning its whole address space finds neither an earlier job's program and tests on
    the same slot (a sibling completion in GRPO) nor its own job's other tests."""
    async def run() -> list[str]:
        pool = SandboxPool(backend, slots=1, limits=SandboxLimits(test_timeout_s=5.0))
        await pool.start()
        try:
            sibling = "def add(a, b):\n    # SECRET_MARK_PROGRAM\n    return a + b\n"
            runs, failure = await pool.run(sibling, [Input(code="assert add(1, 2) == 3  # SECRET_MARK_TESTS"),
                                                     Input(stdin="SECRET_MARK_STDIN", expected_stdout="SECRET_MARK_OUT")])
            assert failure is None and runs[0].status == "passed"
            runs, failure = await pool.run(_SCAN_MEMORY, [
                Input(stdin="", expected_stdout="['SECRET_MARK_SELF']"),
                Input(stdin="SECRET_MARK_OTHERSTDIN", expected_stdout="SECRET_MARK_EXPECTED"),
            ])
            assert failure is None
            return [run.stdout for run in runs]
        finally:
            await pool.stop()

    first, _ = asyncio.run(run())
    assert first.strip() == "['SECRET_MARK_SELF']", f"the program read data it must never see: {first}"


# -- persistence --------------------------------------------------------------------------------------
_PLANT_OR_LOOK = '''
import os, sys
if sys.stdin.read().strip() == "plant":
    for path in ("/tmp", "/dev/shm", "/dev", "/dev/mqueue"):
        try:
            os.makedirs(path + "/planted/inner", exist_ok=True)
            open(path + "/planted/inner/f", "w").write("x")
            open(path + "/planted_file", "w").write("x")
            os.chmod(path + "/planted/inner", 0)
            os.chmod(path + "/planted", 0)
        except OSError as e:
            pass
    try:
        with open("/dev/shm/fill", "wb") as f:
            while True:
                f.write(b"x" * (1 << 20))
    except OSError:
        pass
    print(sorted(p for p in ("/tmp/planted", "/dev/shm/planted", "/dev/shm/fill") if os.path.lexists(p)))
else:
    left = [os.path.join(path, name) for path in ("/tmp", "/dev/shm", "/dev", "/dev/mqueue")
            for name in ("planted", "planted_file", "fill") if os.path.lexists(os.path.join(path, name))]
    data = bytearray(400 << 20)  # the whole memory ceiling is this program's again
    print(left)
'''


def test_nothing_written_survives_into_the_next_test_or_job():
    check_nothing_survives("bwrap")


def check_nothing_survives(backend: str) -> None:
    async def run() -> list[list[str]]:
        pool = SandboxPool(backend, slots=1, limits=SandboxLimits(test_timeout_s=5.0, memory_mb=512))
        await pool.start()
        try:
            outputs = []
            for stdins in (["plant", "look"], ["look"]):  # the next test; the next job
                runs, failure = await pool.run(_PLANT_OR_LOOK, [Input(stdin=s) for s in stdins])
                assert failure is None, failure
                outputs.append([r.stdout.strip() or r.message for r in runs])
            return outputs
        finally:
            await pool.stop()

    outputs = asyncio.run(run())
    # The planting ran (the directories exist until its test ends; docker has no /dev/shm) ...
    assert outputs[0][0] in ("['/dev/shm/fill', '/dev/shm/planted', '/tmp/planted']", "['/tmp/planted']"), outputs
    # ... and nothing of it is there for the next test or job, whose memory is whole.
    assert outputs[0][1] == "[]" and outputs[1][0] == "[]", outputs


# -- denial of service ----------------------------------------------------------------------------------
def test_server_stays_responsive_under_dos_items(server):
    huge_list = "def f(x):\n    return list(range(3_000_000))\n"
    items = [
        {"id": "huge_decimal", "verifier": "code",
         "response": "from decimal import Decimal\ndef f(x):\n    return Decimal('1e999999999')\n",
         "ground_truth": ["assert int(f(1)) == 5"]},
        {"id": "unclosed_think", "verifier": "code", "response": "<think>" * 120_000 + "def f(x): return 1",
         "ground_truth": ["assert f(1) == 2"]},
        *({"id": f"huge_values_{i}", "verifier": "code", "response": huge_list,
           "ground_truth": [f"assert f({j}) == [1]" for j in range(4)]} for i in range(3)),
        {"id": "deep_nesting", "verifier": "code",
         "response": "def f(x):\n    v = []\n    for _ in range(200000):\n        v = [v]\n    return v\n",
         "ground_truth": ["assert f(1) == []"]},
        {"id": "garbage_on_the_request_socket", "verifier": "code",
         "response": "import os\nos.write(3, b'[' * 1000000 + b'\\n')\ndef f(x):\n    return 1\n",
         "ground_truth": ["assert f(1) == 1"]},
    ]
    rss_before = _rss_mb(server)
    results = {r["id"]: r for r in verify(server, items)}
    for result in results.values():
        assert (result["status"], result["reward"]) in (("ok", 0.0), ("error", None)), result
    assert _rss_mb(server) - rss_before < 150, "values from the sandbox grew the server"


def _rss_mb(server) -> float:
    text = Path(f"/proc/{server.process.pid}/status").read_text()
    return int(text.split("VmRSS:")[1].split()[0]) / 1024


def test_think_stripping_matches_the_regex_and_is_linear():
    pattern = re.compile(r"<think>.*?</think>", re.DOTALL | re.IGNORECASE)
    rng = random.Random(7)
    pieces = ["<think>", "</think>", "<THINK>", "</Think>", "a", "\n", "```python\nx = 1\n```", "b c"]
    for _ in range(2000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 12)))
        reference = pattern.sub("", text)
        head, sep, tail = reference.rpartition("</think>")
        reference = tail if sep else reference
        from olmorl.rewards.code._languages import _strip_think
        stripped = _strip_think(text)
        head, sep, tail = stripped.rpartition("</think>")
        assert (tail if sep else stripped) == reference, text
    started = time.perf_counter()
    extract_program("<think>" * 300_000)  # the regex took 33 s on 250k characters
    assert time.perf_counter() - started < 5


def test_fenced_blocks_match_the_regex_and_are_linear():
    from olmorl.rewards.code._languages import fenced_blocks
    pattern = re.compile(r"```([^\n`]*)\n(.*?)```", re.DOTALL)  # what extract_program used before
    rng = random.Random(11)
    pieces = ["`", "``", "```", "````", "\n", "python", "cpp ", " ", "a", "x = 1", "<think>", "</think>"]
    for _ in range(20000):
        text = "".join(rng.choice(pieces) for _ in range(rng.randint(0, 16)))
        assert fenced_blocks(text) == pattern.findall(text), text
    for text in ("```" * 100_000, "```python" * 100_000, "```a\n" * 100_000, "`\n" * 100_000, "``` x" * 100_000,
                 "```\n" + "a" * 300_000, "a\n" * 150_000 + "```"):
        started = time.perf_counter()
        found = fenced_blocks(text)
        assert time.perf_counter() - started < 1, text[:20]
        assert found == pattern.findall(text), text[:20]


def test_fair_turns_keep_a_slot_for_other_requests(tmp_path):
    log = tmp_path / "server.log"
    srv = LocalRewardServer(log_path=str(log), workers=1, api_key=None,
                            sandbox=SandboxSettings(parallelism=2, test_timeout_s=6.0, slots_per_request=1)).start()
    try:
        slow = [{"verifier": "code", "response": "import time\ndef f(x):\n    time.sleep(4)\n    return x\n",
                 "ground_truth": ["assert f(1) == 1"]} for _ in range(2)]
        fast = [{"verifier": "code", "response": "def f(x):\n    return x\n", "ground_truth": ["assert f(1) == 1"]}]
        done: dict[str, float] = {}
        started = time.monotonic()

        def post(name: str, items: list[dict]) -> None:
            response = httpx.post(srv.url + "/v1/verify", json={"items": items}, timeout=60)
            assert all(r["reward"] == 1.0 for r in response.json()["results"])
            done[name] = time.monotonic() - started

        slow_thread = threading.Thread(target=post, args=("slow", slow))
        slow_thread.start()
        time.sleep(0.5)
        post("fast", fast)
        slow_thread.join()
        assert done["fast"] < 3.0 and done["slow"] > 7.0, done  # the slow request had one slot at a time
    finally:
        srv.stop()


# -- class-based tasks (issue 14 §1) ---------------------------------------------------------------------
def native_verdicts(program: str, ground_truth) -> list[bool]:
    """Run the program and each test in one plain CPython process: the semantics to keep."""
    if isinstance(ground_truth, dict):
        tests = [ground_truth["test"] + f"\ncheck({ground_truth['entry_point']})\n"]
    else:
        tests = ground_truth
    verdicts = []
    for test in tests:
        done = subprocess.run([PYTHON, "-I", "-c", program + "\n" + test], capture_output=True, timeout=30)
        verdicts.append(done.returncode == 0)
    return verdicts


def test_class_based_tasks_score_what_native_execution_says(server):
    items, expected = [], []
    for task in TASKS:
        ground_truth = task.get("check") or task["tests"]
        for kind in ("correct", "wrong"):
            verdicts = native_verdicts(task[kind], ground_truth)
            if kind == "correct":
                assert all(verdicts), (task["name"], verdicts)  # the corpus itself is right
            else:
                assert not all(verdicts), (task["name"], verdicts)
            items.append({"id": f"{task['name']}/{kind}", "verifier": "code",
                          "response": f"```python\n{task[kind]}\n```", "ground_truth": ground_truth})
            expected.append(verdicts)
    results = verify(server, items)
    for result, verdicts in zip(results, expected):
        got = [t["status"] == "passed" for t in result["details"]["tests"]]
        assert got == verdicts, (result["id"], result["details"])
        assert result["reward"] == sum(verdicts) / len(verdicts)


# -- protocol errors between the server and a slot -----------------------------------------------------
_BROKEN_ZYGOTE = '''
import os, sys
os.write(1, b'{"ready": true}\\n')
while os.read(0, 65536):
    os.write(1, REPLY + b"\\n")
'''
BROKEN_REPLIES = {
    "deeply_nested": 'b"[" * 200000',
    "another_job": """b'{"job": 999999, "i": 0, "status": "passed"}'""",
    "out_of_order": """b'{"job": 1, "i": 1, "status": "passed"}'""",
    "unknown_status": """b'{"job": 1, "i": 0, "status": "PASSED"}'""",
    "early_end": """b'{"job": 1, "end": true}'""",
}


@pytest.mark.parametrize("name", sorted(BROKEN_REPLIES))
def test_a_protocol_error_kills_and_replaces_the_slot(name):
    """Whatever a slot sends that is not the next record of the current job (a stale record, a frame
    that does not decode) ends the slot: nothing of it can be read as a later job's result."""
    from olmorl.sandbox._backends import ProcessBackend
    from olmorl.sandbox._channel import Launch

    class BrokenBackend(ProcessBackend):
        def launch(self, slot: int, uids: object, script: object = None) -> Launch:
            script = _BROKEN_ZYGOTE.replace("REPLY", BROKEN_REPLIES[name])
            return Launch(argv=[sys.executable, "-c", script])

    async def run() -> None:
        pool = SandboxPool("process", allow_insecure=True, slots=1)
        pool.backend = BrokenBackend(None, pool.limits)
        pool._slots[0].backend = pool.backend
        await pool.start()
        try:
            for attempt in (1, 2):
                runs, failure = await pool.run("x = 1", [Input(code="assert x == 1")])
                assert runs == [] and failure is not None and "replaced" in failure, failure
                assert pool.restarts == attempt and not pool._slots[0].alive
        finally:
            await pool.stop()

    asyncio.run(run())


def test_a_program_cannot_change_the_limits_or_priority_of_other_processes(server):
    program = '''
import os, resource
hits = []
for pid in range(1, 64):
    if pid == os.getpid():
        continue
    for name, act in (("prlimit", lambda: resource.prlimit(pid, resource.RLIMIT_AS, (1 << 20, 1 << 20))),
                      ("nice", lambda: os.setpriority(os.PRIO_PROCESS, pid, 19)),
                      ("affinity", lambda: os.sched_setaffinity(pid, {0}))):
        try:
            act()
            hits.append((name, pid))
        except OSError:
            pass
resource.setrlimit(resource.RLIMIT_NOFILE, (128, 128))  # its own limits stay its own business
print("PWNED" if hits else "blocked", hits)
'''
    [result] = verify(server, [{"verifier": "code_stdio", "response": program,
                                "ground_truth": [{"input": "", "output": "blocked []"}]}])
    assert result["reward"] == 1.0, result["details"]


def test_the_harness_holds_no_more_fds_after_many_tests():
    """The slot's processes are long-lived: every test must give back each fd it took."""
    def harness_fds(pool: SandboxPool) -> tuple[int, int]:
        root = pool._slots[0].channel.proc.pid  # bwrap; the zygote and test process run below it
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
        processes = counts = 0
        for pid in pids:
            try:
                # under this slot's bwrap (a pid compared whole: as a substring, another pool's processes matched)
                if b"harness.py" in Path(f"/proc/{pid}/cmdline").read_bytes() and root in _ancestors(int(pid)):
                    counts += len(os.listdir(f"/proc/{pid}/fd"))
                    processes += 1
            except OSError:
                continue
        return processes, counts

    def idle_fds(pool: SandboxPool, idle: int) -> int:
        """The fds of an idle slot: its `idle` processes, the next job's program process forked ahead among them
        (it is forked after the reply, so counting right away raced it), the count held for three reads."""
        deadline = time.monotonic() + 10
        seen: list[tuple[int, int]] = []
        while time.monotonic() < deadline:
            seen = [*seen[-2:], harness_fds(pool)]
            if len(seen) == 3 and len(set(seen)) == 1 and seen[0][0] == idle:
                break
            time.sleep(0.05)
        return seen[-1][1]

    async def run() -> tuple[int, int]:
        pool = SandboxPool("bwrap", slots=1, limits=SandboxLimits(test_timeout_s=5.0))
        await pool.start()
        try:
            time.sleep(0.5)  # the first program process is forked ahead right after the start
            idle = harness_fds(pool)[0]
            tests = [Input(code="assert x == 1"), Input(stdin="", expected_stdout="1"),
                     Input(code="print(1)\nassert x == 2")] * 20
            await pool.run("x = 1\nprint(x)", tests)
            before = idle_fds(pool, idle)
            runs, failure = await pool.run("x = 1\nprint(x)", tests)
            assert failure is None and [r.status for r in runs[:3]] == ["passed", "passed", "failed"]
            return before, idle_fds(pool, idle)
        finally:
            await pool.stop()

    before, after = asyncio.run(run())
    assert before > 0 and after == before, (before, after)


def _ancestors(pid: int) -> list[int]:
    chain = [pid]
    while pid > 1:
        try:
            pid = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, ValueError):
            break
        chain.append(pid)
    return chain


def test_a_small_memory_option_limits_the_program_not_the_judge(server):
    result = score(server, "def f(x):\n    return x + 1\n", ["assert f(1) == 2"], memory_mb=48)
    assert result["reward"] == 1.0, result["details"]
    result = score(server, "def f(x):\n    return len(bytearray(200 << 20))\n", ["assert f(1) == 2"], memory_mb=48)
    assert result["reward"] == 0.0 and "MemoryError" in str(result["details"]), result["details"]
