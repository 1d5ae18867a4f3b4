"""OpenRLHF and verl send text, so the completion's token count (for `overlong` and `length`) comes from the
policy's tokenizer.json: `/openrlhf/get_reward` counts with the server's `tokenizer` setting, verl's reward function
with its `tokenizer` reward kwarg; without either such a sample is `invalid` and the message names the setting.
Against real servers, with a tokenizer.json built here."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from pydantic import ValidationError
from tokenizers import AddedToken, Tokenizer, models, pre_tokenizers

from olmorl.clients import verl as olmorl_verl
from olmorl.rewards._settings import Settings
from olmorl.rewards._not_ok import NotOkLog
from olmorl.rewards._token_count import TokenCounter

PROMPT = "<|user|>What is 6 * 7?<|assistant|>"
OVERLONG = {"verifier": "overlong", "options": {"max_tokens": 12, "buffer_tokens": 8}}
COMPOSITE = {"verifier": "composite", "ground_truth": [{"verifier": "math", "ground_truth": "42"}, OVERLONG]}


def policy_tokenizer(directory: Path) -> Path:
    """A word-level tokenizer.json: words and punctuation runs (`\\w+|[^\\w\\s]+`), `<|im_end|>` one special
    token. Saved with truncation at 4 tokens, which counting must not apply."""
    vocab = {"[UNK]": 0, "the": 1, "answer": 2, "is": 3}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.add_special_tokens([AddedToken("<|im_end|>", special=True)])
    tokenizer.enable_truncation(max_length=4)
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(directory / "tokenizer.json"))
    return directory


def dapo(tokens: int, max_tokens: int = 12, buffer_tokens: int = 8) -> float:
    """DAPO's soft overlong punishment (Eq. 13), by hand."""
    start = max_tokens - buffer_tokens
    return 0.0 if tokens <= start else -1.0 if tokens > max_tokens else (start - tokens) / buffer_tokens


# each completion, with its tokens counted by hand: words and punctuation runs, <|im_end|> one token
COMPLETIONS = [
    # The | answer | is | \ | boxed | { | 42 | }. | <|im_end|>  ("}." is one punctuation run)
    ("The answer is \\boxed{42}.<|im_end|>", 9),
    # \ | boxed | { | 42 | } | <|im_end|>
    ("\\boxed{42}<|im_end|>", 6),
    # the x 10, \ | boxed | { | 41 | }, <|im_end|>
    ("the " * 10 + "\\boxed{41}<|im_end|>", 16),
]


def test_the_counter_counts_by_hand_and_ignores_the_files_truncation(tmp_path):
    counter = TokenCounter(str(policy_tokenizer(tmp_path / "policy")))  # a directory holding tokenizer.json
    assert counter.counts([text for text, _ in COMPLETIONS]) == [count for _, count in COMPLETIONS]
    assert TokenCounter(str(tmp_path / "policy" / "tokenizer.json")).counts([COMPLETIONS[2][0]]) == [16]  # the file


def test_openrlhf_overlong_gets_the_dapo_penalty_from_the_tokenizers_count(reward_server, tmp_path):
    url = reward_server(workers=1, tokenizer=str(policy_tokenizer(tmp_path / "policy")))
    queries = [PROMPT + text for text, _ in COMPLETIONS]
    body = {"query": queries + [queries[0], "elsewhere " + queries[0]], "prompts": [PROMPT] * 5,
            "labels": [json.dumps(COMPOSITE)] * 3 + [OVERLONG, OVERLONG]}
    reply = httpx.post(f"{url}/openrlhf/get_reward", json=body, timeout=60)
    assert reply.status_code == 200, reply.text
    data = json.loads(reply.text)
    (_, nine), (_, six), (_, sixteen) = COMPLETIONS
    # right answers: 1 + the penalty (9 tokens: -0.625; 6: -0.25); the wrong one: 0 + past the maximum (-1)
    expected = [1 + dapo(nine), 1 + dapo(six), 0 + dapo(sixteen), dapo(nine)]
    assert expected == [0.375, 0.75, -1.0, -0.625]
    assert data["rewards"][:4] == pytest.approx(expected)
    assert data["extra_logs"]["olmorl_component/overlong"][:3] == pytest.approx([-0.625, -0.25, -1.0])
    # a query that does not start with its prompt has no countable completion: invalid, not a guessed length
    assert data["extra_logs"]["olmorl_ok"] == [1.0, 1.0, 1.0, 1.0, 0.0]
    assert data["extra_logs"]["olmorl_invalid"][4] == 1.0 and data["rewards"][4] == 0.0


