"""Particles in the plane (``grid.shape: [Nx, Ny]`` with a planar flow): tracers and inertial particles of every
interpolation method, replicated and owned, against the steady Kolmogorov flow's closed form on every backend that
takes a plane on 1, 2 and 4 devices, in float64; distributed equals one device; a planar run's particle files in the
plane's x and y, its restart bitwise; the keys a plane refuses, in one line."""

from __future__ import annotations

import functools
import math
import re
import shutil

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simulator
from simulator.config.grid import plane_backends
from simulator.equations import registry
from simulator.output import lagrangian
from simulator.particles.flow import velocity_key
from simulator.particles.interpolation import INTERPOLATIONS
from simulator.particles.species import OWNED_INTERPOLATIONS

from support import case_id, command, plane_cases, relative_error, simulation, species_rows

CASES = plane_cases()
assert {c[0] for c in CASES} == set(plane_backends())
#: the plane of tests/test_plane.py: not a square, its x over 4 devices
SHAPE, BOX = [16, 32], [2 * math.pi, 4 * math.pi]
#: the Kolmogorov flow u = U sin(k y) along x held by f_x = F sin(k y) against viscosity and friction
NU, ALPHA, F, M = 0.02, 0.1, 0.7, 2
K = 2 * math.pi * M / BOX[1]
U = F / (NU * K**2 + ALPHA)
TAU, GX = 0.1, 0.5
#: particles on grid nodes in y (where the Lagrange window is exact: u depends on y only), anywhere in x
START = np.stack([np.random.default_rng(3).uniform(0, BOX[0], 12), np.arange(12) * 5 % SHAPE[1] * BOX[1] / SHAPE[1]],
                 axis=1)
#: an owned species' slots per device: 12 particles on 4 devices need 3 times the mean
OWNED = {"distribution": "owned", "capacity": 3.0}


def _species(path):
    """Tracers by every method, replicated and owned (local methods), and inertial particles with gravity along x."""
    placed = {"count": len(START), "placement": "file", "path": str(path)}
    tracers = [{"name": f"tracers_{m}", "interpolation": m, **placed} for m in INTERPOLATIONS if m != "nufft"
               or _nufft()]
    owned = [{"name": f"owned_{m}", "interpolation": m, **OWNED, **placed} for m in OWNED_INTERPOLATIONS]
    drops = {"tau_p": TAU, "gravity": [GX, 0.0], **placed}
    return [*tracers, *owned, {"name": "drops", **drops},
            {"name": "owned_drops", "interpolation": "lagrange4", **OWNED, **drops}]


def _nufft() -> bool:
    from simulator.fft.points import nufft_available

    return nufft_available() is None


@functools.cache
def kolmogorov(case, path):
    """The steady Kolmogorov flow of ns2d carrying :func:`_species` on ``case`` (one program per case)."""
    return simulation(jax.devices(), case, **{"physics.name": "ns2d", "grid.shape": SHAPE, "grid.box": BOX,
                                              "physics.forcing": "kolmogorov", "physics.viscosity": NU,
                                              "physics.friction": ALPHA, "physics.forcing_amplitude": F,
                                              "physics.forcing_wavenumber": M, "particles": _species(path)})


def steady(sim):
    """The Kolmogorov flow omega = -U k cos(k y), its particles released at rest (the drops too)."""
    y = np.arange(SHAPE[1]) * BOX[1] / SHAPE[1]
    state = sim.state_from_fields(vorticity=np.broadcast_to(-U * K * np.cos(K * y), (1, *SHAPE)))
    return {**state, **{velocity_key(s.name): jnp.zeros_like(state[velocity_key(s.name)])
                        for s in sim.cfg.particles if s.inertial}}


