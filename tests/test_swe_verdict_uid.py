"""Two more of the verdict's boundaries, on a real server and the real Docker engine: Harbor's [verifier] `user`
(test.sh, and the agent's code it runs, as that user: /tests and the image's files out of their reach) and the
bytecode cache (no test run reads a `.pyc` beside a source, which code under test can forge for a module
loaded after it). Each attack here earned 1.0 on the verify before (which ran test.sh as root whatever the
task said, and let Python read the repository's `__pycache__`)."""

from __future__ import annotations

import shutil

import pytest

from olmorl.rewards.engine._registry import InvalidInput
from olmorl.rewards.environments.swe import load_task
from swe_support import TASKS, answer_task, docker_or_skip, swe_server
from swe_support import client  # noqa: F401 (a fixture)

pytestmark = docker_or_skip()

TEST_SH = ("#!/bin/bash\ncd /app\npython3 /tests/smoke.py\npython3 /tests/test_outputs.py\n"
           "if [ $? -eq 0 ]; then echo 1 > /logs/verifier/reward.txt; else echo 0 > /logs/verifier/reward.txt; fi\n")
SMOKE = "import sys\n\nsys.path.insert(0, '/app')\nimport answer  # noqa\n"
CHECK = "import sys\n\nsys.path.insert(0, '/app')\nfrom answer import answer\n\nsys.exit(0 if answer() == 42 else 1)\n"
# a wrong answer whose import (by the smoke step) replaces the check with one that passes and then puts the
# original back: /tests is as the task has it when test.sh ends, so only a permission stops it
REWRITE_CHECK = """import os, sys

CHECK = '/tests/test_outputs.py'
if os.path.basename(sys.argv[0]) == 'smoke.py':
    print('ATTACK uid', os.getuid(), flush=True)
    original = open(CHECK).read()
    try:
        with open(CHECK, 'w') as out:
            out.write('import sys\\nopen(__file__, "w").write(%r)\\nsys.exit(0)\\n' % original)
        print('ATTACK rewrote the check', flush=True)
    except OSError as exc:
        print('ATTACK refused', type(exc).__name__, flush=True)


def answer():
    return 0
"""
HONEST = "import os\n\nprint('tests ran as uid', os.getuid())\n\n\ndef answer():\n    return 42\n"
# every hidden test passes: the forged bytecode's source
PASSING_TESTS = ("import unittest\\n\\n\\nclass AddTest(unittest.TestCase):\\n    def test_add(self):\\n        pass\\n\\n"
                 "    def test_add_negative(self):\\n        pass\\n\\n\\nclass MulTest(unittest.TestCase):\\n"
                 "    def test_mul(self):\\n        pass\\n")
# appended to calc/__init__.py (imported by the hidden tests): a `.pyc` of tests that pass, stamped with the mtime
# and size of the hidden test module {module} (loaded after calc: the command's second step, or the next test
# id's module), beside it, where Python's import looks
FORGE_BYTECODE = """
import importlib._bootstrap_external as _external
import os as _os
import sys as _sys


def _forge():
    source = _os.path.join(_os.getcwd(), "tests", "{module}.py")
    cache = _os.path.join(_os.path.dirname(source), "__pycache__")
    target = _os.path.join(cache, "{module}." + _sys.implementation.cache_tag + ".pyc")
    stat = _os.stat(source)
    data = _external._code_to_timestamp_pyc(compile("{passing}", source, "exec"), stat.st_mtime,
                                            stat.st_size)
    _os.makedirs(cache, exist_ok=True)
    with open(target + ".new", "wb") as out:
        out.write(data)
    _os.replace(target + ".new", target)
    print("ATTACK wrote", target, flush=True)


_forge()
"""


def harbor_task(task, user: str | None):
    """A Harbor task whose test.sh imports the agent's /app/answer.py in a smoke step before its check."""
    answer_task(task, {"test.sh": TEST_SH, "smoke.py": SMOKE, "test_outputs.py": CHECK},
                f'user = "{user}"\n' if user else "")


