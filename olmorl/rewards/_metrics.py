"""Prometheus metrics of one reward engine (its own registry, so several apps can live in one process)."""

from __future__ import annotations

from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest

from olmorl.sandbox import TAMPER_KINDS, TASK_TAMPER_KINDS

# Item latencies span sub-millisecond string checks to multi-second sandboxed tests.
_LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)


class RewardMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        self.requests = Counter(
            "olmorl_requests_total", "HTTP requests by route and status code.", ["route", "code"],
            registry=self.registry,
        )
        self.items = Counter(
            "olmorl_items_total", "Verified items by verifier and status.", ["verifier", "status"],
            registry=self.registry,
        )
        self.item_latency = Histogram(
            "olmorl_item_duration_seconds", "Time one item took where it ran (worker, sandbox, event loop), "
            "not its batch: the result's elapsed_ms.", ["verifier"],
            buckets=_LATENCY_BUCKETS, registry=self.registry,
        )
        self.inflight = Gauge("olmorl_inflight_items", "Items being scored now.", registry=self.registry)
        self.worker_restarts = Counter(
            "olmorl_worker_restarts_total", "Worker processes killed (timeout) or died (crash, memory).",
            ["reason"], registry=self.registry,
        )

        self.sessions_open = Gauge("olmorl_sessions_open", "Open tool sessions by environment.", ["env"],
                                   registry=self.registry)
        self.sessions_created = Counter("olmorl_sessions_created_total", "Sessions created by environment.",
                                        ["env"], registry=self.registry)
        self.sessions_expired = Counter("olmorl_sessions_expired_total",
                                        "Sessions closed by the idle TTL, by environment.", ["env"],
                                        registry=self.registry)
        self.sessions_evicted = Counter("olmorl_sessions_evicted_total",
                                        "Idle sessions closed to keep within the idle memory budget, by environment.",
                                        ["env"], registry=self.registry)
        self.session_pool_takes = Counter("olmorl_session_pool_takes_total",
                                          "Sandboxes taken from a warm pool: ready (hit) or started on demand (miss).",
                                          ["kind", "result"], registry=self.registry)
        self.session_open_latency = Histogram("olmorl_session_open_duration_seconds",
                                              "Wall-clock time of opening a session (setup included), by environment.",
                                              ["env"], buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.tool_calls = Counter("olmorl_tool_calls_total", "Session tool calls by environment, tool and status.",
                                  ["env", "tool", "status"], registry=self.registry)
        self.tool_latency = Histogram("olmorl_tool_call_duration_seconds", "Wall-clock time of one tool call.",
                                      ["env", "tool"], buckets=_LATENCY_BUCKETS, registry=self.registry)
        self.chunk_splits = Counter(
            "olmorl_chunk_splits_total", "Chunks of pool items killed (an item stuck or crashing) and retried "
            "item by item.", registry=self.registry,
        )

        self.judge_fallbacks = Counter(
            "olmorl_judge_fallbacks_total", "Math items the symbolic check could not pass and the LM judge decided "
            "(option judge_fallback), by verifier and outcome (correct, incorrect, error).",
            ["verifier", "outcome"], registry=self.registry,
        )
        self.tamper = Counter(
            "olmorl_code_tamper_total", "Times a program tripped the code sandbox's boundary, by verifier and "
            "kind (special_method, taint, protocol, denied_syscall), or a swe agent's change touched the tests or "
            "their framework (test_file, test_framework, bytecode, not_a_file, result_forging); it never earns "
            "reward.",
            ["verifier", "kind"], registry=self.registry,
        )

    def count_judge_fallback(self, verifier: str, status: str, reward: float | None, details: Any) -> None:
        """Count a math item that the LM judge decided (`details.method` "judge"): correct, incorrect or error."""
        if isinstance(details, dict) and details.get("method") == "judge":
            outcome = "error" if status != "ok" else ("correct" if reward else "incorrect")
            self.judge_fallbacks.labels(verifier, outcome).inc()

    def count_tamper(self, verifier: str, details: Any) -> None:
        """Count a result's `details.tamper` ({kind: times}); kinds outside the fixed set are not labels."""
        tamper = details.get("tamper") if isinstance(details, dict) else None
        if isinstance(tamper, dict):
            for kind, times in tamper.items():
                if kind in (*TAMPER_KINDS, *TASK_TAMPER_KINDS) and isinstance(times, int) and times > 0:
                    self.tamper.labels(verifier, kind).inc(times)

    def render(self) -> bytes:
        return generate_latest(self.registry)
