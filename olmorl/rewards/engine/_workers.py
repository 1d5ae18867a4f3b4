"""A scoring worker: a process forked from the server, which built and warmed the pool verifiers before forking
(`build_pool_verifiers`), so every worker, a replacement too, starts warm in milliseconds; it scores chunks of
items. And the parent's handle on it.

The wire is a socket pair carrying length-prefixed pickles (multiprocessing's framing: the worker blocks on
it; the parent reads and writes through the event loop, so it never blocks and needs no threads). The parent
kills a worker from outside (a stuck chunk, recycling, shutdown), never with `signal.alarm` in the worker,
which only works in the main thread and silently broke SymPy checks in threaded verifiers.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import pickle
import resource
import signal
import socket
import struct
import threading
import time
from multiprocessing.connection import Connection
from typing import Callable

from olmorl.rewards.engine._lifetime import die_with_parent
from olmorl.rewards.engine._registry import ItemError, Score, Task, Verifier, load_verifiers
from olmorl.rewards._settings import Settings

log = logging.getLogger("olmorl.rewards")

_READY = b"ready"
_memory_mb = 0  # this worker's memory ceiling, for the out-of-memory error


# -- built in the server, inherited by every worker ----------------------------------------------------
_pool_verifiers: dict[str, Verifier] = {}


def build_pool_verifiers(settings: Settings) -> None:
    """Build every pool verifier (imports SymPy etc.) and warm it up, in the server, before any worker forks.
    What warming fills (parser tables, ANTLR's prediction cache, language profiles) then reaches every worker,
    where each would otherwise learn it again; and a replacement for a killed or recycled worker is up in ~10 ms
    instead of paying the whole warm-up (0.7 s for the built-in verifiers) before its first item."""
    _pool_verifiers.clear()
    for name, cls in load_verifiers(settings.plugins).items():
        if cls.runs_in == "pool":
            verifier = _pool_verifiers[name] = cls(settings)
            before = set(threading.enumerate())
            try:
                verifier.warm_up()
            except Exception:  # a failed warm-up only costs the first items their speed-up
                log.exception("warm-up of verifier %s failed", name)
            if started := [t.name for t in threading.enumerate() if t not in before]:
                log.warning("warm-up of verifier %s started threads (%s): the workers forked from the server do not "
                            "have them; start per-process resources lazily in score()", name, ", ".join(started))


# -- in the worker process ---------------------------------------------------------------------------
def _init_worker(settings: Settings) -> None:
    """Yield the CPU to the event loop, then set the memory ceiling that bounds what scoring may add."""
    os.nice(settings.worker_nice)  # the event loop (health checks, I/O verifiers) wins the CPU over a busy worker
    global _memory_mb
    _memory_mb = settings.worker_memory_mb
    limit = settings.worker_memory_mb * 1024 * 1024
    resource.setrlimit(resource.RLIMIT_AS, (limit, limit))


def score_chunk(jobs: list[tuple[str, Task]]) -> tuple[list[Score | ItemError], list[float]]:
    """Score a chunk in order; one failing item is that item's ItemError. Returns the outcomes and the seconds
    each item took (its result's elapsed_ms; their sum is the parent's cost estimate)."""
    outcomes: list[Score | ItemError] = []
    seconds: list[float] = []
    for name, task in jobs:
        started = time.perf_counter()
        try:
            outcomes.append(_pool_verifiers[name].score(task))
        except ItemError as exc:
            outcomes.append(exc)
        except MemoryError:
            outcomes.append(ItemError("error", f"out of memory (worker ceiling {_memory_mb} MiB)"))
        except Exception as exc:  # a verifier bug must cost one item, not the chunk
            log.exception("verifier %s failed", name)
            outcomes.append(ItemError("error", f"{type(exc).__name__}: {exc}"))
        seconds.append(time.perf_counter() - started)
    return outcomes, seconds


def _reply(outcomes: list[Score | ItemError], seconds: list[float]) -> bytes:
    try:
        return pickle.dumps((outcomes, seconds), protocol=pickle.HIGHEST_PROTOCOL)
    except Exception:  # one outcome the wire cannot carry (a lambda in details, ...) costs that item only
        sendable = []
        for outcome in outcomes:
            try:
                pickle.dumps(outcome)
                sendable.append(outcome)
            except Exception as exc:
                sendable.append(ItemError("error", f"verifier returned a result that cannot leave the worker "
                                                   f"process: {type(exc).__name__}: {exc}"))
        return pickle.dumps((sendable, seconds), protocol=pickle.HIGHEST_PROTOCOL)


def _worker_main(sock: socket.socket, settings: Settings, server_pid: int) -> None:
    # Forked from the server: drop what belongs to its event loop, and die with it.
    signal.set_wakeup_fd(-1)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C in a terminal stops the server, which stops its workers
    signal.signal(signal.SIGTERM, signal.SIG_DFL)
    # SIGKILLed when the server dies, however it dies (the socket alone is not enough: workers forked later
    # hold copies of earlier workers' server ends); not Linux: the socket's end-of-file still stops an idle worker
    die_with_parent(server_pid)
    wire = Connection(sock.detach())
    _init_worker(settings)
    wire.send_bytes(_READY)
    while True:
        try:
            jobs = pickle.loads(wire.recv_bytes())
        except (EOFError, OSError):  # the server is gone
            os._exit(0)
        wire.send_bytes(_reply(*score_chunk(jobs)))


# -- in the server -----------------------------------------------------------------------------------
class WorkerProcess(asyncio.Protocol):
    """The server's handle on one worker: `await start()` (returns once it is up; cancelled, it kills the
    process), `send(jobs)` (chunks are scored in the order sent), `kill()`. Each reply calls
    `on_reply(self, outcomes, seconds)` (per item); the end of the process calls `on_exit(self)`, whoever ended it."""

    def __init__(self, settings: Settings, on_reply: Callable[["WorkerProcess", list, list[float]], None],
                 on_exit: Callable[["WorkerProcess"], None]) -> None:
        self.settings, self._on_reply, self._on_exit = settings, on_reply, on_exit
        self.process: multiprocessing.process.BaseProcess | None = None
        self._transport: asyncio.Transport | None = None
        self._buffer = bytearray()
        self._ready: asyncio.Future | None = None
        self._greeted = False  # the worker's first frame (it is up) arrived
        self.killed = False  # ended by the server (timeout, recycling, shutdown), not by itself

    async def start(self) -> None:
        loop = asyncio.get_running_loop()
        ours, theirs = socket.socketpair()
        # fork: a replacement starts in milliseconds from the server's imports, where spawn would import SymPy again
        self.process = multiprocessing.get_context("fork").Process(
            target=_worker_main, args=(theirs, self.settings, os.getpid()), daemon=True, name="olmorl-reward-worker")
        self.process.start()
        theirs.close()
        self._ready = loop.create_future()
        try:
            await loop.connect_accepted_socket(lambda: self, ours)
            await self._ready
        except BaseException:  # cancelled (the server stops) or failed: no process outlives its handle's start
            self._ready.cancel()
            self.kill()
            raise

    @property
    def exitcode(self) -> int | None:
        return self.process.exitcode if self.process is not None else None

    def send(self, jobs: list[tuple[str, Task]]) -> None:
        payload = pickle.dumps(jobs, protocol=pickle.HIGHEST_PROTOCOL)
        header = struct.pack("!i", len(payload)) if len(payload) < 0x7FFFFFFF else struct.pack("!iQ", -1, len(payload))
        assert self._transport is not None
        self._transport.write(header + payload)  # buffered by the loop when the worker is busy: never blocks

    def kill(self) -> None:
        self.killed = True
        if self.process is not None and self.process.exitcode is None:
            self.process.kill()

    # -- asyncio.Protocol ------------------------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self._buffer += data
        while len(self._buffer) >= 4:
            size, start = struct.unpack_from("!i", self._buffer)[0], 4
            if size == -1:
                if len(self._buffer) < 12:
                    return
                size, start = struct.unpack_from("!Q", self._buffer, 4)[0], 12
            if len(self._buffer) < start + size:
                return
            frame = bytes(self._buffer[start:start + size])
            del self._buffer[:start + size]
            if not self._greeted:  # the first frame: the worker is up
                self._greeted = True
                if self._ready is not None and not self._ready.done():
                    self._ready.set_result(None)
            else:
                self._on_reply(self, *pickle.loads(frame))

    def connection_lost(self, exc: Exception | None) -> None:
        if self._ready is not None and not self._ready.done():
            self._ready.set_exception(RuntimeError(f"worker process ended while starting ({exc or 'closed'})"))
        asyncio.get_running_loop().create_task(self._reap())

    async def _reap(self) -> None:
        """Its socket closed: wait for the exit code (a lingering process is killed), then report the end."""
        process = self.process
        if process is not None:
            if process.exitcode is None:  # a process the server already joined (it stopped) needs no thread
                await asyncio.to_thread(process.join, 2)
            if process.exitcode is None:
                process.kill()
                await asyncio.to_thread(process.join, 5)
        self._on_exit(self)
