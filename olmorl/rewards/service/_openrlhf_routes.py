"""OpenRLHF remote reward model route: `--reward.remote_url http://HOST:PORT/openrlhf/get_reward`
(older OpenRLHF: `--remote_rm_url`).

OpenRLHF POSTs `{"query": [...], "prompts": [...], "labels": [...]}`: `query` is the decoded prompt and
response (special tokens kept), `prompts` the templated prompt, `labels` the dataset column named by
`--data.label_key`. It reads back `{"rewards": [...], "scores": [...], "extra_logs": {...}}`.

Each label says how to score its sample, as a JSON object (or its JSON text):
    {"verifier": "math", "ground_truth": "42", "options": {...}}
A label that is not such an object is taken as the ground truth itself, scored with the verifier named
by the `verifier` query parameter (`.../openrlhf/get_reward?verifier=math`); without one, that sample
is `invalid`. An unknown `?verifier=`, or a batch with no `labels` at all, is a 422 naming the problem. The response is `query` minus its `prompts` prefix, with trailing end-of-turn tokens
(`END_TOKENS`) removed. OpenRLHF needs a number for every sample (no per-sample skip), so a sample
not scored `ok` gets reward 0 with its status flag at 1 in `extra_logs` (`olmorl_invalid`,
`olmorl_timeout`, `olmorl_error`, which OpenRLHF averages into its logged metrics), and the server logs
a warning with the counts by status (at most every 30 s). A `composite` label's reward is the
aggregate; each component's reward is in `extra_logs["olmorl_component/<name>"]` (NaN where a sample has no
such component or it was not scored; sent as JSON's NaN literal, which Python's json, OpenRLHF's, reads). An empty batch (OpenRLHF sends one to every server but the first when it
shards one sample over several URLs) gets empty lists.

Token counts (for the `overlong` and `length` verifiers, alone or as composite components): OpenRLHF sends text,
so with the server's `tokenizer` setting (`OLMORL_TOKENIZER`: the policy's tokenizer.json or its directory) each
sample whose verifier may read it (`overlong`, `length`, `composite`) gets `completion_tokens`: the token count of
its query after the prompt, end-of-turn tokens included as
generated (olmorl.rewards._token_count). Without it, or where the query does not start with its prompt, a
sample that needs a count is `invalid`, and the message names the setting.

OpenRLHF sends no Authorization header, so a server started with an API key refuses this route with
401; run it without a key on loopback, or on a private network with `--allow-unauthenticated-remote`
(without a key, `serve` refuses any other host).
"""

from __future__ import annotations

import asyncio
import json
import logging
import math
from typing import TYPE_CHECKING, Any

from fastapi import APIRouter, HTTPException, Response
from pydantic import BaseModel, Field

from olmorl.rewards._models import VerifyResult
from olmorl.rewards._not_ok import NotOkLog
from olmorl.rewards._token_count import TokenCounter
from olmorl.rewards.engine._composite import component_rewards

if TYPE_CHECKING:
    from olmorl.rewards.engine._engine import RewardEngine

END_TOKENS = ("<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|end_of_text|>", "<|end|>", "</s>", "<eos>",
              "<end_of_turn>")


NO_VERIFIER = ("the label names no verifier: give {\"verifier\": ..., \"ground_truth\": ...} or add "
               "?verifier=NAME to the reward URL")


class OpenRLHFRequest(BaseModel):
    query: list[str] = Field(description="Prompt + response as decoded by OpenRLHF (special tokens kept).")
    prompts: list[str] | None = Field(default=None, description="The prompt of each query (stripped from it).")
    labels: list[Any] | None = Field(default=None, description="Per sample: {verifier, ground_truth, options} "
                                                               "as an object or JSON text, or a bare ground truth.")


class OpenRLHFResponse(BaseModel):
    rewards: list[float]
    scores: list[float]
    extra_logs: dict[str, list[float]]


def completion_of(query: str, prompt: str | None) -> str | None:
    """The generated text as decoded (end-of-turn tokens kept, as counted); None where no prompt prefixes it."""
    return query[len(prompt):] if prompt and query.startswith(prompt) else None


def response_of(query: str, prompt: str | None) -> str:
    """The completion inside an OpenRLHF query: the part after its prompt, end-of-turn tokens trimmed."""
    completion = completion_of(query, prompt)
    text = (query if completion is None else completion).rstrip()
    trimmed = True
    while trimmed:
        trimmed = False
        for token in END_TOKENS:
            if text.endswith(token):
                text, trimmed = text[: -len(token)].rstrip(), True
    return text


