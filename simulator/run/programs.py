"""A run's programs compiled ahead: lowered for the run's abstract state, then compiled all at once on worker
threads (XLA's compiler releases the GIL) while the caller builds the initial state or reads its checkpoint.

What is compiled is exactly what the run will call (:func:`run_programs`: the chunk, the
controlled one with ``time.cfl``, and the programs of the outputs it writes), through the same jitted
objects and with the same argument shardings as the calls, so each call finds its program compiled; with the
persistent cache (:mod:`simulator.cache`) a later launch loads them instead, and they are written to it when
all are compiled (:func:`simulator.cache.hold_writes`). :func:`compile_all` is the one concurrent compile, which
the planner uses too. :func:`counts`: what a launch compiled and loaded, for the run log's line (:func:`report`).
"""

from __future__ import annotations

import functools
import os
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import jax

from simulator import cache


def run_programs(cfg: Any) -> tuple[str, ...]:
    """The programs a run of ``cfg`` calls: the chunk, then those of the output kinds it writes (the
    diagnostics always; spectra, snapshot fields, flow statistics, the output tasks, the particle snapshots and
    trajectories and registered kinds when it writes them: :func:`simulator.output.kinds.programs`)."""
    from simulator.output import kinds

    return ("chunk", *kinds.programs(cfg))


def compile_all(lowered: Mapping[str, Any], compile_one: Callable[[Any], Any] = lambda low: low.compile()
                ) -> dict[str, Any]:
    """Every lowered program compiled at once, one worker thread each; the compiled programs by name. They are
    written to the cache by this thread once all are compiled (:func:`simulator.cache.hold_writes` says why),
    or, where the caller holds the writes already, by whoever holds them."""
    began = cache.hold_writes()
    try:
        with ThreadPoolExecutor(max(len(lowered), 1), thread_name_prefix="simulator-compile") as pool:
            futures = {name: pool.submit(compile_one, low) for name, low in lowered.items()}
            return {name: future.result() for name, future in futures.items()}
    finally:
        if began:
            cache.write_held()


class Ahead:
    """The programs ``names`` of the run on ``sim`` (a :class:`~simulator.run.simulation.Simulation`) for its
    abstract ``state`` (:func:`simulator.run.states.abstract_state`), lowered now and compiling on worker threads
    until :meth:`wait`."""

    def __init__(self, sim: Any, names: Sequence[str], state: Any):
        self.start = time.monotonic()
        cache.hold_writes()  # written by the thread that waits for them (cache.hold_writes says why)
        scalar = jax.ShapeDtypeStruct((), sim.dtype, sharding=sim.scalar_sharding)
        self._pool = ThreadPoolExecutor(max(len(names), 1), thread_name_prefix="simulator-compile")
        # each compiles as soon as it is lowered (lowering holds the GIL, XLA's compiler does not), the chunk,
        # the longest to compile, first
        self._futures: dict[str, Future] = {}
        self._done: list[float] = []  # when each finished: their wall time is the last one's, not the waiter's
        try:
            for name in names:
                self._futures[name] = self._pool.submit(sim.lower(name, state, scalar, scalar).compile)
                self._futures[name].add_done_callback(lambda _: self._done.append(time.monotonic()))
        except BaseException:  # a program that cannot be lowered: nothing left compiling, nothing held
            self.abandon()
            raise

    def wait(self) -> float:
        """Block until every program is compiled (or loaded); the wall-clock seconds from their start to the last
        one ready (not to this call: the caller built a state meanwhile). A program that failed to compile raises
        here."""
        try:
            for future in self._futures.values():
                future.result()
        finally:
            self._pool.shutdown()
            cache.write_held()
        return max(self._done, default=self.start) - self.start

    def abandon(self) -> None:
        """For a start that failed: the programs not yet compiling are dropped, and those compiling (XLA's compile
        cannot be stopped) are waited for, so that no compile thread outlives the run. Left running, they went on
        compiling and writing the cache while the caller went on: the next run in the same process (the Python
        API, a notebook, the suite) started beside them."""
        self._pool.shutdown(wait=True, cancel_futures=True)
        cache.write_held()


def since_launch() -> float | None:
    """Seconds since this process was started (Linux: its start time in /proc), None where unknown."""
    try:
        start_ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
        uptime = float(open("/proc/uptime").read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


# ---- what a launch compiled and loaded ---------------------------------------------------------------------------

#: JAX's monitoring events: every program's compile-or-load, and the loads among them
_COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_LOAD_EVENT = "/jax/compilation_cache/cache_retrieval_time_sec"


@dataclass
class Counts:
    """Programs compiled and loaded since :func:`counts` was last reset: how many, and their seconds (each
    program's own, so summed over the threads that compile several at once: not a wall time)."""

    loaded: int = 0
    loaded_s: float = 0.0
    total: int = 0
    total_s: float = 0.0

    @property
    def compiled(self) -> int:
        return self.total - self.loaded

    @property
    def compiled_s(self) -> float:
        return max(self.total_s - self.loaded_s, 0.0)

    def describe(self, wall: float) -> str:
        """``programs: 3 loaded from the cache, 2 compiled in 4.2 s (9.1 s summed over the programs, compiled side by
        side)``: ``wall`` the seconds the caller waited for them all, the sum each program's own seconds added up
        (several compile at once on worker threads, so the sum exceeds the wall time)."""
        summed = self.loaded_s + self.compiled_s
        return (f"programs: {self.loaded} loaded from the cache, {self.compiled} compiled in {wall:.1f} s "
                f"({summed:.1f} s summed over the programs, compiled side by side)")


_counts = Counts()
_counts_lock = threading.Lock()


def _listener(event: str, duration_secs: float, **_: Any) -> None:
    if event not in (_COMPILE_EVENT, _LOAD_EVENT):
        return
    with _counts_lock:
        if event == _LOAD_EVENT:
            _counts.loaded += 1
            _counts.loaded_s += duration_secs
        else:
            _counts.total += 1
            _counts.total_s += duration_secs


@functools.cache
def count_compilations() -> None:
    """Count every program compiled or loaded from now on in this process (:func:`counts`); once is enough."""
    import jax.monitoring

    jax.monitoring.register_event_duration_secs_listener(_listener)


def counts(reset: bool = False) -> Counts:
    """A copy of the programs compiled and loaded so far in this process (since the last ``reset``)."""
    count_compilations()
    with _counts_lock:
        out = Counts(_counts.loaded, _counts.loaded_s, _counts.total, _counts.total_s)
        if reset:
            _counts.loaded = _counts.total = 0
            _counts.loaded_s = _counts.total_s = 0.0
    return out


def report(counts: Counts, wall: float) -> str:
    """The run log's line on a launch's programs: ``programs: 3 loaded from the cache, 2 compiled in 4.2 s (9.1 s
    summed over the programs, compiled side by side); ready 5.3 s after launch`` (``wall``: the seconds from the
    start of their compiles to the last one ready; the process's start is said where known)."""
    launched = since_launch()
    ready = f"; ready {launched:.1f} s after launch" if launched is not None else ""
    return f"{counts.describe(wall)}{ready}"
