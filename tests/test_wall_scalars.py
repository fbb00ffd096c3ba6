"""Fixed-flux temperature and passive scalars between no-slip plates (simulator.equations.wall_scalars: the
no-slip convection and the channels), in float64 against the exact conductive states and the decay of a mode, on one
device and a slab of 2; restarts bitwise; bad input refused in one line."""

from __future__ import annotations

import math
import re
import shutil

import numpy as np
import pytest

import simulator
from simulator.fft.bases import Chebyshev
from simulator.output.hdf5 import Snapshot
from simulator.time import imex

from support import advance, command, simulation

RA, NX, NZ, DT = 1e4, 8, 24, 0.05
#: a fixed-flux scalar's slope at both plates, a fixed-value scalar's plate values
SLOPE, VALUES = -2.0, [1.5, -0.5]
#: no-slip convection between fixed-flux plates with two fixed-flux passive scalars, the second the temperature's
#: twin (its diffusivity kappa = Ra^-1/2 and its slope -1 at both plates)
FLUX = {"physics__name": "convection2d_noslip", "physics__rayleigh": RA, "grid__shape": [NX, NZ],
        "grid__box": [2.0, 1.0], "grid__walls__temperature": ["fixed-flux", "fixed-flux"],
        "physics__scalars": [{"diffusivity": 0.02, "gradients": [SLOPE, SLOPE]},
                             {"diffusivity": RA**-0.5, "gradients": [-1.0, -1.0]}], "initial__amplitude": 0.0}


def rk222(rate: float, dt: float, steps: int) -> float:
    """The IMEX RK222 amplification of exp(rate t) over ``steps`` steps of ``dt`` (its implicit half alone)."""
    gamma, x = imex.RK222.gamma, rate * dt
    return ((1 + (1 - gamma) * x / (1 - gamma * x)) / (1 - gamma * x)) ** steps


def grid(sim, state):
    return {k: np.asarray(v) for k, v in sim.fields(state, "velocity", "theta", "scalar").items()}


@pytest.fixture(scope="module")
def flux(devices):
    return simulation(devices, **FLUX)


def test_the_conductive_state_between_fixed_flux_plates_is_steady_and_holds_its_flux(flux):
    """The conductive b = 1 - z (slope -1 at both plates) and the scalar's s = -2 z (its slope at both plates): after
    each of 10 steps the state is the start's to round-off, the temperature's flux 1 and the scalar's -kappa s' at
    both plates, its mean and variance the profile's (-1 and 1/3)."""
    state = start = flux.initial_state()
    z = Chebyshev(NZ, 1.0).points()
    np.testing.assert_allclose(grid(flux, start)["scalar"][0, 0], np.broadcast_to(SLOPE * z, (NX, NZ)), atol=1e-15)
    for _ in range(10):
        state = advance(flux, state, 0.05, 1)
        report = {k: float(v) for k, v in flux.diagnostics(state, 0.05).items()}
        for key, want in (("nusselt_bottom", 1.0), ("nusselt_top", 1.0), ("nusselt", 1.0),
                          ("scalar0_flux_bottom", -0.02 * SLOPE), ("scalar0_flux_top", -0.02 * SLOPE),
                          ("scalar0_mean", SLOPE / 2), ("scalar0_variance", SLOPE**2 / 12)):
            assert report[key] == pytest.approx(want, rel=0, abs=1e-14), key
    got, want = grid(flux, state), grid(flux, start)
    for name in want:
        assert np.abs(got[name] - want[name]).max() < 1e-14, name


