"""Shared pieces of the benchmark scripts in ``scripts/``: timing, compiled memory, result files.

Benchmarks are never unit tests: they report ratios against a baseline measured in the same
invocation and write them to ``outputs/bench/``.
"""

from __future__ import annotations

import csv
import json
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable, Mapping, Sequence
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
                      cpu: dict[str, float] | None = None) -> dict[str, float]:
    """Median seconds of each zero-argument ``fns[name]()`` (results blocked on), A/B interleaved.

    Every round calls each function once, in an order rotated from round to round, so load that
    comes and goes on a shared machine hits all of them alike; ``warmup`` untimed rounds first.
    ``cpu``, when given, receives the median CPU seconds of this process (all its threads) per call:
    on a loaded machine, the work done rather than the time waited for a core.
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
            c0, t0 = time.process_time(), time.perf_counter()
            jax.block_until_ready(fns[name]())
            times[name].append(time.perf_counter() - t0)
            cpu_times[name].append(time.process_time() - c0)
    if cpu is not None:
        cpu.update({name: statistics.median(t) for name, t in cpu_times.items()})
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
