"""RewardClient / AsyncRewardClient against real servers: the olmorl server for scoring, auth and
error policies; a fake reward server that fails on cue (tests/fake_reward_server.py) for retries,
Retry-After and failover."""

from __future__ import annotations

import asyncio
import time

import pytest

from fake_reward_server import Failure, FakeRewardServer
from olmorl.clients import (
    AsyncRewardClient,
    ItemFailed,
    RewardClient,
    RewardServerError,
    RewardServerUnavailable,
    VerifyItem,
)
from olmorl.rewards.service._local import LocalRewardServer, free_port


@pytest.fixture(scope="module")
def server_url():
    with LocalRewardServer(workers=2) as server:
        yield server.url


@pytest.fixture
def fake():
    with FakeRewardServer() as server:
        yield server


def numbered_items(count: int) -> list[dict]:
    """Item i is correct when i is even; its id says its index."""
    return [{"id": f"i{i}", "verifier": "string_match", "response": f"<answer>{i if i % 2 == 0 else 'x'}</answer>",
             "ground_truth": str(i)} for i in range(count)]


def assert_in_order(results, count: int) -> None:
    assert len(results) == count
    assert [r.id for r in results] == [f"i{i}" for i in range(count)]
    assert [r.reward for r in results] == [1.0 if i % 2 == 0 else 0.0 for i in range(count)]
    assert all(r.status == "ok" for r in results)


async def test_async_client_keeps_order_across_many_concurrent_chunks(server_url):
    async with AsyncRewardClient(server_url, max_batch_size=37, max_concurrency=8) as client:
        assert_in_order(await client.verify(numbered_items(1000)), 1000)
        assert await client.verify([]) == []


def test_sync_client_keeps_order_across_many_concurrent_chunks(server_url):
    with RewardClient(server_url, max_batch_size=23, max_concurrency=4) as client:
        assert_in_order(client.verify(numbered_items(500)), 500)


async def test_typed_items_and_verify_one(server_url):
    async with AsyncRewardClient(server_url) as client:
        typed = VerifyItem(id="t", verifier="string_match", response="<answer>Paris</answer>", ground_truth="paris")
        result = await client.verify_one(typed)
        assert (result.id, result.reward, result.details["extracted"]) == ("t", 1.0, "Paris")
        by_fields = await client.verify_one(verifier="string_f1", response="the cat sat", ground_truth="cat sat")
        assert by_fields.verifier == "string_f1" and by_fields.reward == pytest.approx(1.0)
        listed = {info.name: info for info in await client.verifiers()}
    assert "string_matcher" in listed["string_match"].aliases
    with RewardClient(server_url) as sync_client:
        assert sync_client.verify_one(typed).reward == 1.0
        assert {info.name for info in sync_client.verifiers()} == set(listed)


async def test_on_error_policies(server_url):
    items = [*numbered_items(2), {"id": "bad", "verifier": "no_such_verifier", "response": "r"}]
    async with AsyncRewardClient(server_url) as client:  # default: an unscored item's reward is None, never 0
        none = await client.verify(items)
    assert [r.reward for r in none] == [1.0, 0.0, None] and none[2].status == "invalid"
    assert "no_such_verifier" in none[2].error
    async with AsyncRewardClient(server_url, on_error="zero") as client:  # the explicit choice
        zero = await client.verify(items)
    assert (zero[2].status, zero[2].reward) == ("invalid", 0.0)
    async with AsyncRewardClient(server_url, on_error="raise") as client:
        with pytest.raises(ItemFailed) as raised:
            await client.verify(items)
    assert raised.value.index == 2 and raised.value.result.status == "invalid"
    with pytest.raises(ValueError, match="on_error"):
        AsyncRewardClient(server_url, on_error="ignore")  # type: ignore[arg-type]


async def test_bearer_token_by_argument_and_environment(reward_server, monkeypatch):
    url = reward_server(workers=1, api_key="s3cret")
    item = numbered_items(1)
    async with AsyncRewardClient(url, api_key="s3cret") as client:
        assert (await client.verify(item))[0].reward == 1.0
    async with AsyncRewardClient(url, api_key="wrong") as client:
        with pytest.raises(RewardServerError) as refused:
            await client.verify(item)
    assert refused.value.status_code == 401 and "bearer" in str(refused.value)
    monkeypatch.setenv("OLMORL_URL", url)
    monkeypatch.setenv("OLMORL_API_KEY", "s3cret")
    with RewardClient() as client:
        assert client.verify(item)[0].reward == 1.0


def test_urls_from_environment(monkeypatch, fake):
    monkeypatch.setenv("OLMORL_URL", f" {fake.url}/ , {fake.url}")
    monkeypatch.delenv("OLMORL_API_KEY", raising=False)
    with RewardClient() as client:
        assert client._config.replicas.urls == [fake.url, fake.url]
        assert client.verify([{"verifier": "v", "response": "a", "ground_truth": "a"}])[0].reward == 1.0
    assert fake.requests[0].authorization is None


