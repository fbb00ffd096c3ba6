"""The benchmark's baseline: the transforms one step makes, replayed alone (simulator/benchmark.py)."""

from __future__ import annotations

import re

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
