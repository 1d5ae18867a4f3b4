"""A persistent Python interpreter, started once per session inside a sandbox (stdlib only).

Protocol: the first line on stdin is the limits `{"memory_bytes", "cpu_s", "file_bytes", "open_files"}`;
it answers `{"ready": true}`. Then one `{"code": str, "max_output": int}` per line; it runs the code
in one persistent namespace (state survives between calls) and answers one JSON line
`{"stdout", "stderr", "error", "truncated"}`. The value of a final bare expression is printed, as in
a notebook cell. Output is captured at the file-descriptor level (os.write and subprocesses too).

The interpreter is a child of a small waiter (the process the sandbox starts), which writes one last line
when the interpreter ends: `{"ended": {"exit": N}}` or `{"ended": {"signal": N}}`, from its wait status. The
sandbox's own exit status cannot tell them apart (bwrap reports a child killed by signal N as 128 + N), so
without it code that called `os._exit(137)` read as killed by SIGKILL.

Trust: this process runs the model's code, so the model's code can forge its replies (and the waiter's, its
own uid's). That fools only the model itself: rewards are computed outside, from the final answer, never
from these replies.
"""

import ast
import json
import os
import resource
import signal
import sys
import traceback

SCRATCH = sys.argv[sys.argv.index("--scratch") + 1] if "--scratch" in sys.argv else "/tmp"


def set_limits(limits):
    pairs = ((resource.RLIMIT_AS, limits.get("memory_bytes")), (resource.RLIMIT_CPU, limits.get("cpu_s")),
             (resource.RLIMIT_FSIZE, limits.get("file_bytes")), (resource.RLIMIT_NOFILE, limits.get("open_files")),
             (resource.RLIMIT_CORE, 0))
    for which, value in pairs:
        if value:
            resource.setrlimit(which, (int(value), int(value)))
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an oversized write fails (EFBIG) instead of killing us


def read_capped(path, cap):
    """The file's text, at most `cap` bytes of it, and how many bytes were dropped."""
    try:
        with open(path, "rb") as f:
            data = f.read(cap + 1)
            size = os.fstat(f.fileno()).st_size
    except OSError:
        return "", 0
    dropped = max(size - cap, 0)
    return data[:cap].decode("utf-8", errors="replace"), dropped


def run_cell(code, namespace, out_path, err_path):
    """Compile and run one cell with fds 1 and 2 on capture files; return the formatted exception."""
    for fd, path in ((1, out_path), (2, err_path)):
        target = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        os.dup2(target, fd)
        os.close(target)
    sys.stdout = open(1, "w", closefd=False, errors="backslashreplace")
    sys.stderr = open(2, "w", closefd=False, errors="backslashreplace")
    error = None
    try:
        tree = ast.parse(code, "<cell>", "exec")
        last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
        exec(compile(tree, "<cell>", "exec"), namespace)
        if last is not None:
            value = eval(compile(ast.Expression(last.value), "<cell>", "eval"), namespace)
            if value is not None:
                print(repr(value))
    except BaseException as exc:  # SystemExit and KeyboardInterrupt are the cell's output too
        frames = traceback.extract_tb(exc.__traceback__)
        cell_frames = [f for f in frames if f.filename != __file__]
        error = "".join(traceback.format_list(cell_frames) + traceback.format_exception_only(type(exc), exc))
        error = "Traceback (most recent call last):\n" + error if cell_frames else error
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            pass
    return error


def report_end(child, reply):
    """The waiter: the interpreter's end, as its wait status says (an exit status is not a signal)."""
    while True:
        try:
            _, status = os.waitpid(child, 0)
            break
        except InterruptedError:
            continue
    ended = {"signal": os.WTERMSIG(status)} if os.WIFSIGNALED(status) else {"exit": os.waitstatus_to_exitcode(status)}
    reply.write(json.dumps({"ended": ended}) + "\n")
    reply.flush()
    os._exit(0)


def main():
    control = os.fdopen(os.dup(0), "rb")
    reply = os.fdopen(os.dup(1), "w")
    child = os.fork()
    if child:  # the waiter holds no limit and runs no cell
        control.close()
        report_end(child, reply)
    devnull = os.open(os.devnull, os.O_RDWR) if os.path.exists(os.devnull) else os.memfd_create("null")
    os.dup2(devnull, 0)  # input() sees end of file
    set_limits(json.loads(control.readline()))
    out_path, err_path = os.path.join(SCRATCH, ".cell-stdout"), os.path.join(SCRATCH, ".cell-stderr")
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    reply.write(json.dumps({"ready": True, "pid": os.getpid()}) + "\n")
    reply.flush()
    for line in control:
        request = json.loads(line)
        error = run_cell(request["code"], namespace, out_path, err_path)
        cap = int(request.get("max_output", 8192)) * 4  # bytes; the server cuts characters exactly
        stdout, out_dropped = read_capped(out_path, cap)
        stderr, err_dropped = read_capped(err_path, cap)
        if error is not None and len(error) > cap:  # a huge exception message must not outgrow the reply line
            error = "...[%d characters truncated]...\n%s" % (len(error) - cap, error[-cap:])
        reply.write(json.dumps({"stdout": stdout, "stderr": stderr, "error": error,
                                "dropped": out_dropped + err_dropped}) + "\n")
        reply.flush()


if __name__ == "__main__":
    main()