def test_a_mode_between_fixed_flux_plates_decays_as_the_scheme_says(flux):
    """theta = cos(pi z) (uniform along the plates: it drives no flow) and the scalar's cos(k x) cos(2 pi z) on its
    conductive profile decay at exp(-kappa (k^2 + (n pi)^2) t) as IMEX RK222 steps it (its amplification per step),
    to the resolution's round-off; the plates hold both slopes (Nu = 1 at both plates)."""
    x = np.arange(NX) * 2.0 / NX
    z = Chebyshev(NZ, 1.0).points()
    k, steps = math.pi, 20
    theta = np.broadcast_to(np.cos(math.pi * z), (1, NX, NZ))
    scalar = (np.cos(k * x)[:, None] * np.cos(2 * math.pi * z))[None, None]
    twin = np.broadcast_to(-z, (1, 1, NX, NZ))
    state = flux.state_from_fields(velocity=np.zeros((3, 1, NX, NZ)), theta=theta,
                                   scalar=np.concatenate([scalar + SLOPE * z, twin]))
    end = advance(flux, state, DT, steps)
    got = grid(flux, end)
    kappa = 1 / math.sqrt(RA)
    assert np.abs(got["theta"] - rk222(-kappa * math.pi**2, DT, steps) * theta).max() < 1e-14
    decayed = rk222(-0.02 * (k**2 + 4 * math.pi**2), DT, steps) * scalar
    assert np.abs(got["scalar"][0] - SLOPE * z - decayed).max() < 1e-14
    assert np.abs(got["velocity"]).max() == 0.0
    report = flux.diagnostics(end, DT)
    assert float(report["nusselt_bottom"]) == pytest.approx(1.0, abs=1e-13)
    assert float(report["nusselt_top"]) == pytest.approx(1.0, abs=1e-13)


def test_a_scalar_twin_of_the_temperature_moves_with_it(flux):
    """The second scalar, of the temperature's diffusivity and plate slopes, started as b - 1 = theta - z from noise
    at Ra = 1e4, is advected and diffused as the temperature is: after 20 steps it is b - 1 to round-off."""
    noisy = grid(flux, flux.initial_state({"name": "conductive", "amplitude": 0.1, "seed": 5}))
    z = Chebyshev(NZ, 1.0).points()
    scalar = np.stack([noisy["scalar"][0], noisy["theta"] - z])
    start = flux.state_from_fields(velocity=noisy["velocity"], theta=noisy["theta"], scalar=scalar)
    end = advance(flux, start, DT, 20)
    got = {k: np.asarray(v) for k, v in flux.fields(end, "temperature", "scalar", "velocity").items()}
    assert np.abs(got["velocity"]).max() > 1e-3
    assert np.abs(got["scalar"][1] - (got["temperature"] - 1)).max() < 1e-13


def test_a_scalar_is_carried_downstream_by_moving_plates_uniform_flow(devices):
    """Both plates moving at U = 1 (physics.plate_velocity) carry the fluid uniformly: a scalar cos(pi x) sin(pi z)
    between plates held at 0 is carried downstream while it decays, exp(-kappa 2 pi^2 t) cos(pi (x - t)) sin(pi z),
    to RK222's error of its explicit advection (measured 2.3e-4 at dt = 0.01, t = 0.5; carried upstream it would be
    off by 1)."""
    sim = simulation(devices, **{**FLUX, "grid__walls__temperature": ["fixed-value", "fixed-value"],
                                 "physics__plate_velocity": [1.0, 1.0],
                                 "physics__scalars": [{"diffusivity": 0.01}]})
    x = (np.arange(NX) * 2.0 / NX)[:, None]
    z = Chebyshev(NZ, 1.0).points()
    velocity = np.zeros((3, 1, NX, NZ))
    velocity[0] = 1.0
    state = sim.state_from_fields(velocity=velocity, theta=np.zeros((1, NX, NZ)),
                                  scalar=(np.cos(math.pi * x) * np.sin(math.pi * z))[None, None])
    got = grid(sim, advance(sim, state, 0.01, 50))["scalar"][0, 0]
    want = math.exp(-0.01 * 2 * math.pi**2 * 0.5) * np.cos(math.pi * (x - 0.5)) * np.sin(math.pi * z)
    assert np.abs(got - want).max() < 5e-4


