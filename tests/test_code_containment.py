"""Adversarial suite for the code verifiers: every attack scores 0 (or its honest score), the server
stays healthy throughout, nothing is written on the host, no process outlives its run, and no packet
leaves the sandbox. Network targets are loopback and the documentation address 192.0.2.1 only.

Escape attempts are stdio items whose expected output is "PWNED": the program prints it only if the
attack worked, and prints a "blocked:" line otherwise, so each test also proves the attack ran.
"""

from __future__ import annotations

import os
import shutil
import threading
import time
from pathlib import Path

import httpx
import pytest

from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import SandboxSettings
from olmorl.sandbox._uid_claim import UID_BASE, UID_PAIRS
from olmorl.sandbox._languages import SANDBOX_ENV

pytestmark = pytest.mark.skipif(shutil.which("bwrap") is None,
                                reason="bubblewrap missing: run scripts/install-system-deps.sh")
HOST_CANARY = Path("/var/tmp/olmorl-containment-canary")  # /tmp inside is the scratch tmpfs
SLOTS = 2


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    log = tmp_path_factory.mktemp("srv") / "server.log"
    srv = LocalRewardServer(log_path=str(log), workers=1, api_key=None,
                            sandbox=SandboxSettings(parallelism=SLOTS, test_timeout_s=1.0)).start()
    yield srv
    srv.stop()


class HealthWatch:
    """Polls /healthz during a batch; every probe must answer 200 within 2 s."""

    def __init__(self, url: str) -> None:
        self.url, self.failures, self.count = url, [], 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _run(self) -> None:
        with httpx.Client(timeout=2.0) as client:
            while not self._stop.is_set():
                try:
                    if client.get(self.url + "/healthz").status_code != 200:
                        self.failures.append("status")
                except httpx.HTTPError as exc:
                    self.failures.append(repr(exc))
                self.count += 1
                time.sleep(0.05)

    def __enter__(self) -> HealthWatch:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self.count += 1
        if httpx.get(self.url + "/healthz", timeout=2.0).status_code != 200:
            self.failures.append("after the batch")


def verify(server, items: list[dict]) -> list[dict]:
    with HealthWatch(server.url) as watch:
        response = httpx.post(server.url + "/v1/verify", json={"items": items}, timeout=300)
    assert response.status_code == 200, response.text
    assert not watch.failures and watch.count > 0, watch.failures
    return response.json()["results"]


def _descendants(root: int) -> set[int]:
    parents = {}
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            parents[int(pid)] = int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, frontier = set(), {root}
    while frontier:
        frontier = {pid for pid, ppid in parents.items() if ppid in frontier} - found
        found |= frontier
    return found


def is_slot_uid(uid: int) -> bool:
    """One of the claimable sandbox uids (`_uid_claim`): pair k is BASE+2k (harness), BASE+2k+1 (program)."""
    return UID_BASE <= uid < UID_BASE + 2 * UID_PAIRS


def is_program_uid(uid: int) -> bool:
    return is_slot_uid(uid) and (uid - UID_BASE) % 2 == 1


def slot_processes(server_pid: int) -> list[tuple[int, int, str]]:
    """Processes of the sandbox uids (harness and program) under this test's server (other servers may
    run on the host)."""
    found = []
    for pid in map(str, _descendants(server_pid)):
        try:
            uid = int(Path(f"/proc/{pid}/status").read_text().split("Uid:")[1].split()[0])
            cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except (OSError, IndexError):
            continue
        if is_slot_uid(uid):
            found.append((int(pid), uid, cmd))
    return found


IDLE_PROCESSES = 3  # an idle slot: the zygote, its test process, the next job's program process


