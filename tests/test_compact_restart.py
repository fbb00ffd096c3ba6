"""Checkpoints across spectral layouts (fft.layout: the compact spectrum of the 2/3 rule's modes, the half
spectrum, jaxdecomp's full one): a checkpoint of any layout restores into any other mode for mode, bitwise
(zeros where the stored layout holds none), and a run stopped in one layout and restarted in another, on
another device count or backend, or an old (half-spectrum) run directory restarted with the default
layout, ends where the uninterrupted run ends, to 1e-12 (float64, 16^3, a random flow)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import jax
import numpy as np
import pytest
import yaml

import simulator
from simulator.config import to_dict
from simulator.output import checkpoints
from simulator.output.hdf5 import Snapshot
from simulator.output.resample import mode_map

from support import relative_error, shared

SHAPE = (16, 16, 16)
#: (backend, devices, mesh, fft.layout): the layouts a checkpoint is written and read in
LAYOUTS = {
    "half": ("slab", 2, None, "full"),
    "compact": ("slab", 2, None, "compact"),
    "compact-pencil": ("pencil", 4, (2, 2), "compact"),  # other compact sizes: 11x12x6, not 11x11x6
    "compact-single": ("single", 1, None, "compact"),
    "jaxdecomp": ("jaxdecomp", 4, (2, 2), "full"),  # the full complex spectrum
}


def _sim(layout: str, shape=SHAPE):
    name, n, mesh, kind = LAYOUTS[layout]
    return shared((name, n, mesh), grid__shape=list(shape), initial__name="random", initial__seed=3,
                  fft__layout=kind)


def _canonical(sim, state) -> tuple[np.ndarray, list[np.ndarray]]:
    """The spectral state as a host array in canonical axes (*batch, kx, ky, kz), and each axis's mode numbers."""
    k = np.asarray(jax.device_get(jax.tree.leaves(state)[0]))
    nb = k.ndim - 3
    k = np.transpose(k, (*range(nb), *(nb + sim.fft.perm.index(a) for a in range(3))))
    half = [False, False, sim.fft.has_real_transform]  # a real-to-complex z axis holds kz = 0 .. n-1
    modes = [np.arange(n) if h else np.fft.fftfreq(n, 1 / n).round().astype(int)
             for n, h in zip(k.shape[nb:], half, strict=True)]
    return k, modes


def _on_modes(k: np.ndarray, modes: list[np.ndarray], wanted: list[np.ndarray]) -> np.ndarray:
    """``k`` (canonical, axes holding ``modes``) at the ``wanted`` mode numbers, zero where it holds none."""
    for a, (have, want) in enumerate(zip(modes, wanted, strict=True)):
        where = {int(m): i for i, m in enumerate(have)}
        taken = np.take(k, [where.get(int(m), 0) for m in want], axis=a - 3)
        shape = [1] * k.ndim
        shape[a - 3] = len(want)
        k = taken * np.isin(want, have).reshape(shape)
    return k


@pytest.fixture(scope="module")
def written(tmp_path_factory, devices):
    """A random dealiased flow checkpointed in the half, compact and full (jaxdecomp) layouts."""
    d = tmp_path_factory.mktemp("layouts")
    out = {}
    for layout in ("half", "compact", "jaxdecomp"):
        sim = _sim(layout)
        state = sim.initial_state()
        marker = checkpoints.write(d / layout, state, step=7, time=0.5, dt=0.01, epoch=(0, 0.0), writer="test",
                                   spaces=sim.equation.leaf_spaces(state), perm=sim.fft.perm,
                                   full_spectrum=not sim.fft.has_real_transform,
                                   meta={"config": to_dict(sim.cfg), "backend": LAYOUTS[layout][0]}, keep=2)
        out[layout] = (checkpoints.find(marker), state)
    return out


@pytest.mark.parametrize("source", ["half", "compact", "jaxdecomp"])
def test_a_checkpoint_restores_in_every_layout_mode_for_mode(written, source):
    """Each mode the run's layout holds is the stored mode of that number, bitwise, or zero where the stored
    layout has none; jaxdecomp's full spectrum of a half or compact one comes through real space (1e-13)."""
    ckpt, state = written[source]
    stored, stored_modes = _canonical(_sim(source), state)
    for layout in LAYOUTS:
        sim = _sim(layout)
        template = sim.zero_state()
        restored = checkpoints.restore(ckpt, template, sim.fft, sim.equation.leaf_spaces(template))
        assert jax.tree.leaves(restored)[0].sharding == jax.tree.leaves(template)[0].sharding
        got, modes = _canonical(sim, restored)
        expected = _on_modes(stored, stored_modes, modes)
        if sim.fft.has_real_transform or not _sim(source).fft.has_real_transform:
            np.testing.assert_array_equal(got, expected, err_msg=f"{source} -> {layout}")
        else:  # kz < 0: the conjugates of the stored modes -k
            mirrored = np.conj(_on_modes(stored, stored_modes, [-m for m in modes]))
            assert relative_error(got, np.where(modes[2] >= 0, expected, mirrored)) < 1e-13, layout


@pytest.mark.parametrize(("source", "layout", "shape"), [("compact", "half", SHAPE), ("half", "compact", SHAPE),
                                                         ("compact", "compact-pencil", (24, 24, 24))])
