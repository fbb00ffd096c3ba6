"""The benchmark's baseline: the transforms one step makes, replayed alone (simulator/benchmark.py)."""

from __future__ import annotations

import re
import sys

import jax
import pytest

from simulator import config as config_mod
from simulator.benchmark import fft_path, replay, seed_arrays, transform_calls
from simulator.planning import plan
from simulator.run.simulation import Simulation


def _count(calls: list) -> int:
    return sum(_count(c[2]) * c[1] if c[0] == "loop" else 1 for c in calls)


@pytest.mark.parametrize("layout", ["full", "compact"])
def test_the_replay_compiles_every_transform_the_step_makes(layout):
    """Each transform of the step is in the replay's compiled program: one whose output the next call of
    its kind replaced unread was once dead code to XLA (the compact step's six inverse transforms in a row
    compiled to one)."""
    cfg = config_mod.load(None, ["grid.shape=16", "precision=float64", f"fft.layout={layout}"])
    with fft_path("xla"):  # XLA's FFT: one `fft` instruction per transform in the compiled text
        sim = Simulation(cfg, jax.devices()[:1])
    calls = transform_calls(sim, plan.abstract_state(sim))
    # full: u and curl u back, u x w forward, batched; compact: u back and the traceless stress forward, a
    # component each (simulator.equations.flow.components)
    per_stage = 3 if layout == "full" else 8
    assert calls == [("loop", 4, calls[0][2])] and len(calls[0][2]) == per_stage and _count(calls) == 4 * per_stage
    seeds = seed_arrays(sim.fft, sim.initial_state())

    def ffts(fn, *args) -> int:  # XLA FFT instructions in a compiled program (a transform may be several)
        return len(re.findall(r" fft\(", jax.jit(fn).lower(*args).compile().as_text()))

    field = sim.fft.irfft(seeds["kr"])
    each = {"irfft": ffts(sim.fft.irfft, seeds["kr"]), "rfft": ffts(sim.fft.rfft, field)}
    assert ffts(lambda s: replay(sim.fft, calls, s), seeds) == sum(each[kind] for kind, _ in calls[0][2])


def test_the_step_benchmarks_summary_pairs_each_row_with_its_own_fluidsim_time(monkeypatch):
    """scripts/bench_step.py's closing summary, fed rows (nothing timed): each row beside FluidSim is said with the
    FluidSim time of its own rounds. One figure per size, the last precision's, stood beside every row: "float64
    18.95 ms/step, wall ratio 0.24" where that row's FluidSim took 76.6 ms."""
    import importlib.util
    from pathlib import Path

    spec = importlib.util.spec_from_file_location("bench_step", Path(__file__).parents[1] / "scripts" / "bench_step.py")
    bench = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, "bench_step", bench)  # its dataclasses look their module up there
    spec.loader.exec_module(bench)

    def row(n, scheme, precision, step_ms, fluidsim_ms, path="fftw", peer=True):
        return {"N": n, "scheme": scheme, "backend": "single", "precision": precision, "fft_path": path,
                "layout": "compact", "step_ms": step_ms, "step_cpu_ms": 2 * step_ms,
                "fluidsim": "fluidsim ns" if peer else None, "fluidsim_ms": fluidsim_ms if peer else None,
                "fluidsim_cpu_ms": 3 * fluidsim_ms if peer else None,
                "vs_fluidsim": step_ms / fluidsim_ms if peer else None,
                "vs_fluidsim_cpu": 2 * step_ms / (3 * fluidsim_ms) if peer else None}

    rows = [row(1024, "ns2d", "float64", 18.95, 76.6), row(1024, "ns2d", "float32", 12.0, 79.0),
            row(1024, "ns2d", "float32", 14.0, 80.0, path="xla"), row(512, "ns2d", "float64", 5.0, 20.0),
            row(64, "rk4", "float64", 3.0, 6.0), row(64, "rk4", "float32", 2.0, 7.0, peer=False)]
    lines = bench.summary_lines(rows, "fftw")
    said = [re.search(r"^ *(\d+) .*: ([\d.]+) ms/step .*ours \w+ \w+ (\w+) .*: ([\d.]+) ms/step, wall ratio ([\d.]+), "
                      r".* ours ([\d.]+) ms, FluidSim ([\d.]+) ms, ratio ([\d.]+)$", line).groups() for line in lines]
    assert said == [  # ns3d's rows first, then the plane's, by size; each its own FluidSim figures
        ("64", "6.00", "float64", "3.00", "0.50", "6.00", "18.00", "0.33"),
        ("512", "20.00", "float64", "5.00", "0.25", "10.00", "60.00", "0.17"),
        ("1024", "76.60", "float64", "18.95", "0.25", "37.90", "229.80", "0.16"),
        ("1024", "79.00", "float32", "12.00", "0.15", "24.00", "237.00", "0.10")]