def assert_nothing_left_behind(server) -> None:
    deadline = time.monotonic() + 5
    while True:
        found = slot_processes(server.process.pid)
        procs = [p for p in found if "harness.py" in p[2] and "bwrap" not in p[2]]
        programs = [p for p in found if is_program_uid(p[1])]  # an idle slot runs no program
        per_uid: dict[int, int] = {}
        for _, uid, _ in procs:
            per_uid[uid] = per_uid.get(uid, 0) + 1
        if not programs and all(n <= IDLE_PROCESSES for n in per_uid.values()) or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    assert not programs, f"program processes outlived their run: {programs}"
    assert all(n <= IDLE_PROCESSES for n in per_uid.values()), f"processes outlived their run: {procs}"


ESCAPES = {
    "fork_bomb": """
import os
n = 0
while n < 10000:
    try:
        if os.fork() == 0:
            n += 1
            continue
    except OSError as e:
        print("blocked:", e); break
    n += 1
else:
    print("PWNED")
""",
    "thread_bomb": """
import threading, time
ts = []
try:
    for _ in range(5000):
        t = threading.Thread(target=time.sleep, args=(5,), daemon=True); t.start(); ts.append(t)
    print("PWNED")
except Exception as e:
    print("blocked:", type(e).__name__, len(ts))
""",
    "memory_bomb": """
try:
    x = bytearray(4 << 30)
    print("PWNED")
except MemoryError:
    print("blocked: MemoryError")
""",
    "cpu_spin": "while True:\n    pass\n",
    "sleep_past_timeout": "import time\ntime.sleep(30)\nprint('PWNED')\n",
    "ignore_sigterm_spin": "import signal\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True:\n    pass\n",
    "stdout_flood": "import sys\nchunk = 'A' * 65536\nwhile True:\n    sys.stdout.write(chunk)\n",
    "stderr_flood": "import sys\nchunk = 'E' * 65536\nwhile True:\n    sys.stderr.write(chunk)\n",
    "disk_fill": """
try:
    with open('fill.bin', 'wb') as f:
        for _ in range(4096):
            f.write(b'x' * (1 << 20))
    print("PWNED")
except OSError as e:
    print("blocked:", e)
""",
    "write_outside_scratch": f"""
hits = []
for path in ['/usr/pwned', '/pwned', '/etc/pwned', '/root/pwned', '{HOST_CANARY}', '/work/pwned', '/proc/pwned']:
    try:
        open(path, 'w').write('x'); hits.append(path)
    except OSError:
        pass
print("PWNED" if hits else "blocked: no writable path", hits)
""",
    "read_shadow": """
try:
    print("PWNED" if open('/etc/shadow').read() else "")
except OSError as e:
    print("blocked:", e)
""",
    "server_env_and_proc_environ": """
import os
# bwrap sets PWD, Python sets LC_CTYPE, the sandbox its own fixed SANDBOX_ENV; anything else would
# come from the server.
own = SANDBOX_ENV_REPR
found = {k: v for k, v in os.environ.items() if k not in ('PWD', 'LC_CTYPE') and own.get(k) != v}
for pid in [p for p in os.listdir('/proc') if p.isdigit()]:
    try:
        data = open(f'/proc/{pid}/environ', 'rb').read()
        if any(key in data for key in (b'OLMORL', b'USER=', b'/root', b'VIRTUAL_ENV')): found[pid] = data[:50]
    except OSError:
        pass
print("PWNED" if found else "blocked: only the sandbox's own environment", found)
""".replace("SANDBOX_ENV_REPR", repr(SANDBOX_ENV)),
    "server_source": """
import glob, os
hits = [p for pat in ['/work/*/olmorl/rewards/*.py', '/root/**/olmorl/**/*.py', '/usr/**/olmorl/**/_server.py',
                      '/usr/local/lib/python3*/site-packages/*'] for p in glob.glob(pat, recursive=True)]
print("PWNED" if hits else "blocked: no server source visible", hits[:3])
""",
    "network_outside": """
import socket
try:
    socket.create_connection(('192.0.2.1', 80), timeout=0.5); print("PWNED")
except OSError as e:
    print("blocked:", e)
""",
    "network_loopback_server_port": """
import socket
try:
    socket.create_connection(('127.0.0.1', PORT), timeout=0.5); print("PWNED")
except OSError as e:
    print("blocked:", e)
""",
    "raw_socket": """
import socket
try:
    socket.socket(socket.AF_PACKET, socket.SOCK_RAW); print("PWNED")
except OSError as e:
    print("blocked:", e)
""",
    "dns_lookup": """
import socket
try:
    socket.getaddrinfo('example.com', 80); print("PWNED")
except OSError as e:
    print("blocked:", e)
""",
    # the program's uid owns no harness process: `kill -1` finds nothing to signal, the others are refused
    "kill_everything": "import os, signal, time\nparent = os.getppid()\nos.kill(-1, signal.SIGKILL)\n"
                       "time.sleep(0.2)\nprint('PWNED' if not os.path.exists(f'/proc/{parent}') else 'blocked')\n",
    "kill_parent": "import os, signal\nfor pid in (os.getppid(), 1):\n    try:\n        os.kill(pid, signal.SIGKILL)\n"
                   "    except OSError as e:\n        print('blocked:', e)\n    else:\n        print('PWNED')\n",
    "daemonize_outlive": """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(3)
        for fd in range(3, 64):
            try: os.write(fd, b'{"done": true}\\n')
            except OSError: pass
        print("PWNED", flush=True)
        os._exit(0)
    os._exit(0)
print("blocked: parent exits")
""",
    "ptrace": """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
r = libc.ptrace(16, 1, 0, 0)  # PTRACE_ATTACH to pid 1
print("PWNED" if r == 0 else "blocked: ptrace", ctypes.get_errno())
""",
    "mount": """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
r = libc.mount(b"none", b"/tmp", b"tmpfs", 0, None)
print("PWNED" if r == 0 else "blocked: mount", ctypes.get_errno())
""",
    "ctypes_unshare_userns": """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
r = libc.syscall(272, 0x10000000)  # unshare(CLONE_NEWUSER)
print("PWNED" if r == 0 else "blocked: unshare", ctypes.get_errno())
""",
    "fd_exhaustion": """
fds = []
try:
    while len(fds) < 100000:
        fds.append(open('/dev/null'))
    print("PWNED")
except OSError as e:
    print("blocked:", e, len(fds))
""",
    "zombies": """
import os
for _ in range(30):
    if os.fork() == 0:
        os._exit(0)
print("blocked: zombies left")
""",
}


