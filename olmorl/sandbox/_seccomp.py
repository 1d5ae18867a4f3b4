"""A seccomp-BPF deny list for sandboxed programs, assembled by hand (no libseccomp binding needed).

bwrap loads it with `--seccomp FD`. Denied calls fail with EPERM (sockets other than AF_UNIX with
EAFNOSUPPORT) rather than killing the process, so a program sees an ordinary OSError.
"""

from __future__ import annotations

import errno
import platform
import struct

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K
_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000
_AUDIT_ARCH_X86_64 = 0xC000003E
_X32_SYSCALL_BIT = 0x40000000
_AF_UNIX = 1

# x86_64 numbers of the calls a test program never needs and an escape often does.
_DENIED_X86_64 = {
    "ptrace": 101, "syslog": 103, "personality": 135, "vhangup": 153, "pivot_root": 155, "adjtimex": 159,
    "chroot": 161, "acct": 163, "settimeofday": 164, "mount": 165, "umount2": 166, "swapon": 167,
    "swapoff": 168, "reboot": 169, "iopl": 172, "ioperm": 173, "init_module": 175, "delete_module": 176,
    "quotactl": 179, "lookup_dcookie": 212, "clock_settime": 227, "kexec_load": 246, "add_key": 248,
    "request_key": 249, "keyctl": 250, "unshare": 272, "perf_event_open": 298, "fanotify_init": 300,
    "name_to_handle_at": 303, "open_by_handle_at": 304, "clock_adjtime": 305, "setns": 308,
    "process_vm_readv": 310, "process_vm_writev": 311, "kcmp": 312, "finit_module": 313,
    "kexec_file_load": 320, "bpf": 321, "userfaultfd": 323, "io_uring_setup": 425, "io_uring_enter": 426,
    "io_uring_register": 427, "open_tree": 428, "move_mount": 429, "fsopen": 430, "fsconfig": 431,
    "fsmount": 432, "fspick": 433, "pidfd_getfd": 438, "mount_setattr": 442,
}
_SOCKET_X86_64 = 41
# Calls that act on another process's resources when their target argument is not 0 (self): a
# program must not lower the limits, priority or CPUs of the harness (the same uid), which later
# programs of the slot would inherit. (x86_64 number, index of the pid argument.)
_SELF_ONLY_X86_64 = {
    "setpriority": (141, 1), "sched_setparam": (142, 0), "sched_setscheduler": (144, 0),
    "sched_setaffinity": (203, 0), "ioprio_set": (251, 1), "prlimit64": (302, 0), "sched_setattr": (314, 0),
}


def _insn(code: int, jt: int, jf: int, k: int) -> bytes:
    return struct.pack("=HBBI", code, jt, jf, k)


def seccomp_filter() -> bytes | None:
    """The BPF program (raw `struct sock_filter` array) for this machine, or None if unsupported."""
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
    for nr in sorted(_DENIED_X86_64.values()):
        prog.append(_insn(_JEQ_K, 0, 1, nr))
        prog.append(_insn(_RET_K, 0, 0, _RET_ERRNO | errno.EPERM))
    for nr, arg in sorted(_SELF_ONLY_X86_64.values()):
        prog += [
            _insn(_LD_W_ABS, 0, 0, 0),
            _insn(_JEQ_K, 0, 3, nr),
            _insn(_LD_W_ABS, 0, 0, 16 + 8 * arg),  # low half of the target (a pid_t)
            _insn(_JEQ_K, 1, 0, 0),
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