@pytest.fixture(scope="module")
def start_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("plane-particles") / "start.npy"
    np.save(path, START)
    return path


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_tracers_and_drops_in_the_kolmogorov_flow_follow_the_closed_form(case, start_file):
    """A tracer at (x0, y0) moves along x at U sin(k y0) and keeps y0 and z = 0 (every method, replicated and owned,
    the owned ones crossing the devices' blocks along x); a drop released at rest under gravity (g_x, 0) reaches
    v_x = (U sin(k y0) + g_x tau_p)(1 - exp(-t/tau_p)) with v_y = w = 0 (RK4's error at dt = tau_p/10: < 1e-5)."""
    sim = kolmogorov(case, start_file)
    state = steady(sim)
    dt, steps = 0.01, 30
    end = sim.advance(state, steps, dt)
    t = dt * steps
    x0, y0 = START[:, 0], START[:, 1]
    speed = U * np.sin(K * y0)
    tracers = np.stack([np.zeros_like(x0), x0 + speed * t, y0], axis=1)
    for s in sim.cfg.particles:
        got = species_rows(end, s, "position")
        if not s.inertial:
            assert np.max(np.abs(got - tracers)) < 1e-12, s.name
            continue
        v = species_rows(end, s, "velocity")
        terminal = (speed + GX * TAU) * (1 - math.exp(-t / TAU))
        assert np.max(np.abs(v[:, 1] - terminal)) < 1e-5 * U, s.name
        assert not np.any(v[:, [0, 2]]) and np.array_equal(got[:, [0, 2]], tracers[:, [0, 2]]), s.name
    moved = np.floor(np.stack([species_rows(x, sim.cfg.particles[0], "position")[:, 1] for x in (state, end)])
                     / (BOX[0] / 4))
    assert np.any(moved[0] != moved[1])  # some crossed a quarter of x: a 4-device block


def test_the_drag_converges_at_the_schemes_order(start_file):
    """A drop released at rest: v_x - U sin(k y0)(1 - exp(-t/tau_p)) (gravity's part included) falls 16-fold when dt
    halves (RK4; a wrong sign of the drag makes v run away instead)."""
    sim = kolmogorov(("single", 1, None), start_file)
    state = steady(sim)
    speed = U * np.sin(K * START[:, 1])
    errors = []
    for dt in (0.04, 0.02):
        t = 0.4
        end = sim.advance(state, int(round(t / dt)), dt)
        v = np.asarray(end[velocity_key("drops")])[:, 1]
        errors.append(np.max(np.abs(v - (speed + GX * TAU) * (1 - math.exp(-t / TAU)))))
    assert errors[1] > 0 and np.log2(errors[0] / errors[1]) > 3.8, errors


@pytest.mark.parametrize("case", [c for c in CASES if c[1] > 1], ids=case_id)
def test_a_distributed_plane_carries_its_particles_as_one_device_does(case, start_file):
    """From a random vorticity (a nonlinear flow), 20 RK4 steps: every species' positions and velocities on 2 and 4
    devices equal one device's to 1e-12 (relative)."""
    rng = np.random.default_rng(7)
    kx, ky = np.meshgrid(np.arange(SHAPE[0]) * 2 * np.pi / SHAPE[0], np.arange(SHAPE[1]) * 2 * np.pi / SHAPE[1],
                         indexing="ij")
    omega = sum(rng.normal() * np.cos(a * kx + b * ky + rng.uniform(0, 6)) for a in range(1, 4) for b in range(-3, 4))
    ends = []
    for c in (("single", 1, None), case):
        sim = kolmogorov(c, start_file)
        ends.append((sim, sim.advance(sim.state_from_fields(vorticity=omega[None]), 20, 0.01)))
    (ref_sim, ref), (sim, out) = ends
    for s in sim.cfg.particles:
        for quantity in ("position", "velocity") if s.inertial else ("position",):
            want = species_rows(ref, s, quantity)
            assert relative_error(species_rows(out, s, quantity), want) < 1e-12, (s.name, quantity)
            assert not np.any(want[:, 0]), s.name  # never off the plane


#: the planar equations with a velocity, periodic (particles are refused between plates: tests/test_convection.py)
FLOWS = sorted(n for n, i in registry().items()
               if i.dimensions == 2 and "velocity" in i.fields and i.walls != "required")