@pytest.mark.parametrize("name", sorted(ESCAPES))
def test_escape_attempt_is_contained(server, name):
    program = ESCAPES[name].replace("PORT", str(server.url.rsplit(":", 1)[1]))
    started = time.monotonic()
    [result] = verify(server, [{"id": name, "verifier": "code_stdio", "response": f"```python\n{program}```",
                                "ground_truth": [{"input": "", "output": "PWNED"}]}])
    assert result["status"] == "ok", result
    assert result["reward"] == 0.0, result
    test = result["details"]["tests"][0]
    assert test["status"] in ("failed", "error", "timeout")
    if "blocked" in program and test["status"] == "failed":
        assert "blocked" in test.get("stdout", ""), test  # the attack ran and was stopped
    assert time.monotonic() - started < 30
    assert not HOST_CANARY.exists()
    assert_nothing_left_behind(server)
    if name == "daemonize_outlive":
        time.sleep(3.5)  # the daemon would have woken up by now
        assert_nothing_left_behind(server)
    # The server and the slot still work after the attack.
    [honest] = verify(server, [{"verifier": "code", "response": "def f(x):\n    return x * 2\n",
                                "ground_truth": ["assert f(2) == 4"]}])
    assert honest["reward"] == 1.0, honest


def test_floods_are_truncated_not_buffered(server):
    [result] = verify(server, [{"verifier": "code_stdio", "response": ESCAPES["stdout_flood"],
                                "ground_truth": [{"input": "", "output": "x"}]}])
    test = result["details"]["tests"][0]
    assert test["status"] in ("failed", "timeout") and len(test.get("stdout", "")) <= 400
