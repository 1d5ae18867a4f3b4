"""The verdict container's repository, opened to the hidden tests' uid for new files only.

Real test suites write into the working tree (output files, temporary directories, caches), so the tests'
uid (TEST_USER) must be able to create files there; it must not be able to change, remove or rename a file
that is there (the agent's change, the hidden tests). Every directory of the repository becomes root's with
mode 1777: anyone may add an entry, and the sticky bit lets only the entry's owner (or the directory's, root)
unlink or rename it, or rename something over it. Files stay root's, and none is writable by others.

The sticky bit is the runtime's to enforce, and not every runtime does: gVisor (runsc 20221219, this host's)
lets a uid rename a file of its own over root's file in a sticky directory. So the first verify of each
runtime tries exactly that in the verdict container, as TEST_USER; where it works, the repository stays
closed (root's, 0755: a test that writes there fails, as before) and a warning is logged.
"""

from __future__ import annotations

import logging
import secrets

from olmorl.sandbox._containers import TEST_USER, TaskContainer

log = logging.getLogger("olmorl.rewards")

# every directory of the repository takes new entries, sticky and root's; no file of root's writable by others
_OPEN = 'find "$1" -type d -exec chmod 1777 {} + && find "$1" -type f -perm /022 -exec chmod go-w {} +'
# a sticky directory with a file of root's in it, and TEST_USER's attempt to replace that file by a rename
_PROBE_SETUP = 'mkdir -m 1777 "$1" && echo root > "$1/kept" && chmod 644 "$1/kept"'
# (no `mv` in the image: no answer, so the repository stays closed)
_PROBE_ATTEMPT = ('command -v mv >/dev/null && echo test-uid > "$1/new" && '
                  '{ mv -f "$1/new" "$1/kept" 2>/dev/null; cat "$1/kept"; }')
_sticky_holds: dict[str | None, bool] = {}  # per runtime (None: the engine's default), once per process


async def open_repository(container: TaskContainer, runtime: str | None) -> bool:
    """Let TEST_USER create files in `container`'s repository, where the runtime keeps every other file of it
    out of that uid's reach; whether it did."""
    holds = _sticky_holds.get(runtime)
    if holds is None:
        holds = _sticky_holds[runtime] = await _sticky_bit_holds(container)
        if not holds:
            log.warning("the container runtime %s lets a uid rename its file over root's in a sticky directory: the "
                        "hidden tests cannot write into the repository", runtime or "(the engine's default)")
    if holds:
        await _root(container, _OPEN, container.workdir)
    return holds


async def _sticky_bit_holds(container: TaskContainer) -> bool:
    probe = f"/tmp/.olmorl-sticky-{secrets.token_hex(8)}"
    await _root(container, _PROBE_SETUP, probe)
    attempt = await container.exec(["sh", "-c", _PROBE_ATTEMPT, "sh", probe], timeout_s=10.0, workdir="/",
                                   user=TEST_USER)
    return attempt.stdout.strip() == "root"


async def _root(container: TaskContainer, script: str, path: str) -> None:
    done = await container.exec(["sh", "-c", script, "sh", path], timeout_s=30.0, workdir="/")
    if done.exit_code != 0:
        raise RuntimeError(f"preparing the verdict container for the tests failed: {done.stderr.strip()[-500:]}")
