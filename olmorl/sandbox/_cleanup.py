"""What is left after a test, and who removes it (a harness part, standard library only; see `_harness`).

After every test the test process kills every process the program left (`sweep`: its group and, alone
in a pid namespace, every pid that is not the harness's). Then, where the program left anything that
outlives a process (files in the scratch dir and /dev/shm, SysV shared memory, queues and semaphores,
POSIX message queues), the zygote forks a cleaner that takes the program's uid (`become_program`) and
removes it all; the test process checks that nothing is left, or gives up the slot. The cleaner runs
as the program's uid so that the harness needs no capability over files or IPC objects, and the
program's uid owns nothing of the harness's.
"""

import ctypes
import os
import signal
import sys
import time

PIDNS = "--pidns" in sys.argv  # alone in a pid namespace: every pid but ours and init is the program's
SWEEP_LIMIT_S = 5.0  # processes still there this long after SIGKILL: give up the whole sandbox
SHM = "/dev/shm"  # also wiped after every test where a program can write it
# The uid:gid programs run as (none: the same as the harness, where no second uid is mapped).
PROGRAM_IDS = (tuple(int(x) for x in sys.argv[sys.argv.index("--program-ids") + 1].split(":"))
               if "--program-ids" in sys.argv else None)
MQUEUE = "/dev/mqueue"  # where the slot's POSIX message queues are listed (mounted by the backend)
SYSV_IPC = ("shm", "msg", "sem")  # /proc/sysvipc/<kind>; the id is the second column
# The scratch dir is wiped after every test, so it must be named explicitly (never "the cwd").
SCRATCH = sys.argv[sys.argv.index("--scratch") + 1] if "--scratch" in sys.argv else None


def kill_group(pgid):
    try:
        os.killpg(pgid, signal.SIGKILL)
    except OSError:
        pass


def sweep(pgid, keep, reap=None):
    """Kill every process a test left (its group; in a pid namespace, every pid not in `keep`), and
    with `reap` (which has their parents reap them), until they are gone."""
    if pgid > 0:
        kill_group(pgid)
    if not PIDNS:
        return
    deadline = time.monotonic() + SWEEP_LIMIT_S
    while True:
        others = [int(p) for p in os.listdir("/proc") if p.isdigit() and int(p) not in keep]
        if not others:
            return
        for pid in others:
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if reap is None:
            return
        reap()
        if time.monotonic() > deadline:  # fail safe: the pool replaces a sandbox whose zygote is gone
            sys.exit(f"harness: {len(others)} processes outlived SIGKILL for {SWEEP_LIMIT_S} s")
        time.sleep(0.0005)


def clean_scratch(path):
    """Empty `path` without following links; unreadable (mode 000) directories are opened first.
    Returns whether it is empty afterwards."""
    stack = [path]
    dirs = []
    while stack:
        current = stack.pop()
        try:
            entries = list(os.scandir(current))
        except OSError:
            continue
        for entry in entries:
            try:
                if entry.is_dir(follow_symlinks=False):
                    os.chmod(entry.path, 0o700)  # a directory, not a link: nothing outside is touched
                    stack.append(entry.path)
                    dirs.append(entry.path)
                else:
                    os.unlink(entry.path)
            except OSError:
                pass
    for directory in reversed(dirs):
        try:
            os.rmdir(directory)
        except OSError:
            pass
    try:
        return not os.listdir(path)
    except OSError:
        return True


def become_program():
    """Take the program's uid for good: from here on this process can reach no harness process."""
    if PROGRAM_IDS is not None:
        uid, gid = PROGRAM_IDS
        os.setgroups([])
        os.setresgid(gid, gid, gid)
        os.setresuid(uid, uid, uid)


def remove_ipc():
    """Remove every SysV IPC object and POSIX message queue this uid may remove (the cleaner's part)."""
    libc = ctypes.CDLL(None, use_errno=True)
    controls = {"shm": lambda i: libc.shmctl(i, 0, None), "msg": lambda i: libc.msgctl(i, 0, None),
                "sem": lambda i: libc.semctl(i, 0, 0)}  # IPC_RMID is 0 for all three
    for kind in SYSV_IPC:
        for ident in sysv_ids(kind):
            controls[kind](ident)
    for name in listdir(MQUEUE):
        try:
            os.unlink(os.path.join(MQUEUE, name))
        except OSError:
            pass


def sysv_ids(kind, first_read=False):
    """The ids of the SysV IPC objects of `kind` in this IPC namespace. Read through a raw fd: the test
    process reads all three lists after every test, and a file object costs three more syscalls each.
    `first_read`: only what the first read returns, for the check that the list is empty (the kernel's
    first chunk of the list holds its header and at least its first entry)."""
    try:
        fd = os.open(f"/proc/sysvipc/{kind}", os.O_RDONLY)
        try:
            data = b""
            while chunk := os.read(fd, 1 << 16):
                data += chunk
                if first_read:
                    break
        finally:
            os.close(fd)
        return [int(line.split()[1]) for line in data.splitlines()[1:] if line.strip()]
    except (OSError, ValueError, IndexError):
        return []


def listdir(path):
    try:
        return os.listdir(path)
    except OSError:
        return []


def has_entries(path):
    """Whether `path` lists anything: its first batch of entries only (a listing's second read, which finds
    its end, and the stat that `listdir` makes are left out)."""
    try:
        with os.scandir(path) as entries:
            return next(entries, None) is not None
    except OSError:
        return False


def clean_as_program():
    """The cleaner (a zygote child): as the program's uid, remove what the program may have left."""
    become_program()
    if PIDNS:
        remove_ipc()
    for path in wiped_dirs():
        if os.path.isdir(path):
            clean_scratch(path)


def wiped_dirs():
    """Shared memory, message queues and IPC objects are the slot's own only in its own namespaces
    (bwrap, docker); the insecure process backend wipes only its scratch dir."""
    return (SCRATCH, SHM) if PIDNS else (SCRATCH,)


def cleaned(zygote):
    """Have a cleaner remove what the program left (files, IPC objects), where it left anything;
    False when something survived."""
    if left_behind():
        zygote.send(b"clean")  # a fork: only when there is something to remove
        if int(zygote.recv(64)) != 0:
            return False
        left = left_behind()
        if left:
            os.write(2, f"harness: left after the cleanup: {', '.join(left)}\n".encode())
            return False
    return True


def left_behind():
    """Where the last program left something that could outlive it."""
    left = [path for path in wiped_dirs() if has_entries(path)]
    if PIDNS:
        left += [MQUEUE] * has_entries(MQUEUE) + [f"/proc/sysvipc/{kind}" for kind in SYSV_IPC
                                                  if sysv_ids(kind, first_read=True)]
    return left
