"""Children that must not outlive the process that started them (Linux's parent-death signal)."""

from __future__ import annotations

import ctypes
import os
import signal

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid: int, signum: int = signal.SIGKILL) -> None:
    """Have the kernel send `signum` to this process when its parent dies, however it dies (SIGKILL included);
    exit at once if it died before this call. Call it first thing in the child. The kernel ties the signal to
    the parent *thread* that forked this process, so that thread must live as long as the parent wants it.
    Not Linux: nothing happens."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signum)
    except (OSError, AttributeError):
        return
    if os.getppid() != parent_pid:  # the parent died between our fork and the prctl: no signal will come
        os._exit(0)