def completion_counts(counter: TokenCounter, queries: list[str], prompts: list[str | None]) -> list[int | None]:
    """Each query's completion_tokens: its completion's count, None where no prompt prefixes it (not a guess)."""
    completions = [completion_of(query, prompt) for query, prompt in zip(queries, prompts)]
    counted = iter(counter.counts([text for text in completions if text is not None]))
    return [None if text is None else next(counted) for text in completions]


def item_of(query: str, prompt: str | None, label: Any, default_verifier: str | None) -> dict[str, Any]:
    spec = label
    if isinstance(label, str):
        try:
            spec = json.loads(label)
        except ValueError:
            spec = label
    item: dict[str, Any] = {"response": response_of(query, prompt), "prompt": prompt}
    if isinstance(spec, dict) and "verifier" in spec:
        item.update({"verifier": spec["verifier"], "ground_truth": spec.get("ground_truth"),
                     "options": spec.get("options") or {}})
    else:
        item.update({"verifier": default_verifier, "ground_truth": label})  # no verifier -> `invalid`
    return item


def openrlhf_routes(engine: RewardEngine) -> APIRouter:
    router = APIRouter(tags=["compat"])
    not_ok = NotOkLog(logging.getLogger("olmorl.rewards"), "/openrlhf/get_reward", every_s=30.0)
    counter = TokenCounter(engine.settings.tokenizer) if engine.settings.tokenizer else None  # loaded once

    def reads_tokens(name: Any) -> bool:
        """Only samples whose verifier may read completion_tokens are counted (counting costs CPU)."""
        canonical = engine.canonical(name) if isinstance(name, str) else None
        return canonical is not None and engine.verifiers[canonical].reads_completion_tokens

    @router.post("/openrlhf/get_reward", response_model=OpenRLHFResponse,
                 summary="OpenRLHF remote reward model (--reward.remote_url)")
    async def get_reward(request: OpenRLHFRequest, verifier: str | None = None) -> Response:
        size = len(request.query)
        for name in ("prompts", "labels"):
            given = getattr(request, name)
            if given is not None and len(given) != size:
                raise HTTPException(422, f"`{name}` has {len(given)} entries but `query` has {size}")
        if size and request.labels is None:
            raise HTTPException(422, "no `labels`: each sample needs one ({\"verifier\": ..., \"ground_truth\": ...}, "
                                     "or the bare ground truth with ?verifier=NAME); pass --data.label_key to OpenRLHF")
        if verifier is not None and engine.canonical(verifier) is None:
            raise HTTPException(422, f"unknown verifier {verifier!r} in ?verifier= (GET /v1/verifiers lists them)")
        if size > engine.settings.max_items_per_request:
            raise HTTPException(413, f"batch of {size} samples exceeds "
                                     f"max_items_per_request={engine.settings.max_items_per_request}")
        prompts: list[str | None] = list(request.prompts) if request.prompts else [None] * size
        labels = request.labels or []
        items = [item_of(q, p, label, verifier) for q, p, label in zip(request.query, prompts, labels)]
        counted = [i for i, item in enumerate(items) if reads_tokens(item["verifier"])]
        if counter is not None and counted:  # off the event loop: a 16k-token completion takes ~60-80 ms of CPU
            counts = await asyncio.to_thread(completion_counts, counter, [request.query[i] for i in counted],
                                             [prompts[i] for i in counted])
            for i, count in zip(counted, counts):
                if count is not None:
                    items[i]["completion_tokens"] = count
        named = [i for i, item in enumerate(items) if item["verifier"] is not None]
        results = [VerifyResult(verifier="", reward=None, status="invalid", error=NO_VERIFIER)] * size
        for index, result in zip(named, await engine.verify_batch([items[i] for i in named])):
            results[index] = result
        not_ok.record(results, "0 with its olmorl_<status> flag")
        rewards = [float(r.reward or 0.0) for r in results]
        logs = {f"olmorl_{status}": [float(r.status == status) for r in results]
                for status in ("ok", "invalid", "timeout", "error")}
        parts = [component_rewards(r) for r in results]
        for name in dict.fromkeys(name for found in parts for name in found):
            logs[f"olmorl_component/{name}"] = [found.get(name, math.nan) for found in parts]
        reply = OpenRLHFResponse(rewards=rewards, scores=[min(max(r, 0.0), 1.0) for r in rewards], extra_logs=logs)
        # NaN stays NaN (a null would break OpenRLHF's tensors); its client is Python, whose json reads NaN
        return Response(json.dumps(reply.model_dump()), media_type="application/json")

    return router
