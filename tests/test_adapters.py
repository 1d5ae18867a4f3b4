"""Trainer adapters against a live reward server (math, IF, string and judge verifiers; the judge
calls the scripted OpenAI server): TRL reward functions, verl `compute_score`, the OpenRLHF route."""

from __future__ import annotations

import functools
import gc
import importlib
import inspect
import json
import pickle

import httpx
import numpy as np
import pytest
from fake_openai import FakeOpenAI
from trl.trainer.utils import get_callable_name, is_async_callable

from olmorl.clients import ItemFailed, RewardServerUnavailable
from olmorl.clients import trl as olmorl_trl
from olmorl.clients import verl as olmorl_verl
from olmorl.rewards.service._local import LocalRewardServer, free_port
from olmorl.rewards._settings import JudgeSettings

IFEVAL_TRUTH = json.dumps({"instruction_id": ["change_case:english_lowercase"], "kwargs": [None]})


@pytest.fixture(scope="module")
def server_url():
    with FakeOpenAI(models=("judge-model",), default_script="json 10") as judge:
        settings = JudgeSettings(base_url=judge.url, model="judge-model", max_retries=0)
        with LocalRewardServer(workers=2, judge=settings) as server:
            yield server.url


# -- TRL -------------------------------------------------------------------------------------------------
TRL_FUNCTIONS = [olmorl_trl.math_reward, olmorl_trl.code_reward, olmorl_trl.ifeval_reward,
                 olmorl_trl.judge_reward, olmorl_trl.olmorl_reward]


@pytest.mark.parametrize("func", TRL_FUNCTIONS, ids=lambda f: f.__name__)
def test_trl_functions_are_async_picklable_and_named(func):
    configured = functools.partial(func, base_url="http://127.0.0.1:1", on_error="none")
    for form in (func, configured):
        assert inspect.iscoroutinefunction(form) and is_async_callable(form)
        restored = pickle.loads(pickle.dumps(form))
        assert get_callable_name(restored) == func.__name__
    assert restored.keywords == {"base_url": "http://127.0.0.1:1", "on_error": "none"}
    # `trl grpo --reward_funcs olmorl.clients.trl.<name>` resolves a dotted path this way (trl/scripts/grpo.py)
    module_path, name = f"olmorl.clients.trl.{func.__name__}".rsplit(".", 1)
    assert getattr(importlib.import_module(module_path), name) is func


async def test_trl_standard_and_conversational_formats(server_url):
    truths = ["4", "4"]
    standard = await olmorl_trl.math_reward(
        prompts=["2+2?", "2+2?"], completions=["It is $\\boxed{4}$.", "It is $\\boxed{5}$."],
        completion_ids=[[1], [2]], ground_truth=truths, base_url=server_url, trainer_state=None)
    assert standard == [1.0, 0.0]
    conversational = await olmorl_trl.math_reward(
        prompts=[[{"role": "user", "content": "2+2?"}]] * 2,
        completions=[[{"role": "assistant", "content": "\\boxed{4}"}],
                     [{"role": "assistant", "content": "Thinking"}, {"role": "tool", "content": "4"},
                      {"role": "assistant", "content": [{"type": "text", "text": "\\boxed{5}"}]}]],
        ground_truth=truths, base_url=server_url)
    assert conversational == [1.0, 0.0]
    # TRL's own accuracy_reward names its column `solution`
    assert await olmorl_trl.math_reward(prompts=["q"], completions=["\\boxed{7}"], solution=["7"],
                                        base_url=server_url) == [1.0]


