"""Task images: built once from a task's recipe (its Dockerfile or setup commands on top of the local
base image, and its repository snapshot), cached by a content hash, with no image registry.

The tag is `olmorl-task:<hash>`, the hash of the images the recipe starts FROM (their ids) and of
the build context (a deterministic tar: sorted entries, zero times and owners, so the same files hash
the same). An image with that tag is used as it is. Builds run with no network (`network_mode=none`):
a task's Dockerfile may COPY files of its own context and RUN offline steps, never download.

Every image ends with a copy of its working directory at SNAPSHOT_DIR: a task container's working
directory is a sized tmpfs, filled from that copy when it starts (see `_containers`).
"""

from __future__ import annotations

import hashlib
import io
import json
import re
import tarfile
import threading
from dataclasses import dataclass, field
from pathlib import Path, PurePosixPath
from typing import Any, Iterator

from olmorl.sandbox._backends import SandboxUnavailable
from olmorl.sandbox._containers import SNAPSHOT_DIR, engine
from olmorl.sandbox._engine import _api

IMAGE_REPOSITORY = "olmorl-task"
IMAGE_LABEL = "org.olmorl.task-image"  # the recipe hash
REPO_DIR = ".olmorl-repo"  # where the repository snapshot sits in the build context
DOCKERFILE = "Dockerfile.olmorl"  # the generated Dockerfile, at the context's root
ARCHIVES = (".tar", ".tar.gz", ".tgz", ".tar.bz2", ".tar.xz")
_FROM = re.compile(r"^\s*FROM\s+(?:--\S+\s+)*(\S+)(?:\s+AS\s+(\S+))?\s*$", re.IGNORECASE | re.MULTILINE)
_locks: dict[str, threading.Lock] = {}
_locks_guard = threading.Lock()


class ImageBuildFailed(RuntimeError):
    """The task's image could not be built; the message carries the build's last lines."""


@dataclass(frozen=True)
class ImageRecipe:
    base_image: str  # FROM of a recipe with no Dockerfile
    dockerfile: str | None = None  # the task's own Dockerfile text (its FROM images must be on the engine)
    setup: tuple[str, ...] = ()  # shell commands run (RUN) on top
    context: Path | None = None  # the Dockerfile's build context (what its COPY steps read)
    repo: Path | None = None  # repository snapshot (a directory or a tar archive) copied to `workdir`
    workdir: str | None = None  # None: the Dockerfile's own WORKDIR
    labels: dict[str, str] = field(default_factory=dict)
    # shell commands RUN last: what the task's verify needs of the image; one that fails stops the build with its
    # own message (a clear error when the task is built, not a failed verify later)
    checks: tuple[str, ...] = ()

    def dockerfile_text(self) -> str:
        lines = [self.dockerfile.rstrip() if self.dockerfile else f"FROM {self.base_image}"]
        lines += [f"RUN {json.dumps(['sh', '-c', command])}" for command in self.setup]
        if self.repo is not None:
            lines.append(f"COPY {REPO_DIR}/ {self.workdir or '.'}/")
        if self.workdir:
            lines.append(f"WORKDIR {self.workdir}")
        snapshot = (f'[ "$PWD" != / ] || {{ echo "a task image needs a WORKDIR other than /" >&2; exit 1; }}; '
                    f'mkdir -p {SNAPSHOT_DIR} && cp -a "$PWD"/. {SNAPSHOT_DIR}/')
        lines.append(f"RUN {json.dumps(['sh', '-c', snapshot])}")
        lines += [f"RUN {json.dumps(['sh', '-c', check])}" for check in self.checks]
        return "\n".join(lines) + "\n"

    def from_images(self) -> list[str]:
        """The images the recipe starts from (stages it names itself are not images)."""
        if not self.dockerfile:
            return [self.base_image]
        images, stages = [], set()
        for image, stage in _FROM.findall(self.dockerfile):
            if image.lower() not in stages:
                images.append(image)
            if stage:
                stages.add(stage.lower())
        if not images:
            raise ImageBuildFailed("the task's Dockerfile has no FROM line")
        return images


