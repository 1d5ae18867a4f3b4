"""A smaller run of the load benchmark's workload, for correctness only (no timing asserts): 2,000
mixed items (math, code, IF, judge, string match) from 16 concurrent clients over two replicas; every
item answered exactly once, in order, with the expected reward; no 5xx; server memory stays bounded."""

from __future__ import annotations

import httpx
from fake_openai import FakeOpenAI
from load_workload import make_cases, request_codes, run_load

from olmorl.rewards.service._local import LocalRewardServer
from olmorl.rewards._settings import JudgeSettings


async def test_mixed_stream_every_item_once_in_order():
    cases = make_cases(2000, seed=1)
    with FakeOpenAI(models=("judge-model",)) as judge:
        judge_settings = JudgeSettings(base_url=judge.url, model="judge-model")
        with LocalRewardServer(workers=2, judge=judge_settings) as first, \
                LocalRewardServer(workers=2, judge=judge_settings) as second:
            servers = [first, second]
            report = await run_load([s.url for s in servers], cases, clients=16, batch_size=25,
                                    server_pids=[s.process.pid for s in servers])
            codes = [request_codes(httpx.get(f"{s.url}/metrics").text) for s in servers]

    assert report.wrong == [], report.wrong[:10]
    assert sum(len(v) for v in report.item_ms.values()) == 2000
    assert all(len(report.item_ms[family]) == 400 for family in report.item_ms)
    for served in codes:
        assert served.get("200", 0) >= 20  # both replicas took a share
        assert not any(code.startswith("5") for code in served), served
    # Two servers with two workers each: bounded well below the 2 GiB per-worker ceilings combined.
    assert 0 < report.peak_rss_mb < 3000, report.peak_rss_mb
