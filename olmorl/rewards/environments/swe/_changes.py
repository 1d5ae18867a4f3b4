"""The agent's change to a task repository, as verify takes it: the working directory compared with the
image's snapshot of it, entry by entry (kind, mode, content), and then filtered.

Only a change survives into the verdict container, and not every change: changes to test files and to the
files a test framework reads as configuration or plugins are dropped (the file stays as the snapshot has
it) and reported, because they decide how the hidden tests run rather than what the code does:

- `test_file`: a test file of the snapshot or of the hidden tests, edited or deleted (a file named
  `test_*.py` or `*_test.py`, or anything under a `tests` or `test` directory);
- `new_test_file`: a test file the agent added (dropped, not counted as tamper: agents write reproductions);
- `test_framework`: `conftest.py` anywhere, `pytest.ini`, `.pytest.ini`, `sitecustomize.py`,
  `usercustomize.py`, `*.pth`, package metadata (`*.dist-info`, `*.egg-info`: pytest loads plugins named
  in their entry points), and `setup.cfg`, `tox.ini` or `pyproject.toml` when their pytest or tox sections
  differ from the snapshot's (or no longer parse);
- `bytecode`: `*.pyc`, `*.pyo`, `__pycache__/` (a `.pyc` is trusted by its source's mtime and size, which
  the agent can match: it would run instead of the source);
- `not_a_file`: a fifo or other special file.

Every drop but `new_test_file` counts as tamper (`details.tamper`; the kinds are `olmorl.sandbox.TASK_TAMPER_KINDS`).
"""

from __future__ import annotations

import configparser
import hashlib
import io
import tarfile
import tomllib
from dataclasses import dataclass, field
from pathlib import PurePosixPath

FRAMEWORK_FILES = {"conftest.py", "pytest.ini", ".pytest.ini", "sitecustomize.py", "usercustomize.py"}
CONFIG_FILES = {"setup.cfg", "tox.ini", "pyproject.toml"}  # dropped when their test-framework sections change
TEST_DIRS = {"tests", "test"}


@dataclass(frozen=True)
class Entry:
    kind: str  # "file", "dir", "link" or "other"
    mode: int
    digest: str  # a file's sha256, a link's target; "" for the rest
    data: bytes | None = None  # a file's bytes (kept for the agent's tree, and for config files of the snapshot)


@dataclass(frozen=True)
class Change:
    """What verify applies: `entries` (paths relative to the working directory) written over it after the paths
    `remove` are removed; `dropped`: each path left as the snapshot has it, and why."""

    entries: dict[str, Entry] = field(default_factory=dict)
    remove: list[str] = field(default_factory=list)
    dropped: dict[str, str] = field(default_factory=dict)


def read_entries(archive: bytes, keep_data: bool = True) -> dict[str, Entry]:
    """A tar archive (as `tar -C DIR -cf - .` writes it) as {relative path: Entry}; hard links become files."""
    entries: dict[str, Entry] = {}
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        for member in tar:
            path = PurePosixPath(member.name)
            if path.is_absolute() or ".." in path.parts:
                raise ValueError(f"the task container's tree has an entry {member.name!r} outside it")
            name = path.as_posix()
            if name == ".":
                continue
            mode = member.mode & 0o7777
            if member.isfile():
                data = (tar.extractfile(member) or io.BytesIO()).read()
                entries[name] = Entry("file", mode, hashlib.sha256(data).hexdigest(), data if keep_data else None)
            elif member.islnk():  # a hard link: the file it links, under this name too
                target = entries.get(PurePosixPath(member.linkname).as_posix())
                if target is not None and target.kind == "file":
                    entries[name] = Entry("file", target.mode, target.digest, target.data)
            elif member.isdir():
                entries[name] = Entry("dir", mode, "")
            elif member.issym():
                entries[name] = Entry("link", 0o777, member.linkname)
            else:
                entries[name] = Entry("other", mode, "")
    return entries


def snapshot_entries(archive: bytes) -> dict[str, Entry]:
    """The snapshot's entries, keeping the bytes only of the config files a change is compared against."""
    entries = read_entries(archive, keep_data=True)
    return {path: entry if PurePosixPath(path).name in CONFIG_FILES else Entry(entry.kind, entry.mode, entry.digest)
            for path, entry in entries.items()}


