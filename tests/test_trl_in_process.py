"""The TRL reward functions with no server (`in_process=`): the same rewards as through a live server with the same
settings (math, IF, code in the bwrap sandbox, a judge on the scripted OpenAI server), the same error policy, and
TRL's GRPOTrainer stepping on them."""

from __future__ import annotations

import functools
import inspect
import math
import pickle

import pytest
from fake_openai import FakeOpenAI
from trl.trainer.utils import get_callable_name, is_async_callable

import olmorl
from olmorl.clients import ItemFailed
from olmorl.clients import _trl_scorer
from olmorl.clients import trl as olmorl_trl
from olmorl.rewards.service._local import LocalRewardServer, free_port
from olmorl.rewards._settings import JudgeSettings, SandboxSettings

IFEVAL_TRUTH = {"instruction_id": ["change_case:english_lowercase"], "kwargs": [None]}
ROWS = {
    "dataset": ["gsm8k", "ifeval", "general-quality", "MATH", "code", "code", "no_such_verifier"],
    "ground_truth": ["4", IFEVAL_TRUTH, None, "9", ["assert f() == 1"], ["assert f() == 1", "assert f() == 2"], "x"],
    "prompts": ["2+2?", "Say hi in lower case.", "Say something kind.", "3*3?", "f", "f", "?"],
    "completions": ["#### 4", "hi there", "You are great.", "\\boxed{8}", "```python\ndef f():\n    return 1\n```",
                    "```python\ndef f():\n    return 1\n```", "x"],
}
FAMILIES = [olmorl_trl.math_reward, olmorl_trl.code_reward, olmorl_trl.ifeval_reward, olmorl_trl.judge_reward,
            olmorl_trl.olmorl_reward]


@pytest.fixture(scope="module")
def both():
    """(server URL, in-process verifier), with the same settings."""
    with FakeOpenAI(models=("judge-model",), default_script="json 10") as judge:
        settings = dict(workers=1, judge=JudgeSettings(base_url=judge.url, model="judge-model", max_retries=0),
                        sandbox=SandboxSettings(backend="bwrap"))
        with LocalRewardServer(**settings) as server, olmorl.InProcessVerifier(**settings) as verifier:
            yield server.url, verifier


@pytest.mark.parametrize("func", FAMILIES, ids=lambda f: f.__name__)
async def test_in_process_rewards_equal_the_servers(both, func):
    url, verifier = both
    served = await func(**ROWS, base_url=url)
    in_process = await func(**ROWS, in_process=verifier)
    assert in_process == served
    assert in_process == {
        "math_reward": [1.0, None, None, 0.0, None, None, None],
        "code_reward": [None, None, None, None, 1.0, 0.5, None],
        "ifeval_reward": [None, 1.0, None, None, None, None, None],
        "judge_reward": [None, None, 1.0, None, None, None, None],
        "olmorl_reward": [1.0, 1.0, 1.0, 0.0, 1.0, 0.5, None],  # the unknown verifier is not scored: None, not 0
    }[func.__name__]


async def test_in_process_error_policy_is_the_clients(both):
    _, verifier = both
    bad = dict(prompts=["q", "q"], completions=["\\boxed{1}", "x"], verifier=["math", "no_such_verifier"],
               ground_truth=["1", "1"], in_process=verifier)
    logged: dict[str, float] = {}
    assert await olmorl_trl.olmorl_reward(**bad, log_metric=logged.__setitem__) == [1.0, None]
    assert logged == {"olmorl/olmorl_reward/not_ok_frac": 0.5}
    assert await olmorl_trl.olmorl_reward(**bad, on_error="zero") == [1.0, 0.0]
    with pytest.raises(ItemFailed, match="invalid"):
        await olmorl_trl.olmorl_reward(**bad, on_error="raise")
    with pytest.raises(ValueError, match="not both"):
        await olmorl_trl.math_reward(prompts=["q"], completions=["1"], ground_truth=["1"], base_url="http://x",
                                     in_process=verifier)
    async with olmorl.AsyncInProcessVerifier(workers=1) as bound:  # bound to this loop, not TRL's: refused
        with pytest.raises(TypeError, match="AsyncInProcessVerifier is bound to the event loop"):
            await olmorl_trl.math_reward(prompts=["q"], completions=["1"], ground_truth=["1"], in_process=bound)


@pytest.fixture
def shared_engine(monkeypatch):
    """`in_process=True` builds one engine from the OLMORL_* environment; closed and forgotten after the test."""
    monkeypatch.setenv("OLMORL_WORKERS", "1")
    monkeypatch.setenv("OLMORL_URL", f"http://127.0.0.1:{free_port()}")  # nothing listens: HTTP would fail
    yield
    for verifier in _trl_scorer._SHARED:
        verifier.close()
    _trl_scorer._SHARED.clear()


async def test_in_process_true_shares_one_engine_and_stays_picklable(shared_engine):
    configured = functools.partial(olmorl_trl.math_reward, in_process=True)
    restored = pickle.loads(pickle.dumps(configured))
    assert inspect.iscoroutinefunction(restored) and is_async_callable(restored)
    assert get_callable_name(restored) == "math_reward"
    assert await restored(prompts=["q"], completions=["\\boxed{2}"], ground_truth=["2"]) == [1.0]
    assert await functools.partial(olmorl_trl.olmorl_reward, in_process=True)(
        prompts=["q"], completions=["\\boxed{2}"], ground_truth=["3"], verifier=["math"]) == [0.0]
    assert len(_trl_scorer._SHARED) == 1 and _trl_scorer._SHARED[0].settings.workers == 1


def test_grpo_trainer_steps_on_in_process_rewards(shared_engine, tmp_path):
    from datasets import Dataset
    from test_trl_grpo import tiny_model
    from trl import GRPOConfig, GRPOTrainer

    rows = [{"prompt": [{"role": "user", "content": f"{a}+{b}="}], "ground_truth": str(a + b), "verifier": "math"}
            for a, b in [(1, 2), (3, 4), (5, 6), (7, 1)]]
    config = GRPOConfig(
        output_dir=str(tmp_path / "out"), use_cpu=True, bf16=False, beta=0.0, max_steps=2, logging_steps=1,
        per_device_train_batch_size=4, num_generations=4, max_completion_length=12, learning_rate=1e-3,
        report_to=[], save_strategy="no", seed=0,
    )
    trainer = GRPOTrainer(model=tiny_model(tmp_path / "model"), processing_class=None, args=config,
                          train_dataset=Dataset.from_list(rows),
                          reward_funcs=[functools.partial(olmorl_trl.math_reward, in_process=True)])
    trainer.train()  # OLMORL_URL points nowhere: every reward was scored in this process
    logged = [entry["rewards/math_reward/mean"] for entry in trainer.state.log_history
              if "rewards/math_reward/mean" in entry]
    assert len(logged) == 2 and all(0.0 <= value <= 1.0 and not math.isnan(value) for value in logged)
