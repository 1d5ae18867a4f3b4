"""Who a slot's processes are: the harness and the program never share a uid.

A slot has two host uids: the harness's (its init, zygote and test process) and the program's (every
program process and whatever it starts). The program's uid owns no process that holds job data, the
job pipe or the result channel, so the kernel's own permission checks, not a filter, keep a program
from opening, signalling, renicing or reading the harness: `/proc/1/mem`, `kill`, `setpriority`,
`prlimit` all fail with EPERM/EACCES, whatever else the program does.

With bubblewrap the two uids are mapped into a user namespace made here (bwrap alone maps one):
inside it the harness is uid 0, holding only the capabilities it needs to fork programs as the other
uid and to end them (CAP_SETUID, CAP_SETGID, CAP_KILL, all confined to that namespace), and the
program is uid 1, with none. Making the map needs root (CAP_SETUID on the host); a server that is not
root runs harness and program as one uid, and /readyz says so (`uid_separation: false`).

The two host uids are a slot's own on the whole host, claimed in `_uid_claim` before the slot starts.
"""

from __future__ import annotations

import os
import subprocess

from olmorl.sandbox._uid_claim import SlotUids

INSIDE_HARNESS_ID = 0  # the ids as seen inside the slot's user namespace
INSIDE_PROGRAM_ID = 1
HARNESS_CAPS = ("CAP_SETUID", "CAP_SETGID", "CAP_KILL")


def drop_to(uid: int, gid: int) -> None:
    """Become `uid`/`gid` for good (real, effective and saved ids; no supplementary groups)."""
    os.setgroups([])
    os.setresgid(gid, gid, gid)
    os.setresuid(uid, uid, uid)


def slot_user_namespace(uids: SlotUids) -> int:
    """A new user namespace owned by the slot's harness uid that maps the slot's harness and program uids
    (and gids) to 0 and 1 inside; returns an fd for bwrap's `--userns`. Root only.

    `unshare --user` makes it (as the harness uid, so bwrap, started as that uid, may enter it with the
    namespace's capabilities); this process, root on the host, writes the two-line map that an
    unprivileged process cannot."""
    outer_harness, outer_program = uids.harness, uids.program
    holder = subprocess.Popen(
        ["unshare", "--user", "--", "sh", "-c", "echo ready; read _"],
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env={"PATH": "/usr/bin:/bin"},
        preexec_fn=lambda: drop_to(outer_harness, outer_harness),
    )
    assert holder.stdin is not None and holder.stdout is not None
    try:
        if holder.stdout.readline() != b"ready\n":
            raise OSError("unshare --user did not start")
        mapping = f"{INSIDE_HARNESS_ID} {outer_harness} 1\n{INSIDE_PROGRAM_ID} {outer_program} 1\n"
        for name in ("uid_map", "gid_map"):
            with open(f"/proc/{holder.pid}/{name}", "w") as f:
                f.write(mapping)
        return os.open(f"/proc/{holder.pid}/ns/user", os.O_RDONLY | os.O_CLOEXEC)
    finally:
        holder.stdin.close()
        holder.wait()