def test_a_distributed_run_with_scalars_equals_the_single_device_one(devices, flux):
    """Noise in theta and the scalar at Ra = 1e4 between fixed-flux plates, 10 steps: a slab of 2 ends where one
    device ends, to 1e-12."""
    start = {"name": "conductive", "amplitude": 0.1, "scalars": {"amplitude": 0.1, "seed": 3}}
    want = grid(flux, advance(flux, flux.initial_state(start), DT, 10))
    sim = simulation(devices, ("slab", 2, None), **FLUX)
    got = grid(sim, advance(sim, sim.initial_state(start), DT, 10))
    assert np.abs(want["scalar"]).max() > 0.01 and np.abs(want["velocity"]).max() > 1e-4
    for name in want:
        assert np.abs(got[name] - want[name]).max() < 1e-12 * np.abs(want[name]).max(), name


#: on a slab of 2: a Couette channel (a box) and a Poiseuille one (a plane) with a scalar held at 1.5 and -0.5,
#: convection in a box between fixed-flux plates with a scalar of slope 0.5 at both
BOXES = {"channel": {"physics__name": "channel", "physics__reynolds": 100.0, "physics__drive": "couette",
                     "physics__scalars": [{"diffusivity": 0.01, "values": VALUES}], "grid__shape": [8, 4, 16]},
         "channel2d": {"physics__name": "channel2d", "physics__reynolds": 100.0, "physics__drive": "pressure",
                       "physics__scalars": [{"diffusivity": 0.01, "values": VALUES}], "grid__shape": [8, 16]},
         "convection_noslip": {**FLUX, "physics__name": "convection_noslip", "grid__box": [2.0, 2.0, 1.0],
                               "physics__scalars": [{"diffusivity": 0.01, "gradients": [0.5, 0.5]}],
                               "grid__shape": [8, 4, 16]}}


@pytest.mark.parametrize("name", BOXES)
def test_a_box_holds_its_scalars_conductive_profile(devices, name):
    """On a slab of 2, the scalar's conductive profile, carried along the plates by Couette flow (a box) or
    Poiseuille flow (a plane), or in the conductive state between fixed-flux plates (a box), is steady to round-off
    over 10 steps, its plate fluxes the profile's, -kappa (s1 - s0)/H or -kappa g."""
    sim = simulation(devices, ("slab", 2, None), **BOXES[name])
    start = sim.initial_state()
    end = advance(sim, start, 0.05, 10)
    got, want = (np.asarray(sim.fields(x, "scalar")["scalar"]) for x in (end, start))
    assert np.abs(got - want).max() < 1e-14
    report = sim.diagnostics(end, 0.05)
    flux = -0.01 * 0.5 if name == "convection_noslip" else 0.01 * (VALUES[0] - VALUES[1]) / 2
    for side in ("bottom", "top"):
        assert float(report[f"scalar0_flux_{side}"]) == pytest.approx(flux, rel=0, abs=1e-15)


#: a channel between plates at rest driven by its pressure gradient, carrying a scalar held at 1 and -1
CHANNEL = {"physics.name": "channel2d", "physics.reynolds": 100.0, "grid.shape": [8, 16], "precision": "float64",
           "physics.scalars": [{"diffusivity": 0.01, "values": VALUES}], "initial.scalars.amplitude": 0.1,
           "initial.amplitude": 0.01, "time.dt": 0.02, "time.t_end": 0.2, "output.chunk": 5, "checkpoint.every": 5,
           "output.snapshots.every": 10, "output.profiles.every": 5, "runtime.cpu_devices": 8, "fft.mesh": [2]}