async def test_trl_families_share_a_multi_task_dataset(server_url):
    rows = {
        "dataset": ["gsm8k", "ifeval", "general-quality", "MATH", "string_matcher"],
        "ground_truth": ["4", IFEVAL_TRUTH, None, "9", "paris"],
        "prompts": ["2+2?", "Say hi in lower case.", "Say something kind.", "3*3?", "Capital of France?"],
        "completions": ["#### 4", "hi there", "You are great.", "\\boxed{9}", "<answer>Paris</answer>"],
    }
    logged: dict[str, float] = {}
    common = dict(base_url=server_url, log_metric=logged.__setitem__, log_extra=lambda *a: None)
    assert await olmorl_trl.math_reward(**rows, **common) == [1.0, None, None, 1.0, None]
    assert await olmorl_trl.ifeval_reward(**rows, **common) == [None, 1.0, None, None, None]
    assert await olmorl_trl.judge_reward(**rows, **common) == [None, None, 1.0, None, None]
    assert await olmorl_trl.code_reward(**rows, **common) == [None] * 5
    assert await olmorl_trl.olmorl_reward(**rows, **common) == [1.0, 1.0, 1.0, 1.0, 1.0]
    assert logged["olmorl/math_reward/not_ok_frac"] == 0.0
    # a `verifier` column wins over `dataset` (row 2 has no reference for string_match: not scored, None)
    assert await olmorl_trl.olmorl_reward(**{**rows, "verifier": ["string_match"] * 5}, **common) == [0.0, 0.0, None,
                                                                                                    0.0, 1.0]


async def test_trl_multi_verifier_rows_sum_and_errors_follow_on_error(server_url, caplog):
    both = await olmorl_trl.olmorl_reward(
        prompts=["q"], completions=["\\boxed{4} <answer>4</answer>"], dataset=[["math", "string_match"]],
        ground_truth=[["4", "4"]], base_url=server_url)
    assert both == [2.0]
    bad = dict(prompts=["q", "q", "q"], completions=["\\boxed{1}", "x", "\\boxed{1} <answer>1</answer>"],
               verifier=["math", "no_such_verifier", ["math", "no_such_verifier"]], ground_truth=["1", "1", "1"],
               base_url=server_url)
    logged: dict[str, float] = {}
    with caplog.at_level("WARNING", logger="olmorl.clients"):
        # default: an unscored item is None (TRL skips it); a multi-verifier row with an unscored check too
        assert await olmorl_trl.olmorl_reward(**bad, log_metric=logged.__setitem__) == [1.0, None, None]
    assert logged == {"olmorl/olmorl_reward/not_ok_frac": 0.5}
    warning = [r.getMessage() for r in caplog.records if r.name == "olmorl.clients"][-1]
    assert "2 of 4 items not scored (invalid 2) -> reward None" in warning and "no_such_verifier" in warning
    zero = functools.partial(olmorl_trl.olmorl_reward, on_error="zero")  # the explicit choice
    assert await zero(**bad) == [1.0, 0.0, 1.0]
    with pytest.raises(ItemFailed, match="invalid"):
        await functools.partial(olmorl_trl.olmorl_reward, on_error="raise")(**bad)
    with pytest.raises(ValueError, match="verifier.*dataset"):
        await olmorl_trl.olmorl_reward(prompts=["q"], completions=["a"], ground_truth=["a"], base_url=server_url)


async def test_trl_dead_server_raises_instead_of_zero_rewards():
    dead = f"http://127.0.0.1:{free_port()}"
    for func in (olmorl_trl.math_reward, functools.partial(olmorl_trl.olmorl_reward, on_error="zero")):
        with pytest.raises(RewardServerUnavailable, match="unavailable after 6 attempts: ConnectError"):
            await func(prompts=["q"], completions=["\\boxed{1}"], ground_truth=["1"], verifier=["math"],
                       base_url=dead)


async def test_trl_missing_ground_truth_column_is_a_configuration_error(server_url):
    with pytest.raises(ValueError, match=r"math_reward needs a `ground_truth` \(or `solution`\) column.*"
                                         r"columns are: answer, trainer_state"):
        await olmorl_trl.math_reward(prompts=["q"], completions=["\\boxed{1}"], answer=["1"], trainer_state=None,
                                     base_url=server_url)
    # a judge needs no reference
    assert await olmorl_trl.judge_reward(prompts=["q"], completions=["Kind words."], base_url=server_url) == [1.0]


async def test_trl_function_called_without_await_says_so(server_url):
    pending = olmorl_trl.math_reward(prompts=["q"], completions=["\\boxed{1}"], ground_truth=["1"],
                                     base_url=server_url)
    with pytest.raises(TypeError, match=r"math_reward is a coroutine function \(TRL awaits it\): use "
                                        r"`await math_reward\(...\)` or `asyncio.run"):
        pending[0]
    with pytest.warns(RuntimeWarning, match="called but never awaited, so nothing was scored"):
        del pending
        gc.collect()
    assert await olmorl_trl.math_reward(prompts=["q"], completions=["\\boxed{1}"], ground_truth=["1"],
                                        base_url=server_url) == [1.0]


