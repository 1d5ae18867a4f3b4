"""The `swe` verdict against agents that attack it, on a real server and the real Docker engine: scripted
agents that work through the tools, each trying one way to pass the hidden tests without fixing the bug.
Each scores 0 with the attack reported in `details.tamper` (the honest agent and the test deleter are in
test_swe_env.py). Every one of these tests fails on the verify that ran the hidden tests in the agent's own
container, as root."""

from __future__ import annotations

import re
import shutil

import httpx
import pytest

from swe_support import TASKS, docker_or_skip, pytest_task, swe_server
from swe_support import client  # noqa: F401 (a fixture)

pytestmark = docker_or_skip()
# makes every unittest failure and error vanish: a test that fails reads as passed
PATCH_UNITTEST = ("import unittest.result as _r\n"
                  "_r.TestResult.addFailure = _r.TestResult.addError = lambda self, test, err: None\n")


@pytest.fixture(scope="module")
def url(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("swe-integrity")
    root = tmp / "tasks"
    for name in ("calc-bug", "greeting-dockerfile"):
        shutil.copytree(TASKS / name, root / name)
    pytest_task(root / "calc-pytest")
    server = swe_server(tmp, root, bash_timeout_s=10)
    yield server.url
    server.stop()


def test_the_agent_runs_unprivileged_and_cannot_touch_the_python_installation(client):
    session = client.open("swe", {"path": "calc-bug"})
    assert session.call("bash", command="id -u; id -g").output == "1000\n1000\n"
    site = session.call("bash", command="python3 -c 'import site; print(site.getsitepackages()[0])'").output.strip()
    for target in (f"{site}/zz_forge.pth", "/usr/lib/python3.11/sitecustomize.py", "/opt/olmorl/snapshot/x"):
        refused = session.call("bash", command=f"echo 'import os' > {target}")
        assert refused.output.endswith("[exit code 1]\n") and \
            ("Read-only file system" in refused.output or "Permission denied" in refused.output), refused.output
    assert session.call("write_file", path=f"{site}/zz_forge.pth", content="import os\n").status == "invalid"
    assert session.call("bash", command="stat -c %u .; touch ok && echo wrote").output == "1000\nwrote\n"
    session.close()


def test_a_conftest_and_pytest_config_that_pass_every_test_are_dropped(client, url):
    session = client.open("swe", {"path": "calc-pytest"})
    conftest = ("import pytest\n\n\n@pytest.hookimpl(hookwrapper=True)\ndef pytest_runtest_makereport(item, call):\n"
                "    outcome = yield\n    outcome.get_result().outcome = 'passed'\n")
    session.call("write_file", path="conftest.py", content=conftest)
    session.call("write_file", path="calc/forge.py", content=conftest)
    session.call("write_file", path="setup.cfg", content="[tool:pytest]\naddopts = -p calc.forge\n")
    result = session.verify("done")
    assert result.status == "ok" and result.reward == 0.0, result.details
    assert result.details["dropped_paths"] == {"conftest.py": "test_framework", "setup.cfg": "test_framework"}
    assert result.details["tamper"] == {"test_framework": 2}
    assert result.details["fail_to_pass"] == {"passed": 0, "total": 2}
    counted = re.search(r'^olmorl_code_tamper_total\{kind="test_framework",verifier="swe"\} (\S+)$',
                        httpx.get(f"{url}/metrics").text, re.MULTILINE)
    assert counted and float(counted.group(1)) >= 2


def test_a_user_site_hook_and_a_sitecustomize_do_not_reach_the_verdict(client):
    # greeting-dockerfile's hidden tests run as a command (`python3 -m unittest`), with the site module on
    session = client.open("swe", {"path": "greeting-dockerfile"})
    user_site = session.call("bash", command="python3 -c 'import site; print(site.getusersitepackages())'")
    user_site_dir = user_site.output.strip()
    assert user_site_dir.startswith("/tmp/")  # HOME=/tmp: the only writable place outside the repository
    session.call("write_file", path=f"{user_site_dir}/usercustomize.py", content=PATCH_UNITTEST)
    session.call("write_file", path=f"{user_site_dir}/zz_forge.pth", content="import usercustomize\n")
    session.call("write_file", path="sitecustomize.py", content=PATCH_UNITTEST)
    forged = session.call("bash", command="python3 -m unittest -q tests.test_greeting 2>&1; echo exit=$?")
    assert "exit=0" in forged.output  # the hook works inside the agent's container ...
    result = session.verify("done")
    assert result.status == "ok" and result.reward == 0.0 and result.details["exit_code"] != 0, result.details
    assert result.details["dropped_paths"] == {"sitecustomize.py": "test_framework"}  # ... not in the verdict's
    assert result.details["tamper"] == {"test_framework": 1}


@pytest.mark.parametrize("task,patch", [
    # pytest: every report says passed, whatever the test did
    ("calc-pytest", "import _pytest.reports as _r\n_init = _r.TestReport.__init__\n\n\n"
                    "def _forged(self, *args, **kwargs):\n    _init(self, *args, **kwargs)\n    self.outcome = 'passed'\n\n\n"
                    "_r.TestReport.__init__ = _forged\n"),
    ("calc-bug", PATCH_UNITTEST),
])
def test_a_package_that_patches_the_test_framework_at_import_is_caught(client, task, patch):
    session = client.open("swe", {"path": task})
    session.call("bash", command=f"cat >> calc/__init__.py <<'EOF'\n{patch}EOF")
    result = session.verify("done")
    assert result.status == "ok" and result.reward == 0.0, result.details
    assert result.details["tamper"] == {"result_forging": 1}, result.details
    assert "TestReport.__init__" in str(result.details["forged"]) or "TestResult.addFailure" in \
        str(result.details["forged"])
    assert result.details["dropped_paths"] == {}  # an ordinary source file: the forging is seen at run time


def test_processes_the_agent_leaves_do_not_reach_the_verdict(client):
    session = client.open("swe", {"path": "calc-bug"})
    forged = "import unittest\\nclass AddTest(unittest.TestCase):\\n    def test_add(self): pass\\n"
    # a background job that keeps writing forged hidden tests and fixing the bug only while it runs
    job = session.call("bash", command=(
        f"nohup sh -c 'while :; do printf \"{forged}\" > tests/test_hidden.py; sleep 0.05; done' >/dev/null 2>&1 &"
        " sleep 0.3; for p in /proc/[0-9]*; do grep -q printf $p/cmdline 2>/dev/null && stat -c %u $p; done | sort -u"))
    assert job.output == "1000\n", job.output  # the agent's uid: it cannot signal or trace a root process
    result = session.verify("done")
    assert result.status == "ok" and result.reward == 0.0, result.details
    assert result.details["agent_processes"] >= 1
    assert result.details["dropped_paths"] == {"tests/test_hidden.py": "test_file"}
    assert result.details["tamper"] == {"test_file": 1}
    assert result.details["fail_to_pass"] == {"passed": 0, "total": 2}  # the hidden tests ran as the task has them
