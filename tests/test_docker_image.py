"""The Docker image end to end: build it, run it, score a math batch through it, remove it.

scripts/build-image.sh starts a Docker engine when none answers (installing Debian's docker.io if
needed) and builds the offline base image once; later runs reuse the build cache. If no engine
can be had, these tests fail with the script's reason: they never skip.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from olmorl.rewards.service._local import free_port

REPO = Path(__file__).resolve().parent.parent
IMAGE = "olmorl-rewards:test"
BUILD_TIMEOUT_S = 900  # cold: base image + wheelhouse + image, ~4 min on a loaded 2-core box
READY_TIMEOUT_S = 90

# Settings reach the server through OLMORL_* variables only; the entrypoint adds no flags.
CONTAINER_ENV = {"OLMORL_WORKERS": "1", "OLMORL_ITEM_TIMEOUT_S": "10"}

pytestmark = [pytest.mark.docker, pytest.mark.timeout(BUILD_TIMEOUT_S + 300)]


def docker(*args: str, timeout: float = 60, check: bool = True) -> subprocess.CompletedProcess[str]:
    result = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and result.returncode != 0:
        raise AssertionError(f"docker {shlex.join(args)} exited {result.returncode}:\n{result.stderr}")
    return result


@pytest.fixture(scope="module")
def image() -> str:
    try:
        build = subprocess.run(
            [str(REPO / "scripts" / "build-image.sh")],
            cwd=REPO, env={**os.environ, "OLMORL_IMAGE": IMAGE},
            capture_output=True, text=True, timeout=BUILD_TIMEOUT_S,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"scripts/build-image.sh did not finish within {BUILD_TIMEOUT_S}s:\n{_tail(exc.stderr)}")
    if build.returncode != 0:
        pytest.fail(
            "could not build the Docker image (no Docker engine, or the build failed); "
            f"scripts/build-image.sh exited {build.returncode}:\n{_tail(build.stderr)}\n{_tail(build.stdout)}"
        )
    return IMAGE


SANDBOX_FLAGS = ("--security-opt", "seccomp=unconfined", "--security-opt", "systempaths=unconfined")


@contextlib.contextmanager
def running(image: str, *flags: str) -> Iterator[tuple[str, str, str]]:
    """A container run as docs/docker.md runs it on this machine (host network: the engine of
    scripts/docker-engine.sh has no IP forwarding for bridge networks), on a free port:
    (name, base URL, what `docker run` printed on stderr)."""
    name = f"olmorl-test-{uuid.uuid4().hex[:12]}"
    port = free_port()
    env = {**CONTAINER_ENV, "OLMORL_HOST": "127.0.0.1", "OLMORL_PORT": str(port)}
    env_args = [arg for key, value in env.items() for arg in ("-e", f"{key}={value}")]
    try:
        started = docker("run", "--detach", "--name", name, "--network", "host", *flags, *env_args, image)
        base_url = f"http://127.0.0.1:{port}"
        _wait_ready(name, base_url)
        yield name, base_url, started.stderr
    finally:
        docker("rm", "--force", "--volumes", name, check=False)


@pytest.fixture(scope="module")
def container(image: str) -> Iterator[tuple[str, str]]:
    """A running container with the flags the code sandbox (bubblewrap) needs: (name, base URL)."""
    with running(image, *SANDBOX_FLAGS) as (name, base_url, stderr):
        assert stderr == "", stderr  # no "IPv4 forwarding is disabled" or any other warning
        yield name, base_url


def _wait_ready(name: str, base_url: str) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    last = "no answer"
    while time.monotonic() < deadline:
        running = docker("inspect", "--format", "{{.State.Running}}", name).stdout.strip()
        if running != "true":
            logs = docker("logs", name, check=False)
            pytest.fail(f"the container exited before /readyz said ready:\n{_tail(logs.stdout + logs.stderr)}")
        try:
            reply = httpx.get(f"{base_url}/readyz", timeout=2)
            if reply.status_code == 200:
                return
            last = f"{reply.status_code} {reply.text}"
        except httpx.TransportError as exc:
            last = repr(exc)
        time.sleep(0.5)
    logs = docker("logs", name, check=False)
    pytest.fail(f"/readyz not ready after {READY_TIMEOUT_S}s (last: {last}):\n{_tail(logs.stdout + logs.stderr)}")


def test_scores_a_math_batch(container: tuple[str, str]) -> None:
    _, base_url = container
    items = [
        {"id": "boxed", "verifier": "math", "response": "So the total is \\boxed{42}.", "ground_truth": "42"},
        {"id": "frac", "verifier": "math", "response": "The answer is $\\frac{1}{2}$.", "ground_truth": "0.5"},
        {"id": "wrong", "verifier": "math", "response": "Final answer: 41", "ground_truth": "42"},
        {"id": "no-anchor", "verifier": "math", "response": "I think 6*7 is 42 but", "ground_truth": "42"},
        {"id": "alias", "verifier": "gsm8k", "response": "#### 1,234", "ground_truth": "1234"},
        {"id": "unknown", "verifier": "no-such-verifier", "response": "42", "ground_truth": "42"},
    ]
    reply = httpx.post(f"{base_url}/v1/verify", json={"items": items}, timeout=60)
    assert reply.status_code == 200, reply.text
    results = {r["id"]: r for r in reply.json()["results"]}
    assert list(results) == [item["id"] for item in items]

    for item_id, reward in [("boxed", 1.0), ("frac", 1.0), ("wrong", 0.0), ("no-anchor", 0.0), ("alias", 1.0)]:
        assert (results[item_id]["status"], results[item_id]["reward"]) == ("ok", reward), results[item_id]
    assert results["unknown"]["status"] == "invalid"
    assert "no-such-verifier" in results["unknown"]["error"]


def test_settings_come_from_olmorl_env(container: tuple[str, str]) -> None:
    _, base_url = container
    assert httpx.get(f"{base_url}/readyz", timeout=5).json()["workers"] == int(CONTAINER_ENV["OLMORL_WORKERS"])
    verifiers = {v["name"] for v in httpx.get(f"{base_url}/v1/verifiers", timeout=5).json()}
    assert "math" in verifiers


def test_runs_as_non_root_with_a_working_healthcheck(container: tuple[str, str]) -> None:
    name, _ = container
    assert docker("exec", name, "id", "-u").stdout.strip() == "10001"
    # Run the image's own HEALTHCHECK command now rather than waiting for its first interval.
    test = docker("inspect", "--format", "{{json .Config.Healthcheck.Test}}", name).stdout
    kind, command = json.loads(test)
    assert kind == "CMD-SHELL", test
    check = docker("exec", name, "sh", "-c", command, check=False)
    assert check.returncode == 0, check.stderr
    docker("exec", name, "sh", "-c", "kill -0 1")  # PID 1 (tini) is alive


def test_code_runs_in_the_bubblewrap_sandbox_inside(container: tuple[str, str]) -> None:
    """Model-written code runs under bubblewrap inside the container (the run flags allow it)."""
    _, base_url = container
    program = "```python\ndef add(a, b):\n    return a {op} b\n```"
    items = [
        {"id": "right", "verifier": "code", "response": program.format(op="+"),
         "ground_truth": ["assert add(1, 2) == 3", "assert add(2, 2) == 4"]},
        {"id": "wrong", "verifier": "code", "response": program.format(op="-"),
         "ground_truth": ["assert add(1, 2) == 3"]},
    ]
    reply = httpx.post(f"{base_url}/v1/verify", json={"items": items}, timeout=60)
    assert reply.status_code == 200, reply.text
    right, wrong = reply.json()["results"]
    assert (right["status"], right["reward"], right["details"]["backend"]) == ("ok", 1.0, "bwrap"), right
    assert (wrong["status"], wrong["reward"]) == ("ok", 0.0), wrong


def test_without_the_sandbox_flags_code_is_not_ready_and_says_which_flags(image: str) -> None:
    with running(image) as (_, base_url, _stderr):
        code = httpx.get(f"{base_url}/readyz", timeout=5).json()["verifiers"]["code"]
        item = {"verifier": "code", "response": "print(1)", "ground_truth": ["assert True"]}
        result = httpx.post(f"{base_url}/v1/verify", json={"items": [item]}, timeout=60).json()["results"][0]
    assert code["ready"] is False, code
    assert "--security-opt seccomp=unconfined --security-opt systempaths=unconfined" in code["unavailable"]
    assert result["status"] == "error" and "--security-opt seccomp=unconfined" in result["error"], result


def test_image_size_and_no_untagged_stage_images(image: str) -> None:
    size_mb = int(docker("image", "inspect", "--format", "{{.Size}}", image).stdout) / 1e6
    print(f"{image}: {size_mb:.0f} MB")
    assert size_mb <= 350, f"{image} is {size_mb:.0f} MB"
    for stage in ("build", "wheel"):  # the earlier stages are named images (and the next build's cache)
        docker("image", "inspect", f"{image}-{stage}")


def test_image_installs_the_versions_constraints_txt_pins(image: str) -> None:
    """The image runs what CI tested: every distribution in its venv at constraints.txt's version."""
    listing = docker("run", "--rm", "--network", "none", "--entrypoint", "/opt/olmorl/bin/python", image, "-c",
                     "import importlib.metadata as m, json; "
                     "print(json.dumps({d.metadata['Name']: d.version for d in m.distributions()}))").stdout
    installed = {_canonical(name): version for name, version in json.loads(listing).items()}
    pins = {}
    for line in (REPO / "constraints.txt").read_text().splitlines():
        if "==" in line and not line.startswith("#"):
            name, version = line.split("==", 1)
            pins[_canonical(name)] = version.strip()
    for own in ("olmorl", "setuptools"):  # the package itself; setuptools is the venv's own seed
        installed.pop(own, None)
    unpinned = sorted(set(installed) - set(pins))
    differing = {name: (version, pins[name]) for name, version in installed.items()
                 if name in pins and version != pins[name]}
    assert not unpinned and not differing, f"not in constraints.txt: {unpinned}; image vs pin: {differing}"


def _canonical(name: str) -> str:
    return name.lower().replace("_", "-").replace(".", "-")


def _tail(text: str | bytes | None, lines: int = 40) -> str:
    if isinstance(text, bytes):
        text = text.decode(errors="replace")
    return "\n".join((text or "").splitlines()[-lines:])