@pytest.mark.parametrize("physics", FLOWS)
def test_every_planar_flow_carries_tracers_at_its_velocity(physics, tmp_path):
    """On grid nodes, a tracer's velocity, as the outputs take it (x, y, 0), is the flow's velocity field (u, v, 0)
    there, by the spectral sum and the Lagrange window alike."""
    nodes = np.array([[0, 0], [1, 2], [7, 4], [2, 6]])
    path = tmp_path / "start.npy"
    np.save(path, nodes * (2 * np.pi / 8))
    placed = {"count": len(nodes), "placement": "file", "path": str(path)}
    sim = simulation(jax.devices(), physics={"name": physics}, grid__shape=[8, 8], initial={"name": "random"},
                     particles=[{"name": "exact", **placed}, {"name": "local", "interpolation": "lagrange4", **placed}])
    state = sim.initial_state()
    arrays = jax.jit(lambda eq, s, p: (eq.fields(s, p)["velocity"], eq.particles(s, p)))(sim.equation, state,
                                                                                       sim.params)
    u = np.asarray(arrays[0])
    expected = np.stack([u[:, 0, i, j] for i, j in nodes])
    assert u.shape == (3, 1, 8, 8) and np.max(np.abs(expected[:, :2])) > 0.1
    for name, p in arrays[1].items():
        assert np.max(np.abs(np.asarray(p.velocity) - expected)) < 1e-13 * np.max(np.abs(u)), name
        assert np.array_equal(np.asarray(p.position), np.column_stack([nodes * (2 * np.pi / 8), np.zeros(4)])), name


# ---- a planar run's files, restart and bad input --------------------------------------------------------------


def _config(path, **values):
    species = [{"name": "tracers", "count": len(START), "placement": "file", "path": str(path)},
               {"name": "owned", "count": len(START), "placement": "file", "path": str(path),
                "interpolation": "lagrange4", **OWNED},
               {"name": "drops", "count": 16, "placement": "lattice", "tau_p": 0.05, "gravity": [0.0, -1.0]}]
    base = {"physics.name": "ns2d", "grid.shape": SHAPE, "grid.box": BOX, "precision": "float64",
            "initial.name": "random", "physics.forcing": "random", "physics.forcing_wavenumber": 3, "time.dt": 0.01,
            "time.t_end": 0.2, "output.chunk": 5, "checkpoint.every": 10, "output.snapshots.every": 20,
            "output.trajectories.every": 5, "runtime.cpu_devices": 8, "fft.mesh": [2], "particles": species}
    return simulator.load_config(None, {**base, **values})


@pytest.fixture(scope="module")
def straight(tmp_path_factory, start_file):
    """A forced planar run with particles, 20 steps on a slab of 2, uninterrupted, with a checkpoint at step 10."""
    run = tmp_path_factory.mktemp("plane-particles-run") / "straight"
    assert simulator.run_config(_config(start_file), run) == 0
    return run


def test_a_planar_run_writes_its_particles_in_x_y_0(straight):
    """The snapshots, trajectories and their netCDF export hold (x, y, 0) in the plane's x and y (the placed (x, y)
    at t = 0; a square lattice of 4 x 4 at cell centres); its Lagrangian statistics go without the references of 3D
    turbulence; its slice figure draws every particle at its x and y over the plane's image."""
    import h5netcdf

    from simulator.results.export import export_netcdf

    run = simulator.load_run(straight)
    for name in ("tracers", "owned"):
        p = run.particles[name]
        assert np.array_equal(p.position[0], np.concatenate([START, np.zeros((len(START), 1))], axis=1)), name
        assert p.position.shape[1:] == (len(START), 3) and not np.any(p.position[:, :, 2]), name
        assert np.all(p.position[-1, :, :2] < BOX) and not np.any(run.trajectories[name].v[:, :, 2]), name
    centres = (np.arange(4) + 0.5) / 4
    lattice = np.stack(np.meshgrid(centres * BOX[0], centres * BOX[1], indexing="ij"), axis=-1).reshape(-1, 2)
    assert np.allclose(run.particles["drops"].position[0, :, :2], lattice, rtol=0, atol=1e-14)
    with h5netcdf.File(export_netcdf(straight), "r") as f:
        assert np.array_equal(f["particles/tracers/position"][-1], run.particles["tracers"].position[-1])
    stats = run.lagrangian()["tracers"]
    assert stats.richardson() is None and stats.k41() is None and np.all(np.isfinite(stats.dispersion))
    assert stats.dispersion[-1] > 0 and np.array_equal(lagrangian.box_of(run.config), [*BOX, max(BOX)])
    figure = run.plot.slice()
    dots = np.concatenate([c.get_offsets() for c in figure.axes[0].collections if len(c.get_offsets())])
    final = np.concatenate([run.particles[name].position[-1, :, :2] for name in ("tracers", "owned", "drops")])
    cell = np.array(BOX) / SHAPE
    assert np.allclose(np.sort(dots, axis=0), np.sort((final + cell / 2) % BOX - cell / 2, axis=0), rtol=0, atol=1e-12)


