"""Programs in other languages (commands; see `olmorl.sandbox._languages`) inside the sandbox.

Standard library only (a harness part, see `_harness`). A command runs in a program process like a
Python program does, fresh for every test and forked from the zygote, but it `exec`s the language's
run command instead of running Python code, so it never talks to the test process: its test is judged
from outside (`_judge.judge_command`: exit status and stdout). A compiled language is built once per
job by a program process of its own (the build step, under its own limits); the test process keeps
the build's artifacts and writes them into the wiped scratch dir before every test, so no test can
leave anything for the next one (not even a modified binary).
"""

import fnmatch
import os
import signal
import stat

MAX_ARTIFACT_BYTES = 256 << 20  # what one build may keep, in all


def exec_command(start, scratch, rpc_fd):
    """In the program process (fds 0-2 are the test's stdio): become the command. The test process's
    socket is closed first; every other fd is already closed. Signal dispositions go back to the
    defaults a native program expects (Python ignores SIGPIPE and SIGXFSZ)."""
    os.close(rpc_fd)
    env = dict(os.environ)
    env.update({name: value.replace("{scratch}", scratch) for name, value in (start.get("env") or {}).items()})
    for signum in (signal.SIGPIPE, signal.SIGXFSZ):
        signal.signal(signum, signal.SIG_DFL)
    argv = start["exec"]
    try:
        os.execvpe(argv[0], argv, env)
    except OSError as exc:
        os.write(2, f"sandbox: cannot run {argv[0]}: {exc}\n".encode())
    os._exit(127)


def keep_files(scratch, patterns):
    """The build's artifacts: regular files at the scratch's top level matching `patterns`, read without
    following links (the build wrote them; it may have planted a link or a FIFO). Its processes are
    gone by now (swept), so nothing changes under us."""
    kept, total = {}, 0
    for entry in os.scandir(scratch):
        if not any(fnmatch.fnmatchcase(entry.name, p) for p in patterns):
            continue
        info = entry.stat(follow_symlinks=False)
        if not stat.S_ISREG(info.st_mode) or total + info.st_size > MAX_ARTIFACT_BYTES:
            continue
        fd = os.open(entry.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        try:
            data = b"".join(iter(lambda: os.read(fd, 1 << 20), b""))
        finally:
            os.close(fd)
        total += len(data)
        kept[entry.name] = (stat.S_IMODE(info.st_mode) & 0o755, data)
    return kept


def restore_files(scratch, files):
    """Write `files` (name -> (mode, bytes)) into the (empty) scratch dir."""
    for name, (mode, data) in files.items():
        fd = os.open(os.path.join(scratch, name), os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, mode)
        try:
            os.fchmod(fd, mode)  # not narrowed by the umask
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view):]
        finally:
            os.close(fd)