def is_test_path(path: str) -> bool:
    parts = PurePosixPath(path).parts
    name = parts[-1]
    return bool(TEST_DIRS & set(parts[:-1])) or name in TEST_DIRS or \
        (name.endswith(".py") and (name.startswith("test_") or name.endswith("_test.py")))


def _framework_sections(path: str, data: bytes | None) -> object:
    """The test-framework configuration a config file holds (None: the file is absent); raises on a bad file."""
    if data is None:
        return None
    text = data.decode()
    if path.endswith(".toml"):
        tool = tomllib.loads(text).get("tool") or {}
        return {key: tool.get(key) for key in ("pytest", "tox")}
    parser = configparser.RawConfigParser(strict=False)
    parser.read_string(text)
    return {name: dict(parser.items(name)) for name in parser.sections()
            if name in ("pytest", "tool:pytest") or name == "tox" or name.startswith("testenv")}


def _drop_reason(path: str, new: Entry | None, old: Entry | None, hidden: set[str]) -> str | None:
    parts = PurePosixPath(path).parts
    name = parts[-1]
    if new is not None and new.kind == "other":
        return "not_a_file"
    if name in FRAMEWORK_FILES or name.endswith(".pth") or \
            any(p.endswith((".dist-info", ".egg-info")) for p in parts):
        return "test_framework"
    if name.endswith((".pyc", ".pyo")) or "__pycache__" in parts:
        return "bytecode"
    if is_test_path(path) or path in hidden:
        return "test_file" if old is not None or path in hidden else "new_test_file"
    if name in CONFIG_FILES and not (new is not None and new.kind == "dir"):
        try:
            same = _framework_sections(path, old.data if old else None) == \
                _framework_sections(path, new.data if new and new.kind == "file" else None)
        except (ValueError, UnicodeDecodeError, configparser.Error):  # tomllib's error is a ValueError
            same = False
        return None if same else "test_framework"
    return None


def agent_change(snapshot: dict[str, Entry], tree: dict[str, Entry], hidden: set[str]) -> Change:
    """The agent's change (its working directory `tree` against the image's `snapshot`), filtered; `hidden`:
    paths, relative to the working directory, that verify writes the hidden tests to."""
    dropped: dict[str, str] = {}
    entries: dict[str, Entry] = {}
    remove: list[str] = []
    for path in sorted(set(snapshot) | set(tree)):
        old, new = snapshot.get(path), tree.get(path)
        if any(parent in dropped for parent in _parents(path)):  # dropped with its directory
            continue
        if old is not None and new is not None and old.kind == new.kind and \
                (old.kind == "dir" or (old.digest == new.digest and old.mode == new.mode)):
            continue  # unchanged (a directory's own mode is not a change: it is not applied)
        reason = _drop_reason(path, new, old, hidden)
        if reason is not None:
            dropped[path] = reason
            continue
        if old is not None:
            remove.append(path)  # gone, or replaced (edited, or a file by a directory, a link by a file ...)
        if new is not None:
            entries[path] = new
    removed = set(remove)  # a deleted directory is removed once, not file by file
    return Change(entries, [p for p in remove if not any(parent in removed for parent in _parents(p))], dropped)


def _parents(path: str) -> list[str]:
    parts = PurePosixPath(path).parts
    return ["/".join(parts[:i]) for i in range(1, len(parts))]


def change_archive(change: Change, files: dict[str, bytes], prefix: str) -> bytes:
    """One tar with the change's entries and `files` (the hidden tests, the runner; they win over the change),
    each path under `prefix` (a directory, relative to /). Directories an entry needs and the archive lacks are
    made by tar; no entry names a directory that exists outside the change (most are on the read-only root)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        names = {f"{prefix}/{path}" if prefix else path: entry for path, entry in change.entries.items()}
        for path, data in files.items():
            names[path] = Entry("file", 0o644, "", data)
        for path, entry in sorted(names.items()):
            info = tarfile.TarInfo(path)
            info.mode = entry.mode & 0o755  # unpacked as root's: no set-id bit, nobody else may write
            if entry.kind == "dir":
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            elif entry.kind == "link":
                info.type, info.linkname = tarfile.SYMTYPE, entry.digest
                tar.addfile(info)
            else:
                info.size = len(entry.data or b"")
                tar.addfile(info, io.BytesIO(entry.data or b""))
    return out.getvalue()