@pytest.mark.parametrize("values", [{}, {"fft.mesh": [4]}], ids=["same", "slab-4"])
def test_a_planar_restart_with_particles_ends_where_the_straight_run_ends(straight, tmp_path, start_file, values):
    """From the step-10 checkpoint, every species' positions and velocities at step 20: on the same devices bitwise,
    on 4 (the owned species laid out anew by identity) to 1e-12."""
    restarted = tmp_path / "restarted"
    shutil.copytree(straight, restarted)
    for path in [*(restarted / "particles").glob("s00000020*"), *(restarted / "snapshots").glob("s00000020*")]:
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    ckpt = restarted / "checkpoints" / "c00000010.json"
    assert simulator.run_config(_config(start_file, **values), restarted, restart=str(ckpt)) == 0
    run, again = simulator.load_run(straight), simulator.load_run(restarted)
    for name in ("tracers", "owned", "drops"):
        for quantity in ("unwrapped", "velocity"):
            got, want = (getattr(r.particles[name], quantity)[-1] for r in (again, run))
            assert got.shape == want.shape == (len(want), 3) and not np.any(want[:, 2]), (name, quantity)
            if not values:
                assert np.array_equal(got, want), (name, quantity)
            assert relative_error(got, want) < 1e-12, (name, quantity)


BAD = [
    (["particles=[{name: t, count: 8, placement: lattice}]"], r"^error: particles\[0\]\.count = 8 is not a square"),
    (["particles=[{name: t, count: 8, tau_p: 0.1, gravity: [0, -1, 2]}]"],
     r"^error: particles\[0\]\.gravity = \[0\.0, -1\.0, 2\.0\] points out of the plane; two entries \(gx, gy\)"),
    (["particles=[{name: t, count: 8, interpolation: exact, distribution: owned}]"],
     r"^error: particles\[0\]\.interpolation = 'exact' is not available for owned"),
    # a box's gravity keeps its three entries
    (["physics.name=navier_stokes", "grid.shape=[16, 16, 16]",
      "particles=[{name: t, count: 8, tau_p: 0.1, gravity: [0, -1]}]"],
     r"^error: particles\[0\]\.gravity = \[0\.0, -1\.0\] has two entries; three entries \(gx, gy, gz\) in a box"),
    # the slab splits the plane's x: 8 cells over 4 devices hold 2 planes each, the window and its halo need 3
    (["particles=[{name: t, count: 64, interpolation: lagrange4, distribution: owned}]", "grid.shape=[8, 8]",
      "runtime.cpu_devices=4", "fft.mesh=[4]"],
     r"^error: particles\[0\]\.halo = 1 is not available; needs >= 3 grid planes per device along x "
     r"\(grid\.shape \[8, 8\] over 4 devices\)"),
]


@pytest.mark.parametrize(("values", "pattern"), BAD,
                         ids=["lattice", "gravity", "owned-exact", "box-gravity", "owned-planes"])
def test_bad_planar_particles_are_one_line_exit_2_and_nothing_written(tmp_path, capfd, values, pattern):
    config = tmp_path / "plane.yaml"
    config.write_text("physics: {name: ns2d}\ngrid: {shape: [32, 32]}\n")
    sets = [arg for value in values for arg in ("--set", value)]
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "run"), *sets)
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.match(pattern, err.strip()), err
    assert not (tmp_path / "run").exists()


def test_a_planar_position_file_with_a_z_off_the_plane_is_refused(tmp_path, capfd):
    path = tmp_path / "start.npy"
    np.save(path, np.concatenate([START, np.full((len(START), 1), 0.5)], axis=1))
    config = tmp_path / "plane.yaml"
    config.write_text("physics: {name: ns2d}\ngrid: {shape: [32, 32]}\n")
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "run"), "--set",
                             f"particles=[{{name: t, count: {len(START)}, placement: file, path: {path}}}]")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert re.match(r"^error: particles\[0\]\.path = .* holds a z other than 0", err.strip()), err
    assert not (tmp_path / "run").exists()
