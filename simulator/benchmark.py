"""Shared pieces of the benchmark scripts in ``scripts/``: timing, compiled memory, result files, the
local FFT path a backend is built with, a peer code served in its own environment, and a step's transforms
replayed alone (the FFT-only baseline of
scripts/bench_step.py and scripts/bench_scaling.py: the step's own calls, read from its jaxpr).

Benchmarks are never unit tests: they report ratios against a baseline measured in the same
invocation and write them to ``outputs/bench/``.
"""

from __future__ import annotations

import contextlib
import csv
import json
import os
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any


def timed(fn: Callable[..., Any], *args: Any, repeats: int) -> float:
    """Median seconds of ``fn(*args)`` after one warm-up call (results blocked on)."""
    import jax

    jax.block_until_ready(fn(*args))
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        jax.block_until_ready(fn(*args))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def timed_interleaved(fns: Mapping[str, Callable[[], Any]], repeats: int, warmup: int = 1,
                      cpu: dict[str, float] | None = None, before: Callable[[], Any] | None = None,
                      fastest: dict[str, float] | None = None) -> dict[str, float]:
    """Median seconds of each zero-argument ``fns[name]()`` (results blocked on), A/B interleaved.

    Every round calls each function once, in an order rotated from round to round, so load that
    comes and goes on a shared machine hits all of them alike; ``warmup`` untimed rounds first.
    ``cpu``, when given, receives the median CPU seconds of this process (all its threads) per call:
    on a loaded machine, the work done rather than the time waited for a core. ``before``, when given,
    runs untimed before each timed call (a sweep that evicts the caches, say). ``fastest``, when given,
    receives each function's fastest round in seconds (the least disturbed by load).
    """
    import jax

    names = list(fns)
    for _ in range(warmup):
        for name in names:
            jax.block_until_ready(fns[name]())
    times: dict[str, list[float]] = {name: [] for name in names}
    cpu_times: dict[str, list[float]] = {name: [] for name in names}
    for r in range(repeats):
        for name in names[r % len(names):] + names[: r % len(names)]:
            if before is not None:
                before()
            c0, t0 = time.process_time(), time.perf_counter()
            jax.block_until_ready(fns[name]())
            times[name].append(time.perf_counter() - t0)
            cpu_times[name].append(time.process_time() - c0)
    if cpu is not None:
        cpu.update({name: statistics.median(t) for name, t in cpu_times.items()})
    if fastest is not None:
        fastest.update({name: min(t) for name, t in times.items()})
    return {name: statistics.median(t) for name, t in times.items()}


def memory_bytes(compiled: Any) -> int | None:
    """Bytes one device's compiled program holds at its peak: arguments + outputs + temporaries -
    aliased (donated) buffers, from ``compiled.memory_analysis()``; None where it is not reported."""
    try:
        m = compiled.memory_analysis()
    except (NotImplementedError, RuntimeError):
        return None
    if m is None:
        return None
    return int(m.argument_size_in_bytes + m.output_size_in_bytes + m.temp_size_in_bytes - m.alias_size_in_bytes)


def machine() -> dict[str, Any]:
    """Where the figures came from: platform, device count, cores, versions, command line."""
    import jax

    from simulator.runtime import versions

    return {"argv": sys.argv, "platform": jax.default_backend(), "devices": jax.device_count(),
            "device_kind": jax.devices()[0].device_kind, "cores": os.cpu_count(), "machine": platform.machine(),
            "versions": versions()}