def test_a_channel_holds_its_scalars_plates_and_restarts_bitwise(tmp_path):
    """Poiseuille flow carrying a scalar between plates at 1.5 and -0.5 (noise on both): run on a slab of 2 and
    restarted from its step-5 checkpoint, its step-10 snapshot is the straight run's bit for bit; the scalar is at
    its plates' values in every profile row, the first its conductive profile with the noise's mean."""
    straight = tmp_path / "straight"
    assert simulator.run_config(simulator.load_config(None, CHANNEL), straight) == 0
    run = tmp_path / "run"
    shutil.copytree(straight, run)
    for path in (run / "snapshots").glob("s00000010*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    restart = str(run / "checkpoints" / "c00000005.json")
    assert simulator.run_config(simulator.load_config(None, CHANNEL), run, restart=restart) == 0
    with Snapshot(run / "snapshots" / "s00000010.h5") as got, Snapshot(straight / "snapshots" / "s00000010.h5") \
            as want:
        for name in ("scalar", "velocity"):
            assert np.array_equal(got.read(name), want.read(name)), name
    rows = simulator.load_run(straight).output("profiles")["scalar0"]
    assert rows.shape[0] >= 3
    np.testing.assert_allclose(rows[:, 0], VALUES[0], rtol=0, atol=1e-13)
    np.testing.assert_allclose(rows[:, -1], VALUES[1], rtol=0, atol=1e-13)


#: a channel2d config refused, the key it names and why
BAD = [
    ({"physics.scalars": "[{diffusivity: 0}]"}, r"^error: physics\.scalars\[0\]\.diffusivity = 0"),
    ({"physics.scalars": "[{diffusivity: 0.01, values: [1, 0]}]", "grid.walls.temperature": "[fixed-flux,fixed-flux]"},
     r"^error: physics\.scalars\[0\]\.values = \[1(\.0)?, 0(\.0)?\] is given for a fixed-flux scalar; "
     r"physics\.scalars\[0\]\.gradients"),
    ({"physics.scalars": "[{diffusivity: 0.01, gradients: [1, 1]}]"}, r"^error: physics\.scalars\[0\]\.gradients = .* "
     r"is given for a fixed-value scalar"),
    ({"physics.name": "sw1l", "physics.scalars": "[{diffusivity: 0.01}]"}, r"^error: physics\.scalars = .* is an "
     r"unknown key; known keys for physics\.name = sw1l"),
    ({"initial.scalars.amplitude": "0.1"}, r"^error: initial\.scalars\.name = 'linear' has no scalar to apply to"),
]


@pytest.mark.parametrize(("values", "pattern"), BAD, ids=[" ".join(v) for v, _ in BAD])
def test_bad_scalar_input_is_one_line_exit_2_and_nothing_written(tmp_path, capfd, values, pattern):
    config = tmp_path / "channel.yaml"
    config.write_text("physics: {name: channel2d}\ngrid: {shape: [8, 16]}\n")
    args = [a for key, value in values.items() for a in ("--set", f"{key}={value}")]
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "run"), *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.match(pattern, err.strip()), err
    assert not (tmp_path / "run").exists()


#: convection between free-slip plates, a plane's and a box's, carrying a scalar held at 1.5 and -0.5 and the
#: temperature's twin
FREE = {"physics__rayleigh": RA, "initial__amplitude": 0.0,
        "physics__scalars": [{"diffusivity": 0.02, "values": VALUES}, {"diffusivity": RA**-0.5, "values": [1.0, 0.0]}]}
FREE_GRIDS = {"convection2d": {"grid__shape": [8, 16], "grid__box": [2.0, 1.0], "grid__walls__axis": "y"},
              "convection": {"grid__shape": [8, 4, 16], "grid__box": [2.0, 2.0, 1.0], "grid__walls__axis": "z"}}


