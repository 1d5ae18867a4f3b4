"""The agent's change as verify takes it (`swe._changes`): a working directory compared with the snapshot, and
what is dropped from it. Plain tar archives, no container."""

from __future__ import annotations

import io
import tarfile

from olmorl.rewards.environments.swe._changes import Entry, agent_change, change_archive, read_entries, \
    snapshot_entries

PYPROJECT = b'[project]\nname = "calc"\nversion = "1.0"\n\n[tool.pytest.ini_options]\naddopts = "-q"\n'


def tree(files: dict[str, bytes | str | None], links: dict[str, str] | None = None, hard: dict[str, str] | None = None,
         fifo: tuple[str, ...] = ()) -> bytes:
    """A tar as `tar -C DIR -cf - .` writes it: `files` (None: a directory), symbolic and hard links, fifos."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w") as tar:
        tar.addfile(_info(".", tarfile.DIRTYPE))
        for path, data in files.items():
            if data is None:
                tar.addfile(_info(f"./{path}", tarfile.DIRTYPE, 0o755))
            else:
                raw = data.encode() if isinstance(data, str) else data
                tar.addfile(_info(f"./{path}", tarfile.REGTYPE, 0o644, len(raw)), io.BytesIO(raw))
        for path, target in (links or {}).items():
            tar.addfile(_info(f"./{path}", tarfile.SYMTYPE, link=target))
        for path, target in (hard or {}).items():
            tar.addfile(_info(f"./{path}", tarfile.LNKTYPE, link=f"./{target}"))
        for path in fifo:
            tar.addfile(_info(f"./{path}", tarfile.FIFOTYPE))
    return out.getvalue()


def _info(name: str, kind: bytes, mode: int = 0o755, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.linkname = kind, mode, size, link
    return info


SNAPSHOT = {"calc": None, "calc/__init__.py": "", "calc/ops.py": "def add(a, b):\n    return a - b\n",
            "tests": None, "tests/test_visible.py": "import unittest\n", "pyproject.toml": PYPROJECT,
            "setup.cfg": "[metadata]\nname = calc\n"}


def change(files: dict[str, bytes | str | None], **kw: object):
    return agent_change(snapshot_entries(tree(SNAPSHOT)), read_entries(tree(files, **kw)),  # type: ignore[arg-type]
                        hidden={"tests/test_hidden.py"})


def test_an_honest_fix_is_the_change_and_nothing_is_dropped():
    fixed = {**SNAPSHOT, "calc/ops.py": "def add(a, b):\n    return a + b\n", "calc/new.py": "X = 1\n",
             "pyproject.toml": PYPROJECT.replace(b'version = "1.0"', b'version = "1.1"'),  # not pytest's section
             "setup.cfg": "[metadata]\nname = calc2\n"}
    result = change(fixed)
    assert sorted(result.entries) == ["calc/new.py", "calc/ops.py", "pyproject.toml", "setup.cfg"]
    assert result.remove == ["calc/ops.py", "pyproject.toml", "setup.cfg"] and result.dropped == {}


def test_test_files_and_framework_hooks_are_dropped():
    attack = {**SNAPSHOT, "conftest.py": "", "calc/conftest.py": "", "pytest.ini": "[pytest]\n",
              "calc/sitecustomize.py": "", "calc/usercustomize.py": "", "calc/zz.pth": "import os\n",
              "calc/__pycache__": None, "calc/__pycache__/ops.cpython-311.pyc": b"\0",
              "evil-1.0.dist-info": None, "evil-1.0.dist-info/entry_points.txt": "[pytest11]\nx = calc.ops\n",
              "tests/test_visible.py": "edited\n", "tests/test_hidden.py": "forged\n", "tests/test_new.py": "",
              "pyproject.toml": PYPROJECT.replace(b'"-q"', b'"-p calc.ops"'),
              "setup.cfg": "[metadata]\nname = calc\n[tool:pytest]\naddopts = -p calc.ops\n"}
    result = change(attack, fifo=("calc/pipe",))
    assert result.dropped == {
        "calc/__pycache__": "bytecode", "calc/conftest.py": "test_framework", "calc/pipe": "not_a_file",
        "calc/sitecustomize.py": "test_framework", "calc/usercustomize.py": "test_framework",
        "calc/zz.pth": "test_framework", "conftest.py": "test_framework", "evil-1.0.dist-info": "test_framework",
        "pyproject.toml": "test_framework", "pytest.ini": "test_framework", "setup.cfg": "test_framework",
        "tests/test_hidden.py": "test_file", "tests/test_new.py": "new_test_file", "tests/test_visible.py": "test_file"}
    assert result.entries == {} and result.remove == []


def test_deletions_links_and_a_config_that_no_longer_parses():
    files = {k: v for k, v in SNAPSHOT.items() if not k.startswith(("tests", "calc"))}
    files["pyproject.toml"] = b"[tool.pytest\n"
    result = change({**files, "calc": None}, links={"calc/ops.py": "/etc/passwd"}, hard={"calc/__init__.py": "setup.cfg"})
    assert result.dropped == {"pyproject.toml": "test_framework", "tests": "test_file"}
    assert result.remove == ["calc/__init__.py", "calc/ops.py"]  # replaced: by a hard link's file, by a link
    assert result.entries["calc/ops.py"].kind == "link" and result.entries["calc/__init__.py"].data == \
        b"[metadata]\nname = calc\n"
    gone = change({k: v for k, v in SNAPSHOT.items() if not k.startswith("calc")})
    assert gone.remove == ["calc"] and gone.entries == {}  # a deleted directory is removed once


def test_the_archive_puts_the_change_under_the_working_directory_and_the_hidden_files_over_it():
    result = change({**SNAPSHOT, "calc/ops.py": "fixed\n"}, links={"calc/l": "ops.py"})
    archive = change_archive(result, {"workspace/tests/test_hidden.py": b"hidden\n"}, "workspace")
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        members = {m.name: m for m in tar.getmembers()}
        assert sorted(members) == ["workspace/calc/l", "workspace/calc/ops.py", "workspace/tests/test_hidden.py"]
        assert members["workspace/calc/l"].issym() and members["workspace/calc/l"].linkname == "ops.py"
        assert tar.extractfile("workspace/calc/ops.py").read() == b"fixed\n"  # type: ignore[union-attr]


def test_the_archive_gives_no_set_id_bit_and_no_write_to_others():
    # unpacked as root's in the verdict container, where the tests run as another uid
    result = agent_change({}, {"run": Entry("file", 0o6777, "x", b"#!/bin/sh\n"), "shared": Entry("dir", 0o1777, "")},
                          set())
    with tarfile.open(fileobj=io.BytesIO(change_archive(result, {}, "workspace"))) as tar:
        assert {m.name: m.mode for m in tar.getmembers()} == {"workspace/run": 0o755, "workspace/shared": 0o755}