async def test_trl_url_and_token_from_environment(reward_server, monkeypatch):
    url = reward_server(workers=1, api_key="tok")
    monkeypatch.setenv("OLMORL_URL", url)
    monkeypatch.setenv("OLMORL_API_KEY", "tok")
    assert await olmorl_trl.math_reward(prompts=["q"], completions=["\\boxed{2}"], ground_truth=["2"]) == [1.0]


# -- verl ------------------------------------------------------------------------------------------------
def load_like_verl(name: str, **reward_kwargs):
    """What verl's `custom_reward_function.path=pkg://olmorl.clients.verl` + `.name` + `.reward_kwargs` does."""
    module = importlib.import_module("pkg://olmorl.clients.verl".removeprefix("pkg://"))
    return functools.partial(getattr(module, name), **reward_kwargs)


def test_verl_compute_score_as_the_naive_manager_calls_it(server_url):
    compute_score = load_like_verl("compute_score", base_url=server_url)
    hit = compute_score(data_source="openai/gsm8k", solution_str="so #### 12", ground_truth="12",
                        extra_info={"index": 0, "split": "train"})
    assert hit == {"score": 1.0, "acc": 1.0, "invalid": 0.0, "timeout": 0.0, "error": 0.0}
    miss = compute_score(data_source="lighteval/MATH", solution_str="\\boxed{3}", ground_truth="4")
    assert (miss["score"], miss["acc"]) == (0.0, 0.0)
    chosen = compute_score("whatever", "<answer>Oslo</answer>", "oslo", {"verifier": "string_match"})
    assert chosen["score"] == 1.0
    unknown = compute_score("my_private_set", "x", "y")
    assert unknown["score"] == 0.0 and unknown["invalid"] == 1.0
    with pytest.raises(ItemFailed, match="my_private_set"):
        load_like_verl("compute_score", base_url=server_url, on_error="raise")("my_private_set", "x", "y")


def test_verl_dead_server_raises_and_failures_are_logged_with_counts(server_url, caplog):
    dead = f"http://127.0.0.1:{free_port()}"
    with pytest.raises(RewardServerUnavailable, match="ConnectError"):
        load_like_verl("compute_score_batch", base_url=dead)(["openai/gsm8k"], ["#### 1"], ["1"])
    olmorl_verl._NOT_OK._last_line = float("-inf")  # the log is rate-limited: open the window for this test
    with caplog.at_level("WARNING", logger="olmorl.clients"):
        scores = load_like_verl("compute_score_batch", base_url=server_url)(
            ["openai/gsm8k", "my_private_set", "my_private_set"], ["#### 1", "x", "y"], ["1", "1", "1"])
    assert [s["invalid"] for s in scores] == [0.0, 1.0, 1.0]
    assert any("2 of 3 items not scored (invalid 2)" in r.getMessage() for r in caplog.records)


def test_verl_batch_variant_and_numpy_ground_truths(server_url):
    compute_score_batch = load_like_verl("compute_score_batch", base_url=server_url)
    scores = compute_score_batch(
        data_sources=["openai/gsm8k", "string_match", "numina_olympiads", "ifeval"],
        solution_strs=["#### 5", "<answer>b</answer>", "\\boxed{6}", "ALL CAPS"],
        ground_truths=["5", np.array(["a", "b"]), np.str_("6"), IFEVAL_TRUTH],
        extra_infos=[{}, None, {"index": 3}, {}])
    assert [s["score"] for s in scores] == [1.0, 1.0, 1.0, 0.0]
    assert all(set(s) == {"score", "acc", "invalid", "timeout", "error"} for s in scores)


def test_verl_data_source_table():
    assert olmorl_verl.verifier_for("openai/gsm8k") == "math"
    assert olmorl_verl.verifier_for("numina_amc_aime") == "math"
    assert olmorl_verl.verifier_for("codecontests") == "code"
    assert olmorl_verl.verifier_for("gsm8k") == "gsm8k"  # open-instruct names pass through
    assert olmorl_verl.verifier_for("x", {"verifier": "judge"}) == "judge"