async def test_retries_5xx_then_succeeds(fake):
    fake.fail_next(Failure(503), Failure(502), Failure(500))
    async with AsyncRewardClient(fake.url, max_retries=3) as client:
        results = await client.verify([{"id": "a", "verifier": "v", "response": "x", "ground_truth": "x"}])
    assert [(r.id, r.status, r.reward) for r in results] == [("a", "ok", 1.0)]
    assert len(fake.requests) == 4


def test_429_honours_retry_after(fake):
    fake.fail_next(Failure(429, headers={"Retry-After": "1"}))
    with RewardClient(fake.url) as client:
        started = time.monotonic()
        assert client.verify_one(verifier="v", response="x", ground_truth="x").reward == 1.0
    assert time.monotonic() - started >= 1.0
    assert len(fake.requests) == 2


async def test_4xx_is_final_and_not_retried(fake):
    fake.fail_next(Failure(422, body=[{"msg": "not a dict"}]))  # a body that is no JSON object is still readable
    async with AsyncRewardClient(fake.url) as client:
        with pytest.raises(RewardServerError, match="422.*not a dict"):
            await client.verify([{"verifier": "v", "response": "x"}])
    assert len(fake.requests) == 1


async def test_exhausted_retries_raise_and_never_make_up_a_reward(fake):
    items = [{"id": str(i), "verifier": "v", "response": "x", "ground_truth": "x"} for i in range(5)]
    for on_error in ("none", "zero", "raise"):  # whatever the item policy: no server answered, nothing was scored
        fake.fail_next(*[Failure(503)] * 3)
        async with AsyncRewardClient(fake.url, max_retries=2, max_batch_size=2, max_concurrency=1,
                                     on_error=on_error) as client:
            with pytest.raises(RewardServerUnavailable, match="after 3 attempts: HTTP 503"):
                await client.verify(items)
    # the same client scores again once the server answers
    async with AsyncRewardClient(fake.url, max_retries=2) as client:
        assert [r.status for r in await client.verify(items)] == ["ok"] * 5


async def test_a_dead_port_raises_after_the_retries():
    dead = f"http://127.0.0.1:{free_port()}"
    async with AsyncRewardClient(dead, max_retries=2, on_error="zero") as client:
        with pytest.raises(RewardServerUnavailable, match="after 3 attempts: ConnectError") as raised:
            await client.verify([{"id": "a", "verifier": "v", "response": "x"}])
    assert raised.value.attempts == 3 and "ConnectError" in raised.value.last_error
    with RewardClient(dead, max_retries=1, max_batch_size=1, max_concurrency=2) as client:
        with pytest.raises(RewardServerUnavailable, match="after 2 attempts"):
            client.verify([{"verifier": "v", "response": "x"}] * 3)


async def test_failover_skips_a_dead_replica_and_returns_when_it_is_back(fake):
    other = FakeRewardServer().start()
    try:
        other.stop()  # down from the start
        items = [{"id": str(i), "verifier": "v", "response": "x", "ground_truth": "x"} for i in range(200)]
        async with AsyncRewardClient([other.url, fake.url], max_batch_size=10, max_concurrency=4,
                                     replica_cooldown_s=0.5) as client:
            results = await client.verify(items)
            assert [r.id for r in results] == [str(i) for i in range(200)]
            assert all(r.status == "ok" and r.details["port"] == fake.port for r in results)

            other.start()  # the replica is back (same port): after the cool-down it gets its share again
            time.sleep(0.6)
            results = await client.verify(items)
        assert all(r.status == "ok" for r in results)
        ports = [r.details["port"] for r in results]
        assert ports.count(other.port) >= 5 and ports.count(fake.port) >= 5
    finally:
        other.stop()


def test_sync_client_fails_over_too(fake):
    dead = f"http://127.0.0.1:{free_port()}"
    with RewardClient([dead, fake.url], max_batch_size=5, max_concurrency=3) as client:
        results = client.verify([{"id": str(i), "verifier": "v", "response": "x", "ground_truth": "x"}
                                 for i in range(60)])
    assert [r.id for r in results] == [str(i) for i in range(60)] and {r.status for r in results} == {"ok"}


async def test_a_raise_cancels_the_other_chunks(fake):
    fake.delay_s = 0.5
    fake.fail_next(Failure(400))
    items = [{"verifier": "v", "response": "x"}] * 40
    async with AsyncRewardClient(fake.url, max_batch_size=1, max_concurrency=2) as client:
        with pytest.raises(RewardServerError):
            await client.verify(items)
        await asyncio.sleep(1.2)  # time enough for a few more chunks, had they not been cancelled
    assert len(fake.requests) <= 2  # the failed chunk and the one in flight beside it


def test_free_port_is_outside_the_ephemeral_range_outgoing_connections_take():
    """A port from the ephemeral range can be taken by any outgoing connection before the server binds it (CI saw a
    torchrun rendezvous fail with EADDRINUSE that way)."""
    import socket

    low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
    ports = {free_port() for _ in range(20)}
    assert all(20000 <= p < low for p in ports) and len(ports) > 1
    for port in ports:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", port))  # free when returned