@pytest.mark.parametrize("name", FREE_GRIDS)
def test_free_slip_scalars_decay_exactly_and_move_with_the_temperature(devices, name):
    """Between free-slip plates (a plane and a box) each scalar is its linear profile plus a sine series: the profile
    with the mode cos(k x) sin(2 pi z) on it decays at exp(-kappa (k^2 + (2 pi)^2) t) to round-off (the integrating
    factor is exact), its mean, variance and plate fluxes the profile's; the temperature's twin started as b from
    noise is b after 20 steps of its flow to round-off."""
    sim = simulation(devices, physics__name=name, **FREE, **FREE_GRIDS[name])
    shape = sim.fft.shape
    x = sim.fft.coordinates(sim.cfg.grid.lengths, np.float64)[1 if name == "convection2d" else 0]
    z = (np.arange(16) + 0.5) / 16
    line = np.broadcast_to(VALUES[0] + (VALUES[1] - VALUES[0]) * z, shape)
    mode = np.cos(math.pi * np.asarray(x)) * np.sin(2 * math.pi * z)
    velocity = {"convection2d": {"vorticity": np.zeros(shape)}, "convection": {"velocity": np.zeros((3, *shape))}}
    still = sim.state_from_fields(**velocity[name], theta=np.zeros(shape),
                                  scalar=np.stack([line + mode, np.broadcast_to(1 - z, shape)]))
    end = advance(sim, still, DT, 20)
    decayed = math.exp(-0.02 * (math.pi**2 + 4 * math.pi**2) * DT * 20) * mode
    assert np.abs(np.asarray(sim.fields(end, "scalar")["scalar"])[0] - line - decayed).max() < 1e-13
    names = [*velocity[name], "theta", "temperature"]
    noisy = {k: np.asarray(v) for k, v in sim.fields(sim.initial_state({"name": "conductive", "amplitude": 0.1}),
                                                     *names).items()}
    start = sim.state_from_fields(**{k: noisy[k] for k in names[:-1]},
                                  scalar=np.stack([line + mode, noisy["temperature"]]))
    got = {k: np.asarray(v) for k, v in sim.fields(advance(sim, start, DT, 20), "temperature", "scalar",
                                                   "velocity").items()}
    assert np.abs(got["velocity"]).max() > 1e-3
    assert np.abs(got["scalar"][1] - got["temperature"]).max() < 1e-13
    report = {k: float(v) for k, v in sim.diagnostics(end, DT).items()}
    mean, drop = sum(VALUES) / 2, VALUES[1] - VALUES[0]
    assert report["scalar0_mean"] == pytest.approx(mean, abs=1e-14)
    assert report["scalar0_variance"] == pytest.approx(drop**2 / 12 + 0.25 * np.exp(
        -0.02 * 5 * math.pi**2 * DT * 20) ** 2, abs=1e-14)
    for side in ("bottom", "top"):
        assert report[f"scalar0_flux_{side}"] == pytest.approx(-0.02 * drop, abs=1e-15)


def test_a_free_slip_scalar_restarts_across_the_plates_on_another_grid(devices, tmp_path):
    """A scalar held at 1.5 and -0.5 between free-slip plates, checkpointed on 8 x 16 and read onto 8 x 24: its
    linear profile is taken off before its sine series is remapped and put back on the new heights, so the profile
    arrives exact to round-off (remapped as a sine series it was off by 0.08 near the plates)."""
    values = {"physics.name": "convection2d", "physics.rayleigh": RA, "grid.shape": [8, 16], "grid.box": [2.0, 1.0],
              "grid.walls.axis": "y", "precision": "float64", "initial.amplitude": 0.0,
              "physics.scalars": [{"diffusivity": 0.02, "values": VALUES}], "time.dt": DT, "time.t_end": DT,
              "output.chunk": 1, "checkpoint.every": 1, "output.snapshots.every": 0}
    assert simulator.run_config(simulator.load_config(None, values), tmp_path / "run") == 0
    finer = simulator.Simulation(simulator.load_config(None, {**values, "grid.shape": [8, 24]}), devices[:1])
    state = finer.state_from_file(str(tmp_path / "run" / "checkpoints" / "c00000001.json"))
    z = (np.arange(24) + 0.5) / 24
    got = np.asarray(finer.fields(state, "scalar")["scalar"])[0]
    assert np.abs(got - (VALUES[0] + (VALUES[1] - VALUES[0]) * z)).max() < 1e-14
