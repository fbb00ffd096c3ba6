"""Rotating shallow water (``sw1l``) against exact solutions, an independent NumPy implementation and FluidSim's
``sw1l``, on every backend that takes a plane, on 1, 2 and 4 devices, in float64: inertia-gravity waves, the
geostrophic balance (and tracers riding it), the inviscid invariants, the random forcing, distributed runs, restarts
and bad input."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
from pathlib import Path
from types import SimpleNamespace

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from test_plane import BOX, CASES, SHAPE

import simulator
from simulator.api import load_config
from simulator.errors import ConfigError
from simulator.output import checkpoints
from simulator.output.hdf5 import Snapshot
from simulator.output.timeseries import read_timeseries

from support import advance, assert_failure_recorded, case_id, command, relative_error, simulation, unavailable

ROOT = Path(__file__).parents[1]
#: the python of an environment with FluidSim (scripts/peer_fluidsim.py says how to make one)
FLUIDSIM = "SIMULATOR_FLUIDSIM_PYTHON"


def layer(devices, case=("single", 1, None), **overrides):
    values = {"physics.name": "sw1l", "grid.shape": SHAPE, "grid.box": BOX, **overrides}
    return simulation(devices, case, **values)


def grid() -> tuple[np.ndarray, np.ndarray]:
    x = np.arange(SHAPE[0])[:, None] * BOX[0] / SHAPE[0]
    y = np.arange(SHAPE[1])[None, :] * BOX[1] / SHAPE[1]
    return x, y


def state_of(sim, u, v, eta):
    """A state from real fields ``(Nx, Ny)``."""
    velocity = np.stack([u, v, np.zeros_like(u)])[:, None]
    return sim.state_from_fields(velocity=velocity, height=eta[None])


def fields(sim, state) -> np.ndarray:
    """(u, v, eta), ``(3, Nx, Ny)``."""
    got = sim.fields(state, "velocity", "height")
    velocity, eta = sim.to_numpy(got["velocity"]), sim.to_numpy(got["height"])
    return np.stack([velocity[0, 0], velocity[1, 0], eta[0]])


def poincare(modes, amplitude, f, c, t, omega=None):
    """The inertia-gravity wave eta = A cos(phi), u = A (omega kx cos phi - f ky sin phi)/k^2, v = A (omega ky cos
    phi + f kx sin phi)/k^2, phi = k . x - omega t, omega^2 = f^2 + c^2 k^2 (the linear equations' eigenvector)."""
    kx, ky = (2 * math.pi * m / length for m, length in zip(modes, BOX, strict=True))
    k2 = kx**2 + ky**2
    omega = math.sqrt(f**2 + c**2 * k2) if omega is None else omega
    x, y = grid()
    phi = kx * x + ky * y - omega * t
    cos, sin = np.cos(phi), np.sin(phi)
    return amplitude * np.stack([(omega * kx * cos - f * ky * sin) / k2, (omega * ky * cos + f * kx * sin) / k2, cos])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_an_inertia_gravity_wave_runs_at_its_frequency_to_the_schemes_phase_error(devices, case):
    """A Poincare wave of amplitude 1e-9 (the nonlinear terms 1e-9 of the linear ones), inviscid: after one period
    it matches the exact wave of omega^2 = f^2 + c^2 k^2 to RK4's phase error n (omega dt)^5/120, and halving dt
    divides the difference by about 2^4; a pure gravity wave's frequency (f left out) or f's sign reversed misses
    by far more."""
    f, c, modes, amplitude = 1.3, 2.0, (1, -2), 1e-9
    sim = layer(devices, case, physics__coriolis=f, physics__wave_speed=c, physics__viscosity=0.0)
    start = state_of(sim, *poincare(modes, amplitude, f, c, 0.0))
    kx, ky = (2 * math.pi * m / length for m, length in zip(modes, BOX, strict=True))
    omega = math.sqrt(f**2 + c**2 * (kx**2 + ky**2))
    period, errors = 2 * math.pi / omega, []
    for steps in (40, 80):
        dt = period / steps
        end = fields(sim, advance(sim, start, dt, steps))
        errors.append(relative_error(end, poincare(modes, amplitude, f, c, period)))
        assert errors[-1] < 2 * steps * (omega * dt) ** 5 / 120, errors
    assert 12 < errors[0] / errors[1] < 20, errors
    assert relative_error(end, poincare(modes, amplitude, f, c, period, math.sqrt(omega**2 - f**2))) > 0.1
    assert relative_error(end, poincare(modes, amplitude, -f, c, period)) > 0.1


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_geostrophically_balanced_mode_is_steady_to_round_off(devices, case):
    """eta = A cos(k . x) with u = (c^2/f) z x grad eta, f != 0, inviscid and at a Rossby number of order one:
    the Coriolis force balances the pressure gradient, and the nonlinear terms of a single mode are zero (its
    velocity is along the crests), so it stays put to round-off over 100 steps."""
    f, c, modes, amplitude = 0.7, 1.5, (2, 1), 0.2
    sim = layer(devices, case, physics__coriolis=f, physics__wave_speed=c, physics__viscosity=0.0)
    kx, ky = (2 * math.pi * m / length for m, length in zip(modes, BOX, strict=True))
    x, y = grid()
    phi, g = kx * x + ky * y, c**2 / f
    start = np.stack([g * amplitude * ky * np.sin(phi), -g * amplitude * kx * np.sin(phi), amplitude * np.cos(phi)])
    state = state_of(sim, *start)
    end = advance(sim, state, 0.01, 100)
    assert relative_error(fields(sim, end), start) < 1e-13
    assert float(sim.diagnostics(state, 0.01)["rossby"]) > 0.5  # not a small-amplitude limit


def test_tracers_ride_a_geostrophic_mode_along_its_crests(devices):
    """Tracers (the planar flows' particles, default interpolation) in the steady geostrophic mode of the test
    above: the velocity is constant along a crest, so each moves in a straight line at the velocity of its start,
    x0 + u(x0) t, to 1e-12 of the distance it travels over 50 steps."""
    f, c, modes, amplitude = 0.7, 1.5, (2, 1), 0.2
    sim = layer(devices, physics__coriolis=f, physics__wave_speed=c, physics__viscosity=0.0,
                particles=[{"name": "tracers", "count": 6, "placement": "random"}])
    kx, ky = (2 * math.pi * m / length for m, length in zip(modes, BOX, strict=True))
    x, y = grid()
    phi, g = kx * x + ky * y, c**2 / f
    state = state_of(sim, g * amplitude * ky * np.sin(phi), -g * amplitude * kx * np.sin(phi),
                     amplitude * np.cos(phi))
    start = np.asarray(state["particles.tracers.position"])[:, 1:]  # the box's (0, x, y)
    sine = np.sin(kx * start[:, 0] + ky * start[:, 1])
    velocity = np.stack([g * amplitude * ky * sine, -g * amplitude * kx * sine], axis=1)
    t = 0.5
    end = np.asarray(advance(sim, state, 0.01, 50)["particles.tracers.position"])[:, 1:]
    want = np.mod(start + velocity * t, BOX)
    gap = np.abs(end - want)
    gap = np.minimum(gap, np.asarray(BOX) - gap)  # across the periodic boundary
    assert np.max(np.abs(velocity)) * t > 0.1 and np.max(gap) < 1e-12 * np.max(np.abs(velocity)) * t


def test_energy_and_potential_enstrophy_are_conserved_to_the_schemes_order(devices):
    """Inviscid and unforced from a smooth, unbalanced random state (waves and vortices): the total energy and the
    potential enstrophy drift by RK4's time error, which halving dt divides by about 2^4 (the 2/3 rule's truncation
    of the cubic invariants is far smaller at these resolved scales)."""
    sim = layer(devices, initial__name="random", initial__k_peak=1.0, initial__energy=0.01, initial__eta_rms=0.01,
                physics__viscosity=0.0, physics__coriolis=1.0, physics__wave_speed=1.0)
    state = sim.initial_state()
    d0 = sim.diagnostics(state, 0.1)
    drift = {"total_energy": [], "potential_enstrophy": []}
    for dt, steps in ((0.2, 10), (0.1, 20)):
        d = sim.diagnostics(advance(sim, state, dt, steps), dt)
        for name, values in drift.items():
            values.append(abs(float(d[name]) / float(d0[name]) - 1))
    for name, (coarse, fine) in drift.items():
        assert 0 < coarse < 1e-4 and coarse / fine > 12, (name, coarse, fine)
    assert float(d0["divergent_share"]) > 0.3  # waves present


# ---- the NumPy reference -------------------------------------------------------------------------------------


def numpy_rhs(w: np.ndarray, p: dict) -> np.ndarray:
    """FluidSim's sw1l tendencies of the spectra ``w`` = (u, v, eta) ``(3, Nx, Ny//2 + 1)``, written anew with
    NumPy: the fields on the grid, the products (zeta + f) v, -(zeta + f) u, c^2 eta + |u|^2/2, (1 + eta) u,
    (1 + eta) v, the 2/3 rule on the tendencies, the Kolmogorov forcing F sin(k_f y) on u."""
    kx, ky, keep = p["kx"], p["ky"], p["keep"]
    u, v, eta = (np.fft.irfft2(a, SHAPE) for a in w)
    zeta = np.fft.irfft2(1j * kx * w[1] - 1j * ky * w[0], SHAPE)
    y = grid()[1]
    forcing = p["F"] * np.sin(2 * math.pi * p["kf"] * y / BOX[1]) * np.ones(SHAPE)
    b = np.fft.rfft2(p["c"] ** 2 * eta + 0.5 * (u**2 + v**2))
    du = np.fft.rfft2((zeta + p["f"]) * v + forcing) - 1j * kx * b
    dv = np.fft.rfft2(-(zeta + p["f"]) * u) - 1j * ky * b
    deta = -1j * kx * np.fft.rfft2((1 + eta) * u) - 1j * ky * np.fft.rfft2((1 + eta) * v)
    return keep * np.stack([du, dv, deta])


def numpy_rk4(w: np.ndarray, p: dict, dt: float, steps: int) -> np.ndarray:
    """Classical RK4 in the integrating factor exp(L t) of the diagonal dissipation (Lawson 1967; FluidSim's
    RK4): stages at 0, dt/2, dt/2, dt."""
    k2 = p["kx"] ** 2 + p["ky"] ** 2
    rate = p["nu"] * k2 + p["nu4"] * k2**2
    hypo = p["num"] * np.where(k2 > 0, 1 / np.where(k2 > 0, k2, 1), 0)  # on the velocity only, as friction
    lin = -np.stack([rate + p["alpha"] + hypo, rate + p["alpha"] + hypo, rate])
    half, full = np.exp(lin * dt / 2), np.exp(lin * dt)
    for _ in range(steps):
        k1 = numpy_rhs(w, p)
        k2_ = numpy_rhs(half * (w + dt / 2 * k1), p)
        k3 = numpy_rhs(half * w + dt / 2 * k2_, p)
        k4 = numpy_rhs(full * w + dt * half * k3, p)
        w = full * w + dt / 6 * (full * k1 + 2 * half * (k2_ + k3) + k4)
    return w


@pytest.mark.parametrize("case", CASES[::3], ids=case_id)
def test_an_independent_numpy_reference_from_the_same_random_state(devices, case):
    """Every term at once (f, c, viscosity, hyperviscosity, hypoviscosity, friction, the Kolmogorov forcing) on an
    unbalanced random state: 10 RK4 steps of the run against the same steps written in NumPy, to 1e-12."""
    p = {"f": 0.9, "c": 1.7, "nu": 0.013, "nu4": 0.0021, "num": 0.037, "alpha": 0.05, "F": 0.3, "kf": 2}
    sim = layer(devices, case, initial__name="random", physics__coriolis=p["f"], physics__wave_speed=p["c"],
                physics__viscosity=p["nu"], physics__hyperviscosity=p["nu4"], physics__hyperviscosity_order=2,
                physics__hypoviscosity=p["num"], physics__hypoviscosity_order=1,
                physics__friction=p["alpha"], physics__forcing="kolmogorov", physics__forcing_amplitude=p["F"],
                physics__forcing_wavenumber=p["kf"])
    state = sim.initial_state()
    start = fields(sim, state)
    mx = np.fft.fftfreq(SHAPE[0], 1 / SHAPE[0])[:, None]
    my = np.arange(SHAPE[1] // 2 + 1)[None, :]
    p.update(kx=2 * math.pi / BOX[0] * mx, ky=2 * math.pi / BOX[1] * my,
             keep=((np.abs(mx) < SHAPE[0] / 3) & (my < SHAPE[1] / 3)).astype(float))
    want = np.stack([np.fft.irfft2(a, SHAPE) for a in numpy_rk4(np.fft.rfft2(start), p, 0.02, 10)])
    end = advance(sim, state, 0.02, 10)
    got = fields(sim, end)
    assert relative_error(got, start) > 1e-2 and relative_error(got, want) < 1e-12
    # the figures' fields: the divergence and the potential vorticity's anomaly (zeta - f eta)/(1 + eta)
    w = np.fft.rfft2(got)
    zeta = np.fft.irfft2(1j * p["kx"] * w[1] - 1j * p["ky"] * w[0], SHAPE)
    divergence = np.fft.irfft2(1j * p["kx"] * w[0] + 1j * p["ky"] * w[1], SHAPE)
    shown = {k: sim.to_numpy(v)[0] for k, v in sim.fields(end, "divergence", "potential_vorticity").items()}
    assert relative_error(shown["divergence"], divergence) < 1e-12
    assert relative_error(shown["potential_vorticity"], (zeta - p["f"] * got[2]) / (1 + got[2])) < 1e-12


def test_equal_to_fluidsims_sw1l_side_by_side(devices, tmp_path):
    """FluidSim's sw1l (scripts/peer_fluidsim.py --evolve, in its own environment named by SIMULATOR_FLUIDSIM_PYTHON)
    and this sw1l, from the same unbalanced random state on a plane that is not a square, with rotation, gravity
    waves, viscosity and hyperviscosity, 20 RK4 steps each: the same equations and the same 2/3 rule, so the same
    fields to 1e-12 (measured 8e-16). Skips, saying why, without FluidSim."""
    python = os.environ.get(FLUIDSIM)
    if not python or not Path(python).is_file():
        unavailable("FluidSim's sw1l side by side", "SIMULATOR_REQUIRE_FLUIDSIM",
                    f"{FLUIDSIM} names no python of an environment with FluidSim ({python!r})")
    p = {"f": 0.9, "c2": 2.5, "nu_2": 0.01, "nu_4": 1e-4, "dt": 0.01, "steps": 20}
    sim = layer(devices, initial__name="random", physics__coriolis=p["f"], physics__wave_speed=math.sqrt(p["c2"]),
                physics__viscosity=p["nu_2"], physics__hyperviscosity=p["nu_4"], physics__hyperviscosity_order=2)
    state = sim.initial_state()
    start = fields(sim, state)
    np.savez(tmp_path / "in.npz", u=start[0], v=start[1], eta=start[2], lx=BOX[0], ly=BOX[1], **p)
    # paths relative to tmp_path: FluidFFT imports pytest when any argument has "pytest" in it, as tmp_path does
    done = subprocess.run([python, str(ROOT / "scripts" / "peer_fluidsim.py"), "--threads", "1", "--evolve",
                           "in.npz", "out.npz"], capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    print(done.stdout.strip())  # FluidSim's version and FFT class
    with np.load(tmp_path / "out.npz") as out:
        theirs = np.stack([out["u"], out["v"], out["eta"]])
    ours = fields(sim, advance(sim, state, p["dt"], p["steps"]))
    print(f"sw1l against FluidSim's after {p['steps']} steps: {relative_error(ours, theirs):.1e} of the largest value")
    assert relative_error(ours, start) > 0.1 and relative_error(ours, theirs) < 1e-12


def test_the_random_forcing_kicks_the_velocity_by_exactly_its_energy(devices):
    """``forcing: random``: after a whole step the planar flows' kick of the vorticity, given to the velocity as a
    rotational field: <|u|^2>/2 grows by exactly forcing_power dt (its divergent part is orthogonal to the kick),
    and neither the divergence nor the height changes."""
    power, dt = 0.3, 0.01
    sim = layer(devices, initial__name="random", physics__forcing="random", physics__forcing_power=power,
                physics__forcing_wavenumber=3)
    state = sim.initial_state()
    kicked = jax.jit(lambda eq, s, p: eq.settle(s, jnp.asarray(0.0), jnp.asarray(dt), p))(sim.equation, state,
                                                                                         sim.params)
    before, after = fields(sim, state), fields(sim, kicked)

    def energy(f):
        return 0.5 * np.mean(f[0] ** 2 + f[1] ** 2)

    assert abs(energy(after) - energy(before) - power * dt) < 1e-12 * power * dt
    assert np.array_equal(after[2], before[2])
    divergence = [sim.to_numpy(sim.fields(s, "divergence")["divergence"]) for s in (state, kicked)]
    assert relative_error(divergence[1], divergence[0]) < 1e-12
    assert float(sim.diagnostics(kicked, dt)["injection"]) == power


# ---- distributed runs, restarts and bad input ----------------------------------------------------------------


@pytest.fixture(scope="module")
def reference(devices):
    """A nonlinear, viscous, rotating run on one device (the reference of the distributed ones)."""
    sim = layer(devices, initial__name="random")
    return fields(sim, advance(sim, sim.initial_state(), 0.01, 12))


@pytest.mark.parametrize("case", CASES[1:], ids=case_id)
def test_a_distributed_layer_equals_the_single_device_one(devices, case, reference):
    sim = layer(devices, case, initial__name="random")
    assert relative_error(fields(sim, advance(sim, sim.initial_state(), 0.01, 12)), reference) < 1e-12


def _config(**values):
    base = {"physics.name": "sw1l", "grid.shape": SHAPE, "grid.box": BOX, "precision": "float64",
            "initial.name": "vortex", "time.dt": 0.01, "time.t_end": 0.2, "output.chunk": 5, "checkpoint.every": 10,
            "output.snapshots.every": 20, "runtime.cpu_devices": 8, "fft.mesh": [2]}
    return simulator.load_config(None, {**base, **values})


def test_a_restart_ends_bitwise_where_the_straight_run_ends(tmp_path):
    """From the step-10 checkpoint of a 20-step run on a slab of 2, the same run ends bitwise where the straight one
    does, in every field of its last snapshot; a run from the last checkpoint as a file starts from those fields."""
    straight, run = tmp_path / "straight", tmp_path / "run"
    assert simulator.run_config(_config(), straight) == 0
    shutil.copytree(straight, run)
    for path in (run / "snapshots").glob("s00000020*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert simulator.run_config(_config(), run, restart=str(run / "checkpoints" / "c00000010.json")) == 0
    with Snapshot(run / "snapshots" / "s00000020.h5") as got, Snapshot(straight / "snapshots" / "s00000020.h5") as want:
        assert set(got.fields) >= {"velocity", "height", "divergence", "potential_vorticity"}
        for name in got.fields:
            assert np.array_equal(got.read(name), want.read(name)), name
        stored = {name: want.read(name) for name in ("velocity", "height")}
    # initial.name: file starts a run from the last checkpoint: the fields of the snapshot of the same step
    cfg = _config(**{"initial.name": "file", "initial.path": str(straight / "checkpoints" / "c00000020.json")})
    sim = simulator.Simulation(cfg, jax.devices()[:2])
    started = sim.fields(sim.initial_state(), "velocity", "height")
    for name, value in stored.items():
        assert relative_error(sim.to_numpy(started[name]), value) < 1e-14, name


@pytest.mark.parametrize("name", ["vortex", "random_balanced"])
def test_a_balanced_start_without_rotation_is_refused(name, tmp_path, capfd):
    """A geostrophic balance needs f > 0: one line naming physics.coriolis, exit 2, nothing written."""
    with pytest.raises(ConfigError, match=r"^physics\.coriolis = 0") as err:
        load_config(None, {"physics.name": "sw1l", "physics.coriolis": 0.0, "initial.name": name})
    assert "f > 0" in str(err.value) and "\n" not in str(err.value)
    config = tmp_path / "layer.yaml"
    config.write_text(f"physics: {{name: sw1l, coriolis: 0}}\ninitial: {{name: {name}}}\n")
    code, out, err_text = command(capfd, "run", str(config), "--out", str(tmp_path / "run"))
    assert code == 2 and err_text.strip().count("\n") == 0 and "physics.coriolis = 0" in err_text, err_text
    assert not (tmp_path / "run").exists()


def test_a_layer_that_runs_dry_stops_at_once_with_its_last_good_checkpoint(tmp_path, monkeypatch, capfd):
    """A start too strong for the layer (Froude number 2, no rotation) drives its depth H (1 + eta) negative within
    0.4 time units: the run went on to t_end with eta down to -4.6 and exited 0. Now the chunk end that sees the depth
    no longer positive stops it as a blow-up does: one ERROR line naming min_depth, why and the last good
    checkpoint (kept: none written of the bad state), exit 1, the reason in status.json; the time series' last row
    shows the depth that stopped it."""
    monkeypatch.chdir(tmp_path)
    code, _, err = command(capfd, "run", str(ROOT / "configs" / "geostrophic_adjustment.yaml"),
                           "--set", "grid.shape=[32, 32]", "--set", "precision=float64", "--set", "initial.name=random",
                           "--set", "initial.energy=2", "--set", "physics.coriolis=0", "--set", "time.dt=0.01",
                           "--unset", "time.cfl", "--set", "time.t_end=2", "--set", "output.chunk=20", "--set",
                           "checkpoint.every=20", "--set", "output.snapshots=null", "--out", "run")
    assert code == 1, err[-2000:]
    said = "the flow left its equation's bounds at step 40, t = 0.4: min_depth = -0.31"
    assert said in err and "the layer ran dry, its depth H (1 + eta) no longer positive" in err, err[-2000:]
    assert err.rstrip().endswith("last good checkpoint: run/checkpoints/c00000020"), err[-2000:]
    assert_failure_recorded(tmp_path / "run", SimpleNamespace(stderr=err), said)
    assert checkpoints.find(tmp_path / "run").step == 20
    series = read_timeseries(tmp_path / "run" / "timeseries.csv")
    assert list(series["step"][-2:]) == [20, 40] and series["min_depth"][-2] > 0 > series["min_depth"][-1]
