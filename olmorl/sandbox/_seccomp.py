"""A seccomp-BPF deny list for sandboxed programs, assembled by hand (no libseccomp binding needed).

bwrap loads it with `--seccomp FD` (docker: the harness loads it itself). Calls only an attack makes
kill the process with SIGSYS, which the harness reports as tamper; calls runtimes probe fail with
EPERM (sockets other than AF_UNIX with EAFNOSUPPORT), so a program sees an ordinary OSError.
"""

from __future__ import annotations

import errno
import platform
import struct

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000
_AF_UNIX = 1

# The filter is the second line: the first is the program's uid, which owns no harness process (see
# `_userns`), so the kernel already refuses it the harness whatever this list says. These calls are
# refused because a test program has no use for them and an escape or a probe of the harness does.
#
# Killed (SIGSYS, reported as tamper "denied_syscall"): calls only an escape or an attack on another
# process makes: debugging and memory access across processes, namespaces, mounts, kernel modules and
# keyrings, BPF, rebooting, handles that bypass paths.
_KILLED_X86_64 = {
    "ptrace": 101, "syslog": 103, "pivot_root": 155, "chroot": 161, "acct": 163, "settimeofday": 164,
    "mount": 165, "umount2": 166, "swapon": 167, "swapoff": 168, "reboot": 169, "iopl": 172, "ioperm": 173,
    "init_module": 175, "delete_module": 176, "quotactl": 179, "lookup_dcookie": 212, "clock_settime": 227,
    "kexec_load": 246, "add_key": 248, "request_key": 249, "keyctl": 250, "unshare": 272,
    "name_to_handle_at": 303, "open_by_handle_at": 304, "setns": 308, "process_vm_readv": 310,
    "process_vm_writev": 311, "kcmp": 312, "finit_module": 313, "kexec_file_load": 320, "bpf": 321,
    "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431, "fsmount": 432, "fspick": 433,
    "pidfd_getfd": 438, "mount_setattr": 442,
}
# Refused with EPERM: calls that runtimes probe and do without (libuv tries io_uring, some runtimes
# personality or perf counters), so a program sees an ordinary OSError.
_DENIED_X86_64 = {
    "personality": 135, "vhangup": 153, "adjtimex": 159, "perf_event_open": 298, "fanotify_init": 300,
    "clock_adjtime": 305, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427,
}
# Refused (EPERM) where the sandbox cannot list what they make, so nothing could remove it between
# tests (gVisor: no /proc/sysvipc, no /dev/mqueue).
_IPC_X86_64 = {"shmget": 29, "semget": 64, "msgget": 68, "mq_open": 240}
_SOCKET_X86_64 = 41  # allowed for AF_UNIX only (no network in the sandbox anyway)
_CLONE_X86_64 = 56  # allowed without namespace flags
_CLONE3_X86_64 = 435  # ENOSYS: its flags sit in memory a filter cannot read; libc falls back to clone
_CLONE_NEW_NAMESPACES = 0x7E020000  # CLONE_NEWNS|NEWCGROUP|NEWUTS|NEWIPC|NEWUSER|NEWPID|NEWNET
# Calls that act on other processes' resources: allowed only on the caller itself, every argument that
# names the target checked: (x86_64 number, {argument index: the one value allowed}). setpriority and
# ioprio_set name a target by kind and id (PRIO_PROCESS / IOPRIO_WHO_PROCESS, 0 = self): PRIO_USER with
# id 0 is "every process of my uid", which a check of the id alone lets through.
_SELF_ONLY_X86_64 = {
    "setpriority": (141, {0: 0, 1: 0}), "sched_setparam": (142, {0: 0}), "sched_setscheduler": (144, {0: 0}),
    "sched_setaffinity": (203, {0: 0}), "ioprio_set": (251, {0: 1, 1: 0}), "prlimit64": (302, {0: 0}),
    "sched_setattr": (314, {0: 0}),
}
# Every syscall family a program may use, for the threat model in docs/sandbox.md (all others above are refused):
ALLOWED_FAMILIES = {
    "files and directories": "read, write, open, stat, mkdir, unlink... inside the scratch dir and /dev/shm "
                             "(the rest of the tree is read-only)",
    "memory": "mmap, brk, mprotect, madvise: bounded by RLIMIT_AS/DATA and the slot's memory cgroup",
    "processes and threads": "fork, clone without namespace flags, execve, wait, exit: bounded by RLIMIT_NPROC "
                             "and the pids cgroup",
    "signals": "kill, tgkill, sigaction: the kernel lets a program signal only its own uid's processes",
    "time and scheduling": "clock_gettime, nanosleep, sched_yield; priority and affinity of itself only",
    "local IPC": "pipes, AF_UNIX sockets, SysV IPC and POSIX queues: removed after every test",
    "limits and identity": "getrlimit, prlimit on itself (lowering only), getuid and friends",
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def _only_values(nr: int, allowed: dict[int, int]) -> list[bytes]:
    """For syscall `nr`: EPERM unless each listed argument (its low 32 bits) has its one allowed value."""
    checks = []
    for arg, value in sorted(allowed.items()):
        checks += [_insn(_LD_W_ABS, 0, 0, 16 + 8 * arg), _insn(_JEQ_K, 1, 0, value),
                   _insn(_RET_K, 0, 0, _RET_ERRNO | errno.EPERM)]
    # past the checks: reload the number so the next rule sees it
    return [_insn(_LD_W_ABS, 0, 0, 0), _insn(_JEQ_K, 0, len(checks), nr), *checks, _insn(_LD_W_ABS, 0, 0, 0)]


def seccomp_filter(ipc: bool = True) -> bytes | None:
    """The BPF program (raw `struct sock_filter` array) for this machine, or None if unsupported.
    `ipc=False`: SysV IPC and POSIX message queues are refused too."""
    if platform.machine() != "x86_64":
        return None
    prog = [
        _insn(_LD_W_ABS, 0, 0, 4),  # seccomp_data.arch
        _insn(_JEQ_K, 1, 0, _AUDIT_ARCH_X86_64),
        _insn(_RET_K, 0, 0, _RET_KILL_PROCESS),
        _insn(_LD_W_ABS, 0, 0, 0),  # seccomp_data.nr
        _insn(_JGE_K, 0, 1, _X32_SYSCALL_BIT),  # the x32 ABI would bypass every number below
        _insn(_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS),
    ]
    for nr in sorted(_KILLED_X86_64.values()):
        prog.append(_insn(_JEQ_K, 0, 1, nr))
        prog.append(_insn(_RET_K, 0, 0, _RET_KILL_PROCESS))
    for nr in sorted({**_DENIED_X86_64, **({} if ipc else _IPC_X86_64)}.values()):
        prog.append(_insn(_JEQ_K, 0, 1, nr))
        prog.append(_insn(_RET_K, 0, 0, _RET_ERRNO | errno.EPERM))
    prog.append(_insn(_JEQ_K, 0, 1, _CLONE3_X86_64))
    prog.append(_insn(_RET_K, 0, 0, _RET_ERRNO | errno.ENOSYS))
    for nr, allowed in sorted(_SELF_ONLY_X86_64.values()):
        prog += _only_values(nr, allowed)
    prog += [  # clone: the low half of args[0] holds the flags
        _insn(_LD_W_ABS, 0, 0, 0),
        _insn(_JEQ_K, 0, 3, _CLONE_X86_64),
        _insn(_LD_W_ABS, 0, 0, 16),
        _insn(_JSET_K, 0, 1, _CLONE_NEW_NAMESPACES),
        _insn(_RET_K, 0, 0, _RET_ERRNO | errno.EPERM),
    ]
    prog += [
        _insn(_LD_W_ABS, 0, 0, 0),
        _insn(_JEQ_K, 0, 3, _SOCKET_X86_64),
        _insn(_LD_W_ABS, 0, 0, 16),  # low half of args[0]: the address family
        _insn(_JEQ_K, 1, 0, _AF_UNIX),
        _insn(_RET_K, 0, 0, _RET_ERRNO | errno.EAFNOSUPPORT),
        _insn(_RET_K, 0, 0, _RET_ALLOW),
    ]
    return b"".join(prog)
