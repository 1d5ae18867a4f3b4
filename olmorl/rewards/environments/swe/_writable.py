"""The verdict container's repository, opened to the hidden tests' uid for new files only, and pinned.

Real test suites write into the working tree (output files, temporary directories, caches), so the tests'
uid (TEST_USER, or Harbor's verifier user) must be able to create files there; it must not be able to change,
remove or rename a file that is there (the agent's change, the hidden tests). Every directory of the
repository becomes root's with mode 1777: anyone may add an entry, and the sticky bit lets only the entry's
owner (or the directory's, root) unlink or rename it, or rename something over it. Files stay root's, and
none is writable by others.

The sticky bit is the runtime's to enforce, and not every runtime enforces all of it: gVisor (runsc 20221219,
this host's) refuses another uid's unlink, rename and hard link of root's file in a sticky directory, but lets
that uid rename a file of its own OVER root's file. So every entry there is when the tests start (the
repository, and the other root-made paths a run trusts: the runner's directory, the bytecode directory) is
pinned: root lists each one's inode, kind and path before the run, and again after it. An entry replaced by a
rename is missing from the second list (the entry at its path is now the test uid's, a new inode), and the
replacement cannot be undone: the original's last name went with the rename, and the uid may neither link
nor move root's files. A runtime that enforces the sticky bit never lets it happen; one that does not cannot
hide it. (A repository kept closed under such a runtime, as before, failed every honest test suite that
writes into it: a false 0.)
"""

from __future__ import annotations

from dataclasses import dataclass

from olmorl.sandbox._containers import TaskContainer

LISTING_BYTES = 64 << 20  # a listing of the pinned paths (~100 bytes an entry): far above a task's disk limit
# every directory of the repository takes new entries, sticky and root's; no file of root's writable by others
_OPEN = 'find "$1" -type d -exec chmod 1777 {} + && find "$1" -type f -perm /022 -exec chmod go-w {} +'
# root's entries under the paths: inode, kind and path, NUL-separated (GNU find; it stats without statx,
# which this host's gVisor answers with EINVAL)
_LIST = 'find "$@" -uid 0 -printf "%i %y %p\\0"'
# the image check of a task whose verify pins (ImageRecipe.checks): its `find` must take what _OPEN and _LIST use.
# BusyBox's find (Alpine's) has no -printf: without this, every verify of the task would fail at the listing.
FIND_CHECK = ('find / -maxdepth 0 -uid 0 -perm /022 -printf "" -exec true {} + >/dev/null 2>&1 || { echo "the task '
              'image needs GNU find (findutils: -printf, -perm /MODE, -exec {} +), which verify uses to pin the '
              'repository; this image has another find (BusyBox\'s, as on Alpine?): install findutils in it" >&2; '
              'exit 1; }')


@dataclass(frozen=True)
class Pins:
    """Root's entries under `paths` when the tests started: `entries` {path: "inode kind"}."""

    paths: tuple[str, ...]
    entries: dict[str, str]


async def open_repository(container: TaskContainer, trusted: tuple[str, ...] = ()) -> Pins:
    """Let the tests' uid create files in `container`'s repository, then pin its entries and those under the
    root-made paths `trusted` (the runner's directory, the bytecode directory ...)."""
    paths = (container.workdir, *trusted)
    return Pins(paths, await _listing(container, paths, _OPEN + " && "))


async def replaced(container: TaskContainer, pins: Pins) -> list[str]:
    """The pinned entries that are no longer there as they were (sorted): each was replaced by a rename over it,
    which only a runtime that does not enforce the sticky bit lets the tests' uid do."""
    now = await _listing(container, pins.paths)
    return sorted(path for path, entry in pins.entries.items() if now.get(path) != entry)


async def _listing(container: TaskContainer, paths: tuple[str, ...], first: str = "") -> dict[str, str]:
    """Root's entries under `paths` (the repository first), after the shell steps `first`."""
    out = await container.output(["sh", "-c", first + _LIST, "sh", *paths], max_bytes=LISTING_BYTES,
                                 what="listing the files pinned in the verdict container")
    entries = {}
    for record in out.split(b"\0")[:-1]:
        inode, kind, path = record.decode("utf-8", "surrogateescape").split(" ", 2)
        entries[path] = f"{inode} {kind}"
    return entries

