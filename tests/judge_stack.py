"""A scripted judge (tests/fake_openai.py) and a real reward server pointed at it, for judge tests that
need no other setup; module-scoped fixtures wrap `judge_stack`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from fake_openai import FakeOpenAI

from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import JudgeSettings

MODEL = "judge-model"


@dataclass
class Stack:
    fake: FakeOpenAI
    url: str


@contextmanager
def judge_stack(log_dir: Path, **settings: Any) -> Iterator[Stack]:
    with FakeOpenAI(models=(MODEL,)) as fake:
        judge = JudgeSettings(base_url=fake.url, model=MODEL, **settings)
        with LocalRewardServer(workers=1, judge=judge, log_path=str(log_dir / "reward-server.log")) as server:
            yield Stack(fake, server.url)


def verify(url: str, items: list[dict]) -> list[dict]:
    reply = httpx.post(f"{url}/v1/verify", json={"items": items}, timeout=60)
    assert reply.status_code == 200, reply.text
    return reply.json()["results"]


def prompt_containing(fake: FakeOpenAI, text: str) -> str:
    """The first judge prompt the fake received that contains `text`."""
    for body in fake.requests:
        prompt = body["messages"][0]["content"]
        if text in prompt:
            return prompt
    raise AssertionError(f"no judge call carried {text!r}")
