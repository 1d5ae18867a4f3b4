"""A verifier whose warm-up starts a thread: the server warns, since workers forked from it lack the thread."""

from __future__ import annotations

import threading

from olmorl.rewards import Score, Task, Verifier, register

STOP = threading.Event()


@register
class ThreadedWarmUpVerifier(Verifier):
    name = "test_threaded_warm_up"
    description = "Starts a background thread in warm_up (which belongs in score, lazily)."

    def warm_up(self) -> None:
        threading.Thread(target=STOP.wait, name="prefetcher", daemon=True).start()

    def score(self, task: Task) -> Score:
        return Score(1.0)