def write_results(out: str | Path, stem: str, rows: Sequence[dict[str, Any]], meta: dict[str, Any]) -> str:
    """``<out>/<stem>.csv`` (one row per measurement) and ``<out>/<stem>.json`` (rows + meta); returns the
    line a benchmark prints once it is done."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    fields = list(dict.fromkeys(k for row in rows for k in row))
    with open(out / f"{stem}.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=fields)
        writer.writeheader()
        writer.writerows(rows)
    (out / f"{stem}.json").write_text(json.dumps({"meta": meta, "rows": list(rows)}, indent=1))
    return f"# wrote {out / (stem + '.csv')} and {out / (stem + '.json')}"


@contextlib.contextmanager
def fft_path(path: str) -> Iterator[None]:
    """``SIMULATOR_FFT=path`` while an FFT backend is built (the local FFT path is read then)."""
    saved = os.environ.get("SIMULATOR_FFT")
    os.environ["SIMULATOR_FFT"] = path
    try:
        yield
    finally:
        if saved is None:
            del os.environ["SIMULATOR_FFT"]
        else:
            os.environ["SIMULATOR_FFT"] = saved


#: the space of each transform's input and of its output: ``kr`` a real-to-complex spectrum, ``r`` a real
#: field, ``c`` a complex field, ``kc`` a complex spectrum
SPACES = {"irfft": ("kr", "r"), "rfft": ("r", "kr"), "fft": ("c", "kc"), "ifft": ("kc", "c")}


def transform_calls(sim: Any, state: Any) -> list[Any]:
    """The FFT calls of one step in order, from its jaxpr: ``(kind, batch shape)`` per transform and
    ``("loop", trips, [calls])`` for a loop of them (a stage loop; loops with traced bounds count once)."""
    import jax
    from jax.extend.core import jaxprs_in_params

    make = sim.scheme.load()
    scalar = jax.ShapeDtypeStruct((), sim.dtype)
    jaxpr = jax.make_jaxpr(lambda eq, s, t, dt, p: make(eq)(s, t, dt, p))(
        sim.equation, state, scalar, scalar, sim.params).jaxpr

    def walk(jp: Any) -> list[Any]:
        out: list[Any] = []
        for eqn in jp.eqns:
            if eqn.primitive.name == "distributed_fft3d":
                out.append((eqn.params["kind"], tuple(eqn.invars[0].aval.shape[:-3])))
                continue
            for sub in jaxprs_in_params(eqn.params):
                inner = walk(sub)
                trips = eqn.params.get("length", 1) if eqn.primitive.name == "scan" else 1
                if inner:
                    out.extend(inner if trips == 1 else [("loop", trips, inner)])
        return out

    return walk(jaxpr)


def seed_arrays(fft: Any, state: Any) -> dict[str, Any]:
    """One-field inputs of the baseline in the spaces the step starts from: its spectrum (``kr``, a flow
    equation's state) or its complex field (``c``, a wave function's)."""
    import jax.numpy as jnp

    leaf = state if not isinstance(state, tuple) else state[0]
    if jnp.iscomplexobj(leaf) and leaf.shape[-3:] == tuple(fft.shape):
        return {"c": leaf.reshape((-1, *leaf.shape[-3:]))[:1]}
    return {"kr": leaf.reshape((-1, *leaf.shape[-3:]))[:1]}


def replay(fft: Any, calls: list[Any], seeds: dict[str, Any]) -> dict[str, Any]:
    """The transforms ``calls`` of one step, each on an input of its batch shape made from the latest
    output in its input space (distinct factors per call, so no two calls are alike; a forward r2c takes
    products of two of the latest real fields, as the step does), loops as ``fori_loop``; returns the
    seeds plus 0 x an element of every output (which keeps every transform live without changing them)."""
    import jax
    import jax.numpy as jnp

    latest, outputs = dict(seeds), []
    for n, call in enumerate(calls):
        if call[0] == "loop":
            latest.update(jax.lax.fori_loop(0, call[1], lambda _, s, inner=call[2]: replay(fft, inner, s),
                                            {k: latest[k] for k in seeds}))
            continue
        kind, batch = call
        space, result = SPACES[kind]
        if space not in latest and space == "r":  # a density from a complex field (SP: |psi|^2)
            latest["r"] = jnp.abs(latest["c"]) ** 2
        src = latest[space]
        rows = batch[0] if batch else 1
        first = src[jnp.asarray([i % src.shape[0] for i in range(rows)])]
        if kind == "rfft" and src.shape[0] > 1:  # two-field products, as u x w
            first = first * src[jnp.asarray([(i + 1) % src.shape[0] for i in range(rows)])]
        x = first * (1 + n) if batch else first[0] * (1 + n)
        y = getattr(fft, kind)(x)
        latest[result] = y if batch else y[None]
        outputs.append(y)
    # every output, not only the latest of each space: an output that the next call of its kind replaces
    # unread would otherwise be dead code, and XLA drops its transform (the step's six inverse transforms
    # of single components in a row were timed as one)
    zero = sum((0.0 * jnp.real(v.reshape(-1)[0]) for v in (*latest.values(), *outputs)), jnp.zeros(()))
    return {k: v + zero.astype(v.dtype) for k, v in seeds.items()}


class ServedPeer:
    """A peer code run in its own environment by ``python script --serve ARGS`` (scripts/peer_*.py), which prints
    ``ready NAME`` (the peer as it runs: its version and configuration, recorded beside every figure of it), then
    answers each request line with ``WALL_SECONDS CPU_SECONDS`` (the CPU time of all its threads) once the work
    asked is done: its work is timed interleaved with ours in the same rounds."""

    def __init__(self, python: str, script: Path, *args: str):
        self.proc = subprocess.Popen([python, str(script), "--serve", *args], stdin=subprocess.PIPE,
                                     stdout=subprocess.PIPE, text=True)
        word, _, name = self.proc.stdout.readline().strip().partition(" ")
        if word != "ready" or not name:
            self.proc.stdin.close()  # a peer still up, waiting for requests, ends on its input's end
            raise RuntimeError(f"{script} --serve did not start as a named peer (exit {self.proc.wait()})")
        #: the peer as it runs (e.g. its version, its mode, its FFT library), as it names itself
        self.name = name
        #: the CPU seconds of each request, by size
        self.cpu: dict[int, list[float]] = {}

    def request(self, n: int, line: str) -> None:
        """Send ``line`` and wait for its answer; its CPU seconds go to ``self.cpu[n]``."""
        self.proc.stdin.write(f"{line}\n")
        self.proc.stdin.flush()
        _, cpu = self.proc.stdout.readline().split()
        self.cpu.setdefault(n, []).append(float(cpu))

    def close(self) -> None:
        self.proc.stdin.close()
        self.proc.wait()