# Harbor [verifier] env: test.sh checks a variable the task sets; a value is text, never expanded on the server
ENV_TEST_SH = """#!/bin/bash
echo "ANSWER_WANTED=$ANSWER_WANTED STRICT=$STRICT HOME_TEXT=$HOME_TEXT"
if [ "$ANSWER_WANTED" = 42 ] && python3 /tests/test_outputs.py; then reward=1; else reward=0; fi
echo $reward > /logs/verifier/reward.txt
"""
ENV_TABLE = 'env = { ANSWER_WANTED = 42, STRICT = true, HOME_TEXT = "${HOME}" }\n'


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("swe-uid")
    root = tmp / "tasks"
    two_steps = shutil.copytree(TASKS / "calc-bug", root / "calc-two-steps")
    (two_steps / "swe.toml").write_text('[tests]\ncommand = "python3 -m unittest -q tests.test_hidden.MulTest && '
                                        'python3 -m unittest -q tests.test_hidden.AddTest"\n')
    two_modules = shutil.copytree(TASKS / "calc-bug", root / "calc-two-modules")
    (two_modules / "hidden" / "tests" / "test_more.py").write_text(
        "import unittest\n\nfrom calc.ops import add\n\n\nclass AddTest(unittest.TestCase):\n"
        "    def test_add(self):\n        self.assertEqual(add(40, 2), 42)\n")
    # test_hidden (which imports calc) is loaded first, then test_more
    (two_modules / "swe.toml").write_text('[tests]\nfail_to_pass = ["tests.test_hidden.MulTest.test_mul", '
                                          '"tests.test_more.AddTest.test_add"]\n')
    harbor_task(root / "harbor-root", user=None)
    harbor_task(root / "harbor-nobody", user="nobody")
    harbor_task(root / "harbor-uid", user="1001")
    harbor_task(root / "harbor-no-such-user", user="no-such-user")
    answer_task(root / "harbor-env", {"test.sh": ENV_TEST_SH, "test_outputs.py": CHECK}, ENV_TABLE)
    server = swe_server(tmp, root, bash_timeout_s=10)
    yield server.url
    server.stop()


def test_as_root_the_code_under_test_can_still_rewrite_the_check_and_put_it_back(client):
    """What the verifier user closes: without it (Harbor's default, root) this attack still earns 1.0."""
    session = client.open("swe", {"path": "harbor-root"})
    session.call("write_file", path="/app/answer.py", content=REWRITE_CHECK)
    result = session.verify("done")
    assert result.status == "ok" and result.reward == 1.0, (result.error, result.details)
    assert "ATTACK uid 0" in result.details["output_tail"], result.details["output_tail"]


@pytest.mark.parametrize("task, uid", [("harbor-nobody", 65534), ("harbor-uid", 1001)])
def test_test_sh_runs_as_the_verifier_user_so_the_code_it_tests_cannot_rewrite_the_check(client, task, uid):
    session = client.open("swe", {"path": task})
    session.call("write_file", path="/app/answer.py", content=REWRITE_CHECK)
    result = session.verify("done")
    tail = result.details["output_tail"]
    assert result.status == "ok" and result.reward == 0.0, result.details
    assert f"ATTACK uid {uid}" in tail and "ATTACK refused PermissionError" in tail, tail
    assert "reason" not in result.details, result.details  # test.sh wrote its own 0: nothing was distrusted


@pytest.mark.parametrize("task, uid", [("harbor-root", 0), ("harbor-nobody", 65534), ("harbor-uid", 1001)])
def test_an_honest_fix_passes_and_its_reward_is_written_as_the_verifier_user(client, task, uid):
    session = client.open("swe", {"path": task})
    session.call("write_file", path="/app/answer.py", content=HONEST)
    result = session.verify("done")
    assert (result.status, result.reward, result.details["exit_code"]) == ("ok", 1.0, 0), result.details
    assert f"tests ran as uid {uid}" in result.details["output_tail"], result.details["output_tail"]