def test_openrlhf_overlong_without_a_tokenizer_is_invalid_naming_the_setting(reward_server):
    url = reward_server(workers=1)
    body = {"query": [PROMPT + COMPLETIONS[0][0]] * 2, "prompts": [PROMPT] * 2,
            "labels": [json.dumps(COMPOSITE), {"verifier": "length", "options": {"max_tokens": 100},
                                               "ground_truth": {"correct": True}}]}
    data = httpx.post(f"{url}/openrlhf/get_reward", json=body, timeout=60).json()
    assert data["rewards"] == [0.0, 0.0] and data["extra_logs"]["olmorl_invalid"] == [1.0, 1.0]
    log = reward_server.servers[0].log_path
    warning = next(line for line in open(log) if "/openrlhf/get_reward:" in line)
    assert "2 of 2 items not scored (invalid 2)" in warning
    assert "needs the item's completion_tokens" in warning and "OLMORL_TOKENIZER" in warning


def test_a_tokenizer_setting_naming_no_tokenizer_json_is_refused_at_start(tmp_path):
    with pytest.raises(ValidationError, match="no tokenizer.json at"):
        Settings(tokenizer=str(tmp_path))  # a directory without one
    with pytest.raises(ValidationError, match="no tokenizer.json at"):
        Settings(tokenizer=str(tmp_path / "missing.json"))


def test_verl_counts_the_solution_with_its_tokenizer_kwarg(reward_server, tmp_path, monkeypatch):
    url = reward_server(workers=1)  # a server without a tokenizer: verl's adapter counts
    # verl's warning is rate-limited process-wide: a log of its own, so this test leaves it as it was
    monkeypatch.setattr(olmorl_verl, "_NOT_OK", NotOkLog(logging.getLogger("olmorl.clients"), "verl", 30.0))
    monkeypatch.delenv("OLMORL_TOKENIZER", raising=False)
    texts = [text for text, _ in COMPLETIONS]
    columns = (["composite"] * 3, texts, [COMPOSITE["ground_truth"]] * 3)
    extra = [{"verifier": "composite"}, {"verifier": "composite", "completion_tokens": 1}, {"verifier": "composite"}]
    scores = olmorl_verl.compute_score_batch(*columns, extra, base_url=url,
                                             tokenizer=str(policy_tokenizer(tmp_path / "policy")))
    # counted as the server would (9 and 16 tokens); a row's own completion_tokens wins (1: no penalty)
    assert [s["score"] for s in scores] == pytest.approx([1 + dapo(9), 1.0, dapo(16)])
    assert olmorl_verl.compute_score("composite", texts[0], COMPOSITE["ground_truth"], {"verifier": "composite"},
                                     base_url=url, tokenizer=str(tmp_path / "policy"))["score"] == 1 + dapo(9)
    untokenized = olmorl_verl.compute_score_batch(*columns, extra, base_url=url)
    assert [s["invalid"] for s in untokenized] == [1.0, 0.0, 1.0]  # no tokenizer: invalid, never a made-up count


def test_serve_with_a_tokenizer_flag_naming_no_tokenizer_json_stops_naming_it(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "olmorl.rewards", "serve", "--port", "0", "--workers", "1",
                           "--tokenizer", str(tmp_path / "nowhere")], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "tokenizer" in proc.stderr and "no tokenizer.json at" in proc.stderr, proc.stderr


def test_openrlhf_counts_only_the_samples_whose_verifier_reads_the_count(tmp_path, monkeypatch):
    """Counting costs ~4 ms of CPU per 1k tokens: a math sample's completion is never tokenized. The app runs
    in this process (a real uvicorn server in a thread) so the counter's calls can be seen."""
    import threading
    import time

    import uvicorn

    from olmorl.rewards.service._local import free_port
    from olmorl.rewards.service._server import create_app

    counted: list[str] = []
    original = TokenCounter.counts
    monkeypatch.setattr(TokenCounter, "counts", lambda self, texts: counted.extend(texts) or original(self, texts))
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(create_app(Settings(workers=1, tokenizer=str(
        policy_tokenizer(tmp_path / "policy")))), host="127.0.0.1", port=port, log_level="warning"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started and time.monotonic() < deadline:
            time.sleep(0.05)
        text, nine = COMPLETIONS[0]
        body = {"query": [PROMPT + text] * 3, "prompts": [PROMPT] * 3,
                "labels": [{"verifier": "math", "ground_truth": "42"}, OVERLONG, json.dumps(COMPOSITE)]}
        data = httpx.post(f"http://127.0.0.1:{port}/openrlhf/get_reward", json=body, timeout=60).json()
    finally:
        server.should_exit = True
        thread.join(timeout=30)
    assert data["rewards"] == pytest.approx([1.0, dapo(nine), 1 + dapo(nine)])
    assert counted == [text, text]  # the overlong and the composite sample; not the math one
