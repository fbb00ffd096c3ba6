"""Particles through whole runs: checkpoints hold them (bitwise resume), a restart at another resolution
keeps them, ensembles carry them, and the particle outputs (HDF5 shards, index, XDMF)."""

from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import pytest

import simulator
from simulator.output import checkpoints

ROOT = Path(__file__).parents[1]
TG = ROOT / "configs" / "taylor_green.yaml"
SPECIES = [{"name": "tracers", "count": 30, "seed": 2},
           {"name": "drops", "count": 8, "placement": "lattice", "tau_p": 0.1, "gravity": [0, 0, -1]}]


def _config(**values):
    base = {"grid.shape": 16, "precision": "float64", "output.every": 5, "checkpoint.every": 10,
            "runtime.cpu_devices": 8, "particles": SPECIES}
    return simulator.load_config(TG, {**base, **values})


def _final(run_dir: Path) -> dict[str, np.ndarray]:
    ckpt = checkpoints.find(run_dir)
    with h5py.File(ckpt.index) as f:
        return {name: f[name][()] for name in f}


@pytest.mark.slow  # three short runs of a 16^3 flow with particles (~25 s on 2 cores)
def test_restart_is_bitwise_and_a_remapped_restart_keeps_the_particles(tmp_path):
    assert simulator.run_config(_config(**{"time.t_end": 0.2}), tmp_path / "ref") == 0
    assert simulator.run_config(_config(**{"time.t_end": 0.1}), tmp_path / "cut") == 0
    assert simulator.run_config(_config(**{"time.t_end": 0.2}), tmp_path / "cut", restart="latest") == 0
    ref, resumed = _final(tmp_path / "ref"), _final(tmp_path / "cut")
    assert sorted(ref) == ["particles.drops.position", "particles.drops.velocity", "particles.tracers.position",
                           "state"]
    for name in ref:
        np.testing.assert_array_equal(resumed[name], ref[name], err_msg=name)
    # branch the half-way checkpoint onto a 32^3 grid: the particles are read back exactly
    half = checkpoints.find(tmp_path / "cut", before=11)
    assert half.step == 10
    sim = simulator.Simulation(_config(**{"grid.shape": 32}))
    state = sim.state_from_file(half.index.with_suffix(".json"))
    with h5py.File(half.index) as f:
        for name in ("particles.tracers.position", "particles.drops.position", "particles.drops.velocity"):
            np.testing.assert_array_equal(np.asarray(state[name]), f[name][()], err_msg=name)
    assert state["state"].shape[1:] == tuple(sim.fft.spectral_shape(real=True))
