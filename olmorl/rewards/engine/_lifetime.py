"""Children that must not outlive the process that started them.

Two ways, each where it fits. Pool workers, forked by the server's main thread, use Linux's parent-death signal
(`die_with_parent`): immediate, and SIGKILL is right for them. The server itself uses a watchdog on its parent
pid (`stop_with_parent`): the parent-death signal follows the parent *thread* that forked the child, so a server
started from a short-lived thread (a test helper, an executor) would be killed when that thread ends; the parent
pid changes only when the whole parent process is gone (the kernel reparents its orphans), however it ended.
"""

from __future__ import annotations

import ctypes
import os
import signal
import threading
import time

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int, signum: int = signal.SIGKILL) -> None:
    """Have the kernel send `signum` to this process when the thread that forked it ends; exit at once if the
    parent died before this call. Call it first thing in the child. Not Linux: nothing happens."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signum)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent died between our fork and the prctl: no signal will come
        os._exit(0)


def stop_with_parent(parent_pid: int, interval_s: float = 0.25, grace_s: float = 45.0) -> None:
    """SIGTERM this process as soon as `parent_pid` is no longer its parent (checked every `interval_s` by a
    daemon thread); if it is still running `grace_s` later (a stop that hangs), exit hard. Exits at once if the
    parent is already gone."""
    if os.getppid() != parent_pid:
        os._exit(0)

    def watch() -> None:
        while os.getppid() == parent_pid:
            time.sleep(interval_s)
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(grace_s)
        os._exit(1)

    threading.Thread(target=watch, name="stop-with-parent", daemon=True).start()