def test_a_checkpoint_of_either_layout_is_an_initial_file(written, tmp_path, source, layout, shape):
    """``initial.name: file``: a compact checkpoint starts a half-spectrum run and a half one a compact run
    (the same velocity), and a compact one a compact run on a finer grid (the zero-padded velocity)."""
    ckpt, state = written[source]
    u = _sim(source).to_numpy(_sim(source).fields(state, "velocity")["velocity"])
    spectrum = np.fft.fftn(u, axes=(-3, -2, -1))
    for axis, n1 in zip((-3, -2, -1), shape, strict=True):
        idx, w = mode_map(spectrum.shape[axis], n1)
        wshape = [1] * spectrum.ndim
        wshape[axis] = n1
        spectrum = sum(np.take(spectrum, idx[:, i], axis=axis) * w[:, i].reshape(wshape) for i in range(2))
    sim = _sim(layout, shape)
    sim.scratch = tmp_path
    got = sim.to_numpy(sim.fields(sim.state_from_file(ckpt.index.with_suffix(".json")), "velocity")["velocity"])
    assert relative_error(got, np.fft.ifftn(spectrum, axes=(-3, -2, -1)).real) < 1e-12


# ---- runs stopped in one layout and restarted in another ----------------------------------------------------


def _config(**values):
    base = {"grid.shape": list(SHAPE), "precision": "float64", "initial.name": "random", "initial.seed": 3,
            "time.dt": 0.01, "time.t_end": 0.2, "output.chunk": 5, "checkpoint.every": 10,
            "output.snapshots.every": 20, "fft.mesh": [2]}
    return simulator.load_config(None, {**base, **values})


def _velocity(run: Path) -> np.ndarray:
    index = max((run / "snapshots").glob("s*.h5"))
    with Snapshot(index) as snap:
        assert snap.attrs["step"] == 20
        return snap.read("velocity")


@pytest.fixture(scope="module")
def runs(tmp_path_factory, devices):
    """The uninterrupted run (compact, 2-device slab; checkpoints at steps 10 and 20) and one stopped
    half-way in the full layout (the half spectrum)."""
    d = tmp_path_factory.mktemp("runs")
    assert simulator.run_config(_config(), d / "compact") == 0
    assert simulator.run_config(_config(**{"fft.layout": "full", "time.t_end": 0.1}), d / "full") == 0
    return d


def _restart(runs: Path, tmp_path: Path, stopped: str, **values) -> Path:
    """Run ``stopped`` (a copy) restarted from its step-10 checkpoint with ``values``, to the end."""
    run = tmp_path / "run"
    shutil.copytree(runs / stopped, run)
    shutil.rmtree(run / "snapshots" / "s00000020", ignore_errors=True)  # the end is written again, by the
    (run / "snapshots" / "s00000020.h5").unlink(missing_ok=True)          # restarted run
    assert simulator.run_config(_config(**values), run, restart=str(run / "checkpoints" / "c00000010.json")) == 0
    return run


@pytest.mark.parametrize(("stopped", "layout"), [("compact", "full"), ("full", "compact")])
def test_a_run_stopped_in_one_layout_ends_as_uninterrupted_in_the_other(runs, tmp_path, stopped, layout):
    """The layout is numerics: a restart that changes only fft.layout needs no --allow-physics-change."""
    run = _restart(runs, tmp_path, stopped, **{"fft.layout": layout})
    assert relative_error(_velocity(run), _velocity(runs / "compact")) < 1e-12


@pytest.mark.parametrize("values", [{"fft.backend": "single", "fft.mesh": None},
                                    {"fft.backend": "pencil", "fft.mesh": [2, 2]},
                                    {"fft.backend": "jaxdecomp", "fft.mesh": [2, 2]}],
                         ids=["1-device", "pencil-2x2", "jaxdecomp-2x2"])
def test_a_compact_run_restarts_on_another_device_count_and_backend(runs, tmp_path, values):
    """Slab on 2 devices (compact 11x11x6) to one device (11x11x6), a 2x2 pencil (11x12x6: other compact
    sizes) and jaxdecomp (the full complex spectrum, completed through real space)."""
    run = _restart(runs, tmp_path, "compact", **values)
    assert relative_error(_velocity(run), _velocity(runs / "compact")) < 1e-12


def test_an_old_half_spectrum_run_directory_restarts_in_the_default_layout(runs, tmp_path):
    """A run directory written before fft.layout existed (half-spectrum checkpoints, a config without the key,
    a marker without ``spectrum``) restarted with the default layout (auto: compact here) unchanged."""
    old = tmp_path / "old"
    shutil.copytree(runs / "full", old)
    for path in old.glob("checkpoints/c*.json"):
        info = json.loads(path.read_text())
        info.pop("spectrum", None)
        del info["config"]["fft"]["layout"]
        path.write_text(json.dumps(info))
    for path in [old / "config.yaml", *old.glob("segments/*.yaml")]:
        text = yaml.safe_load(path.read_text())
        del text["config"]["fft"]["layout"]
        path.write_text(yaml.safe_dump(text, sort_keys=False))
    assert simulator.run_config(_config(), old, restart="latest") == 0
    assert relative_error(_velocity(old), _velocity(runs / "compact")) < 1e-12
    markers = sorted(old.glob("checkpoints/c*.json"))
    assert json.loads(markers[-1].read_text())["spectrum"] == "compact 11x11x6"