@pytest.mark.parametrize("task, module", [("calc-two-steps", "test_hidden"), ("calc-two-modules", "test_more")])
def test_bytecode_the_code_under_test_forged_for_a_module_loaded_later_is_never_read(client, task, module):
    session = client.open("swe", {"path": task})  # the bug stays: add subtracts
    forge = FORGE_BYTECODE.replace("{module}", module).replace("{passing}", PASSING_TESTS)
    session.call("bash", command=f"cat >> calc/__init__.py <<'EOF'\n{forge}EOF")
    result = session.verify("done")
    tail = result.details["output_tail"]
    assert "ATTACK wrote" in tail, tail  # the forged .pyc is there, beside the source
    assert result.status == "ok" and result.reward == 0.0, result.details
    session = client.open("swe", {"path": task})
    session.call("str_replace", path="calc/ops.py", old_str="a - b", new_str="a + b")
    assert session.verify("done").reward == 1.0


@pytest.mark.parametrize("value, user", [('"nobody"', "nobody"), ("1001", "1001"), ('"root"', None), ("0", None)])
def test_the_loader_reads_the_verifier_user(tmp_path, value, user):
    harbor_task(tmp_path / "task", user=None)
    (tmp_path / "task" / "task.toml").write_text(f'version = "1.0"\n\n[verifier]\nuser = {value}\n')
    assert load_task(tmp_path / "task", "unused").verifier_user == user


@pytest.mark.parametrize("value", ['"a b"', '"$(id)"', "-1", "true", "[1]"])
def test_a_verifier_user_that_is_no_name_or_uid_is_refused(tmp_path, value):
    harbor_task(tmp_path / "task", user=None)
    (tmp_path / "task" / "task.toml").write_text(f'version = "1.0"\n\n[verifier]\nuser = {value}\n')
    with pytest.raises(InvalidInput, match="user name or a uid"):
        load_task(tmp_path / "task", "unused")


def test_a_verifier_user_the_image_lacks_is_a_clear_error(client):
    session = client.open("swe", {"path": "harbor-no-such-user"})
    result = session.verify("done")
    assert result.status == "invalid" and "no-such-user" in (result.error or ""), result


def test_test_sh_gets_the_variables_of_the_verifier_env_table(client):
    """Ignored before: ANSWER_WANTED was empty, so test.sh wrote 0 for an honest fix."""
    session = client.open("swe", {"path": "harbor-env"})
    session.call("write_file", path="/app/answer.py", content=HONEST)
    result = session.verify("done")
    assert "ANSWER_WANTED=42 STRICT=true HOME_TEXT=${HOME}" in result.details["output_tail"], result.details
    assert (result.status, result.reward) == ("ok", 1.0), result.details


def test_the_loader_reads_the_verifier_env_as_text(tmp_path):
    answer_task(tmp_path / "task", {"test.sh": ENV_TEST_SH}, ENV_TABLE)
    assert load_task(tmp_path / "task", "unused").verifier_env == (
        ("ANSWER_WANTED", "42"), ("STRICT", "true"), ("HOME_TEXT", "${HOME}"))


@pytest.mark.parametrize("table, why", [('env = "A=1"', "must be a table"), ('env = { "A B" = "1" }', "not a variable name"),
                                        ('env = { "1A" = "1" }', "not a variable name"),
                                        ("env = { A = [1] }", "a string or a number")])
def test_a_verifier_env_that_is_not_names_and_values_is_refused(tmp_path, table, why):
    answer_task(tmp_path / "task", {"test.sh": ENV_TEST_SH}, table + "\n")
    with pytest.raises(InvalidInput, match=why):
        load_task(tmp_path / "task", "unused")
