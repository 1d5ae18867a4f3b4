"""Verifiers that misbehave on purpose, loaded through the `plugins` setting, to test the engine's
containment: a CPU spin past the deadline, a memory blow-up, a hard crash, a raising bug, results the wire
cannot carry, and a probe of where warm-up ran."""

from __future__ import annotations

import os
import threading

from olmorl.rewards import Score, Task, Verifier, register


@register
class SpinVerifier(Verifier):
    name = "test_spin"
    description = "Spins the CPU for ever when the response is 'spin'; otherwise reward 1."

    def score(self, task: Task) -> Score:
        while task.response == "spin":
            pass
        return Score(1.0, {"thread": threading.current_thread().name})


@register
class MemoryHogVerifier(Verifier):
    name = "test_memory_hog"
    description = "Allocates until the worker's memory ceiling stops it."

    def score(self, task: Task) -> Score:
        hoard = []
        while True:
            hoard.append(bytearray(64 * 1024 * 1024))


@register
class CrashVerifier(Verifier):
    name = "test_crash"
    description = "Kills its own worker process."

    def score(self, task: Task) -> Score:
        os._exit(3)


@register
class BuggyVerifier(Verifier):
    name = "test_buggy"
    description = "Raises an ordinary exception, as a verifier bug would."

    def score(self, task: Task) -> Score:
        raise KeyError("boom")


class Opaque:
    """Picklable (it crosses from the worker) but not JSON."""


@register
class OpaqueDetailsVerifier(Verifier):
    name = "test_opaque_details"
    description = "Returns reward 1 with a details value that has no JSON form."

    def score(self, task: Task) -> Score:
        return Score(1.0, {"answer": Opaque()})


@register
class MalformedScoreVerifier(Verifier):
    name = "test_malformed_score"
    description = "Returns a Score whose details break the result's types."

    def score(self, task: Task) -> Score:
        return Score(1.0, details="not a dict")  # type: ignore[arg-type]


@register
class NumberKeyDetailsVerifier(Verifier):
    name = "test_number_keys"
    description = "Returns details keyed by numbers, which a JSON object cannot carry as such."

    def score(self, task: Task) -> Score:
        return Score(1.0, {1: "first"})  # type: ignore[dict-item]


@register
class UnpicklableDetailsVerifier(Verifier):
    name = "test_unpicklable_details"
    description = "Returns details holding a function, which cannot leave the worker process."

    def score(self, task: Task) -> Score:
        return Score(1.0, {"check": lambda: None})


WARM_UPS = 0  # how many times a process warmed up the verifier below; a forked worker inherits the count
WARMED_IN = 0  # the pid that did


@register
class WarmUpProbeVerifier(Verifier):
    name = "test_warm_up_probe"
    description = "Reports which process warmed it up and which scores; 'crash' kills its worker."

    def warm_up(self) -> None:
        global WARM_UPS, WARMED_IN
        WARM_UPS += 1
        WARMED_IN = os.getpid()

    def score(self, task: Task) -> Score:
        if task.response == "crash":
            os._exit(3)
        return Score(1.0, {"warm_ups": WARM_UPS, "warmed_in": WARMED_IN, "scored_in": os.getpid()})
