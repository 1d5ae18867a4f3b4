# A software-engineering task end to end: write a task directory, serve it, fix the bug through the tools.
import tempfile
from pathlib import Path

from olmorl.clients import SessionClient
from olmorl.rewards._settings import SweSettings
from olmorl.rewards.service._local import LocalRewardServer

TASK = {
    "swe.toml": '[tests]\nfail_to_pass = ["test_calc.AddTest.test_add"]\n',
    "instruction.md": "calc.add(a, b) returns the wrong result. Fix it.\n",
    "repo/calc.py": "def add(a, b):\n    return a - b\n",
    "hidden/test_calc.py": "import unittest\nfrom calc import add\n\n\nclass AddTest(unittest.TestCase):\n"
                           "    def test_add(self):\n        self.assertEqual(add(40, 2), 42)\n",
}
with tempfile.TemporaryDirectory() as root:
    for name, text in TASK.items():
        (Path(root) / "fix-add" / name).parent.mkdir(parents=True, exist_ok=True)
        (Path(root) / "fix-add" / name).write_text(text)
    with LocalRewardServer(workers=1, swe=SweSettings(task_root=root)) as server, SessionClient(server.url) as client:
        session = client.open("swe", {"path": "fix-add"})  # builds the image once (cached), starts a container
        print(session.observation)
        print(session.call("bash", command="ls && cat calc.py").output, end="")
        print(session.call("str_replace", path="calc.py", old_str="a - b", new_str="a + b").output, end="")
        result = session.verify("done")  # your change, in a fresh container, under the hidden tests
        print(f"reward={result.reward} tests={result.details['tests']}")
