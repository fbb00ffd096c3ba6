"""A run's programs compiled ahead: lowered for the run's abstract state, then compiled all at once on worker
threads (XLA's compiler releases the GIL) while the caller builds the initial state or reads its checkpoint.

What is compiled is exactly what the run will call (:func:`simulator.planning.plan.run_programs`: the chunk, the
controlled one with ``time.cfl``, and the programs of the outputs it writes), through the same jitted
objects and with the same argument shardings as the calls, so each call finds its program compiled; with the
persistent cache (:mod:`simulator.cache`) a later launch loads them instead. :func:`compile_all` is the one
concurrent compile, which the planner uses too.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

import jax

from simulator import cache


def compile_all(lowered: Mapping[str, Any], compile_one: Callable[[Any], Any] = lambda low: low.compile()
                ) -> dict[str, Any]:
    """Every lowered program compiled at once, one worker thread each; the compiled programs by name."""
    with ThreadPoolExecutor(max(len(lowered), 1)) as pool:
        futures = {name: pool.submit(compile_one, low) for name, low in lowered.items()}
        return {name: future.result() for name, future in futures.items()}


class Ahead:
    """The programs ``names`` of the run on ``sim`` (a :class:`~simulator.run.simulation.Simulation`) for its
    abstract ``state`` (:func:`simulator.planning.plan.abstract_state`), lowered now and compiling on worker threads
    until :meth:`wait`."""

    def __init__(self, sim: Any, names: Sequence[str], state: Any):
        self.start = time.monotonic()
        scalar = jax.ShapeDtypeStruct((), sim.dtype, sharding=sim.scalar_sharding)
        self._pool = ThreadPoolExecutor(max(len(names), 1), thread_name_prefix="simulator-compile")
        # each compiles as soon as it is lowered (lowering holds the GIL, XLA's compiler does not), the chunk,
        # the longest to compile, first
        self._futures: dict[str, Future] = {
            name: self._pool.submit(sim.lower(name, state, scalar, scalar).compile) for name in names}

    def wait(self) -> float:
        """Block until every program is compiled (or loaded); the seconds since they were started. A program
        that failed to compile raises here."""
        try:
            for future in self._futures.values():
                future.result()
        finally:
            self._pool.shutdown()
        return time.monotonic() - self.start

    def abandon(self) -> None:
        """For a start that failed: the programs not yet compiling are dropped, and those compiling (XLA's compile
        cannot be stopped) are waited for, so that no compile thread outlives the run. Left running, they went on
        compiling and writing the cache while the caller went on: the next run in the same process (the Python
        API, a notebook, the suite) started beside them."""
        self._pool.shutdown(wait=True, cancel_futures=True)


def since_launch() -> float | None:
    """Seconds since this process was started (Linux: its start time in /proc), None where unknown."""
    try:
        start_ticks = int(open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19])
        uptime = float(open("/proc/uptime").read().split()[0])
        return uptime - start_ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError):
        return None


def report(counts: cache.Counts, wall: float) -> str:
    """The run log's line on a launch's programs: ``programs: 3 loaded from the cache (0.4 s), 2 compiled
    (9.1 s); ready 2.3 s after launch`` (compile seconds summed over the programs compiled at once; ``wall``:
    the seconds they took, said where the process's start is unknown)."""
    launched = since_launch()
    ready = f"{launched:.1f} s after launch" if launched is not None else f"{wall:.1f} s after they were started"
    return f"{counts.describe()}; ready {ready}"