# -- OpenRLHF --------------------------------------------------------------------------------------------
def test_openrlhf_request_as_sent(server_url):
    prompt = "<|im_start|>user\nWhat is 6*7?<|im_end|>\n<|im_start|>assistant\n"
    labels = [json.dumps({"verifier": "math", "ground_truth": "42"}),
              {"verifier": "string_match", "ground_truth": ["x", "y"]},
              json.dumps({"verifier": "math", "ground_truth": "41"})]
    body = {"query": [prompt + "The answer is \\boxed{42}.<|im_end|>", prompt + "<answer>y</answer><|endoftext|>",
                      prompt + "\\boxed{42}<|im_end|>"],
            "prompts": [prompt] * 3, "labels": labels}
    reply = httpx.post(f"{server_url}/openrlhf/get_reward", json=body, timeout=30)
    assert reply.status_code == 200, reply.text
    data = reply.json()
    assert data["rewards"] == [1.0, 1.0, 0.0] and data["scores"] == [1.0, 1.0, 0.0]
    assert data["extra_logs"]["olmorl_ok"] == [1.0, 1.0, 1.0]


def test_openrlhf_empty_batch_bare_labels_and_bad_shapes(server_url):
    empty = httpx.post(f"{server_url}/openrlhf/get_reward", json={"query": [], "prompts": [], "labels": []}).json()
    assert empty["rewards"] == [] and empty["scores"] == [] and all(v == [] for v in empty["extra_logs"].values())
    bare = {"query": ["Q: 1+1? A: \\boxed{2}"], "prompts": ["Q: 1+1? A: "], "labels": ["2"]}
    assert httpx.post(f"{server_url}/openrlhf/get_reward?verifier=math", json=bare).json()["rewards"] == [1.0]
    unnamed = httpx.post(f"{server_url}/openrlhf/get_reward", json=bare).json()
    assert unnamed["rewards"] == [0.0] and unnamed["extra_logs"]["olmorl_invalid"] == [1.0]
    mismatched = httpx.post(f"{server_url}/openrlhf/get_reward", json={"query": ["a", "b"], "labels": ["1"]})
    assert mismatched.status_code == 422 and "labels" in mismatched.text


def test_openrlhf_unknown_query_verifier_or_no_labels_is_a_422_naming_it(server_url):
    """Both used to be a 200 with every sample scored 0 and flagged `invalid`: a misconfigured run that trains."""
    bare = {"query": ["Q: 1+1? A: \\boxed{2}"], "prompts": ["Q: 1+1? A: "], "labels": ["2"]}
    typo = httpx.post(f"{server_url}/openrlhf/get_reward?verifier=maths", json=bare)
    assert typo.status_code == 422 and "unknown verifier 'maths' in ?verifier=" in typo.json()["detail"]
    alias = httpx.post(f"{server_url}/openrlhf/get_reward?verifier=MATH", json=bare)  # aliases and case resolve
    assert alias.status_code == 200 and alias.json()["rewards"] == [1.0]
    unlabeled = httpx.post(f"{server_url}/openrlhf/get_reward?verifier=math", json={"query": bare["query"]})
    assert unlabeled.status_code == 422 and "no `labels`" in unlabeled.json()["detail"]
    empty = httpx.post(f"{server_url}/openrlhf/get_reward", json={"query": []})  # a shard's empty batch stays fine
    assert empty.status_code == 200 and empty.json()["rewards"] == []


def test_openrlhf_unscored_samples_are_flagged_and_logged_with_counts(reward_server):
    url = reward_server(workers=1)
    body = {"query": ["Q: \\boxed{2}", "Q: \\boxed{3}", "Q: x"], "prompts": ["Q: "] * 3,
            "labels": [json.dumps({"verifier": "math", "ground_truth": "2"}), "3",
                       json.dumps({"verifier": "no_such_verifier", "ground_truth": "x"})]}
    data = httpx.post(f"{url}/openrlhf/get_reward", json=body, timeout=30).json()
    assert data["rewards"] == [1.0, 0.0, 0.0] and data["extra_logs"]["olmorl_invalid"] == [0.0, 1.0, 1.0]
    log = reward_server.servers[0].log_path
    warning = next(line for line in open(log) if "/openrlhf/get_reward:" in line)
    assert "2 of 3 items not scored (invalid 2) -> reward 0 with its olmorl_<status> flag" in warning
