"""Every sandbox language on the `docker` backend, in the `full` sandbox image (docker/Dockerfile.full on
olmorl-base:bookworm, built once by `scripts/build-image.sh --sandbox-full`; the legacy builder's layer
cache makes later runs instant): correct and wrong programs and compile errors score right through
/v1/verify and /run_code, the packaged Python libraries import, and a fork bomb, a memory bomb and a
network attempt in compiled languages are contained while /healthz answers. The lean default image
runs Python and bash only, and says why for the rest."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import httpx
import pytest

from _language_programs import BROKEN, CORRECT, TESTS, WRONG, WRONG_REWARD, response
from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import SandboxSettings
from olmorl.sandbox import LANGUAGES
from test_code_containment import HealthWatch
from test_code_languages import ATTACKS, CANARY, RUN_CODE_NAMES

REPO = Path(__file__).resolve().parent.parent
FULL_IMAGE = "olmorl-sandbox:full"
BUILD_TIMEOUT_S = 1500  # cold: base image (1.5-5 min) + toolchains from apt (1.5-4 min)

pytestmark = [pytest.mark.docker, pytest.mark.timeout(BUILD_TIMEOUT_S + 300)]


@pytest.fixture(scope="module")
def full_server(tmp_path_factory: pytest.TempPathFactory):
    try:
        build = subprocess.run([str(REPO / "scripts" / "build-image.sh"), "--sandbox-full"], cwd=REPO,
                               capture_output=True, text=True, timeout=BUILD_TIMEOUT_S)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"scripts/build-image.sh --sandbox-full did not finish within {BUILD_TIMEOUT_S}s:\n{exc.stderr}")
    if build.returncode != 0:
        pytest.fail(f"scripts/build-image.sh --sandbox-full exited {build.returncode}:\n"
                    + "\n".join((build.stderr + build.stdout).splitlines()[-40:]))
    log = tmp_path_factory.mktemp("srv") / "server.log"
    # The per-test limit is wall-clock and covers a runtime's start: a runtime's first start from a cold page cache
    # under CI's load (node, `import numpy, sympy, pytest`) ran past 3 s in two CI runs. These tests are about each
    # language's verdicts; the time limit is tested on its own (the attacks below pass timeout_s=2.0).
    srv = LocalRewardServer(log_path=str(log), workers=1, sandbox=SandboxSettings(
        backend="docker", docker_image=FULL_IMAGE, parallelism=2, test_timeout_s=10.0)).start()
    yield srv
    srv.stop()


def verify(srv: LocalRewardServer, items: list[dict]) -> list[dict]:
    with HealthWatch(srv.url) as watch:
        reply = httpx.post(srv.url + "/v1/verify", json={"items": items}, timeout=600)
    assert reply.status_code == 200, reply.text
    assert not watch.failures, watch.failures
    return reply.json()["results"]


def failing(result: dict) -> list[dict]:
    """The tests a result did not pass, to say why in an assertion (the reward alone does not)."""
    return [t for t in result.get("details", {}).get("tests", []) if t.get("status") != "passed"] or [result]


def item(language: str, program: str, tests: Any = TESTS, **options: Any) -> dict:
    return {"verifier": "code_stdio", "response": response(language, program), "ground_truth": tests,
            "options": {"language": language, **options}}


def test_every_language_scores_right_in_the_full_image(full_server: LocalRewardServer) -> None:
    ready = httpx.get(full_server.url + "/readyz", timeout=10).json()["verifiers"]["code"]
    assert ready["languages"] == sorted(LANGUAGES), ready
    items = [item(lang, program) for lang in LANGUAGES for program in (CORRECT[lang], WRONG[lang])]
    items += [item(lang, program) for lang, program in BROKEN.items()]
    results = verify(full_server, items)
    for lang, (right, wrong) in zip(LANGUAGES, zip(results[0::2], results[1::2])):
        assert right["status"] == "ok" and right["reward"] == 1.0, (lang, failing(right))
        assert wrong["status"] == "ok" and wrong["reward"] == pytest.approx(WRONG_REWARD), (lang, wrong)
    for broken in results[2 * len(LANGUAGES):]:
        assert broken["status"] == "ok" and broken["reward"] == 0.0 and broken["details"]["compile_error"], broken


def test_run_code_and_packages_in_the_full_image(full_server: LocalRewardServer) -> None:
    stdin, expected = TESTS[3]["input"], TESTS[3]["output"]
    for lang in LANGUAGES:
        got = httpx.post(full_server.url + "/run_code", timeout=120, json={
            "code": CORRECT[lang], "language": RUN_CODE_NAMES[lang], "stdin": stdin}).json()
        assert got["status"] == "Success" and got["run_result"]["stdout"] == expected, (lang, got)
    program = ("import numpy, pytest, sympy, sortedcontainers\ninput()\n"
               "print(sum(sortedcontainers.SortedList(map(int, input().split()))))\n")
    [result] = verify(full_server, [item("python", program, memory_mb=256)])
    assert result["reward"] == 1.0, failing(result)


@pytest.mark.parametrize("language,attack", [("c", "fork_bomb"), ("java", "memory_bomb"), ("go", "network"),
                                             ("javascript", "write_outside"), ("bash", "read_expected")])
def test_attacks_are_contained_in_containers(full_server: LocalRewardServer, language: str, attack: str) -> None:
    [result] = verify(full_server, [item(language, ATTACKS[language][attack], CANARY, timeout_s=2.0)])
    assert result["status"] == "ok" and "compile_error" not in result["details"], result
    assert result["reward"] == 0.0 and "ESCAPED" not in str(result), result
    [honest] = verify(full_server, [item(language, CORRECT[language], TESTS[:1])])
    assert honest["reward"] == 1.0, honest


def test_the_lean_image_runs_python_and_bash_only(full_server: LocalRewardServer, reward_server) -> None:
    url = reward_server(workers=1, sandbox=SandboxSettings(backend="docker", parallelism=1))
    cpp, bash = httpx.post(url + "/v1/verify", timeout=300, json={"items": [
        item("cpp", CORRECT["cpp"]), item("bash", CORRECT["bash"])]}).json()["results"]
    assert cpp["status"] == "error" and "full" in cpp["error"], cpp
    assert bash["status"] == "ok" and bash["reward"] == 1.0, bash