def _entry(name: str, kind: bytes, mode: int, size: int = 0, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type, info.mode, info.size, info.linkname = kind, mode, size, link
    info.mtime, info.uid, info.gid, info.uname, info.gname = 0, 0, 0, "", ""
    return info


def _tree(root: Path, prefix: str) -> Iterator[tuple[tarfile.TarInfo, bytes | None]]:
    for path in sorted(root.rglob("*")):
        name = f"{prefix}{path.relative_to(root).as_posix()}"
        if path.is_symlink():
            yield _entry(name, tarfile.SYMTYPE, 0o777, link=str(path.readlink())), None
        elif path.is_dir():
            yield _entry(name, tarfile.DIRTYPE, path.stat().st_mode & 0o7777), None
        elif path.is_file():
            data = path.read_bytes()
            yield _entry(name, tarfile.REGTYPE, path.stat().st_mode & 0o7777, len(data)), data


def _archive(path: Path, prefix: str) -> Iterator[tuple[tarfile.TarInfo, bytes | None]]:
    with tarfile.open(path) as tar:
        for member in sorted(tar.getmembers(), key=lambda m: m.name):
            name = PurePosixPath(member.name)
            if name.is_absolute() or ".." in name.parts:
                raise ImageBuildFailed(f"{path.name}: entry {member.name!r} leaves the archive")
            if str(name) == ".":
                continue
            full = f"{prefix}{name.as_posix()}"
            if member.isdir():
                yield _entry(full, tarfile.DIRTYPE, member.mode & 0o7777), None
            elif member.issym():
                yield _entry(full, tarfile.SYMTYPE, 0o777, link=member.linkname), None
            elif member.isfile():
                extracted = tar.extractfile(member)
                data = extracted.read() if extracted is not None else b""
                yield _entry(full, tarfile.REGTYPE, member.mode & 0o7777, len(data)), data
            else:
                raise ImageBuildFailed(f"{path.name}: entry {member.name!r} is not a file, directory or symlink")


def build_context(recipe: ImageRecipe) -> bytes:
    """The build context as a deterministic tar (same files, same bytes)."""
    out = io.BytesIO()
    with tarfile.open(fileobj=out, mode="w", format=tarfile.PAX_FORMAT) as tar:
        text = recipe.dockerfile_text().encode()
        tar.addfile(_entry(DOCKERFILE, tarfile.REGTYPE, 0o644, len(text)), io.BytesIO(text))
        entries: list[Iterator[tuple[tarfile.TarInfo, bytes | None]]] = []
        if recipe.context is not None:
            entries.append(_tree(recipe.context, ""))
        if recipe.repo is not None:
            tar.addfile(_entry(REPO_DIR, tarfile.DIRTYPE, 0o755))
            is_archive = recipe.repo.is_file() and recipe.repo.name.endswith(ARCHIVES)
            entries.append(_archive(recipe.repo, f"{REPO_DIR}/") if is_archive else _tree(recipe.repo, f"{REPO_DIR}/"))
        for source in entries:
            for info, data in source:
                tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return out.getvalue()


def _image_ids(api: Any, images: list[str]) -> list[str]:
    from docker.errors import ImageNotFound

    ids = []
    for image in images:
        try:
            ids.append(api.inspect_image(image)["Id"])
        except ImageNotFound:
            raise ImageBuildFailed(f"the image {image!r} that the task starts FROM is not on this Docker engine, and "
                                   "no registry is reachable: build it here (the base image: "
                                   "scripts/build-base-image.sh)") from None
    return ids


def ensure_image(recipe: ImageRecipe, build_timeout_s: float = 600.0) -> str:
    """The tag of the recipe's image, built now unless an image with that content hash exists."""
    from docker.errors import DockerException, ImageNotFound
    from requests import RequestException

    api = engine()
    try:
        context = build_context(recipe)
        digest = hashlib.sha256(json.dumps(_image_ids(api, recipe.from_images())).encode() + context).hexdigest()
    except OSError as exc:
        raise ImageBuildFailed(f"reading the task's files failed: {exc}") from exc
    except (DockerException, RequestException) as exc:
        raise SandboxUnavailable(f"the Docker engine did not answer: {exc}") from exc
    tag = f"{IMAGE_REPOSITORY}:{digest[:24]}"
    with _locks_guard:
        lock = _locks.setdefault(tag, threading.Lock())
    with lock:  # one build per recipe at a time; the others then find it
        try:
            api.inspect_image(tag)
            return tag
        except ImageNotFound:
            pass
        builder = _api(build_timeout_s)
        try:
            log: list[str] = []
            for chunk in builder.build(fileobj=io.BytesIO(context), custom_context=True, dockerfile=DOCKERFILE,
                                       tag=tag, rm=True, forcerm=True, pull=False, network_mode="none",
                                       decode=True, labels={IMAGE_LABEL: digest, **recipe.labels}):
                log += str(chunk.get("stream", "")).splitlines()
                if "error" in chunk:
                    tail = "\n".join(line for line in log[-12:] if line.strip())
                    raise ImageBuildFailed(f"building the task image failed: {chunk['error'].strip()}\n{tail}")
        except (DockerException, RequestException) as exc:
            raise ImageBuildFailed(f"building the task image failed: {exc}") from exc
        finally:
            builder.close()
    return tag


def image_workdir(tag: str) -> str:
    """The working directory an image declares (where its task's files are)."""
    return str((engine().inspect_image(tag).get("Config") or {}).get("WorkingDir") or "/")
