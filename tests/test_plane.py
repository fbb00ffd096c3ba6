"""The plane: two-dimensional runs (``grid.shape: [Nx, Ny]``) of the planar Navier-Stokes equation ``ns2d``
against exact solutions, on every backend that takes a plane, on 1, 2 and 4 devices, in float64."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simulator
from simulator.equations import registry
from simulator.output.hdf5 import Snapshot

from support import advance, case_id, command, plane_cases, relative_error, simulation

#: every backend that takes a plane, on 1 device and on several (the slab on 2 and 4)
CASES = plane_cases()
assert CASES == [("single", 1, None), ("slab", 1, None), ("slab", 2, None), ("slab", 4, None)]
#: a plane that is not a square, divisible over 4 devices (x) and 4 devices (y/2)
SHAPE, BOX = [16, 32], [2 * math.pi, 4 * math.pi]


def plane(devices, case=("single", 1, None), **overrides):
    values = {"physics.name": "ns2d", "grid.shape": SHAPE, "grid.box": BOX, **overrides}
    return simulation(devices, case, **values)


def vorticity(sim, state) -> np.ndarray:
    return sim.to_numpy(sim.fields(state, "vorticity")["vorticity"])


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_taylor_green_decays_exactly_under_every_linear_term(devices, case):
    """omega = 2 A sin(2 pi x/Lx) sin(2 pi y/Ly) is an eigenfunction of the Laplacian (no nonlinear term): it decays
    as exp(-(nu k^2 + nu_p k^(2p) + nu_m k^(-2m) + alpha) t), each coefficient of its own size, so that the sign of
    each term shows."""
    p = {"viscosity": 0.011, "hyperviscosity": 0.0023, "hypoviscosity": 0.037, "friction": 0.05}
    sim = plane(devices, case, initial__name="taylor_green", physics__hyperviscosity_order=2,
                physics__hypoviscosity_order=1, **{f"physics__{k}": v for k, v in p.items()})
    state = sim.initial_state()
    k2 = (2 * math.pi / BOX[0]) ** 2 + (2 * math.pi / BOX[1]) ** 2
    rate = p["viscosity"] * k2 + p["hyperviscosity"] * k2**2 + p["hypoviscosity"] / k2 + p["friction"]
    dt, steps = 0.01, 20
    end = advance(sim, state, dt, steps)
    expected = vorticity(sim, state) * math.exp(-rate * dt * steps)
    assert relative_error(vorticity(sim, end), expected) < 1e-12
    x = np.arange(SHAPE[0]) * BOX[0] / SHAPE[0]
    y = np.arange(SHAPE[1]) * BOX[1] / SHAPE[1]
    start = 2 * np.sin(2 * np.pi * x / BOX[0])[:, None] * np.sin(2 * np.pi * y / BOX[1])[None, :]
    assert vorticity(sim, state).shape == (1, *SHAPE)
    assert np.max(np.abs(vorticity(sim, state)[0] - start)) < 1e-13


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_kolmogorov_flow_is_steady(devices, case):
    """The Kolmogorov flow omega = -F k_f cos(k_f y)/(nu k_f^2 + alpha) under f_x = F sin(k_f y) stays put: the
    forcing balances viscosity and friction (a wrong sign or size of either moves it)."""
    nu, alpha, amplitude, m = 0.02, 0.1, 0.7, 2
    sim = plane(devices, case, physics__forcing="kolmogorov", physics__viscosity=nu, physics__friction=alpha,
                physics__forcing_amplitude=amplitude, physics__forcing_wavenumber=m)
    k = 2 * math.pi * m / BOX[1]
    y = jnp.arange(SHAPE[1]) * BOX[1] / SHAPE[1]
    omega = jnp.broadcast_to(-amplitude * k * jnp.cos(k * y) / (nu * k**2 + alpha), (1, *SHAPE))
    state = sim.state_from_fields(vorticity=np.asarray(omega))
    end = advance(sim, state, 0.01, 30)
    assert relative_error(vorticity(sim, end), np.asarray(omega)) < 1e-12
    d = sim.diagnostics(end, 0.01)
    # at rest the injection <u . f> equals the dissipation (viscous and friction) to round-off
    assert abs(float(d["injection"]) - float(d["dissipation"])) < 1e-12 * float(d["injection"])


@pytest.fixture(scope="module")
def reference(devices):
    """A nonlinear, forced, viscous run on one device (the reference of the distributed ones)."""
    sim = plane(devices, initial__name="random", physics__forcing="random", physics__viscosity=1e-3,
                physics__forcing_wavenumber=3)
    state = sim.initial_state()
    return sim.to_numpy(sim.fields(advance(sim, state, 0.01, 12), "vorticity")["vorticity"])


@pytest.mark.parametrize("case", CASES[1:], ids=case_id)
def test_a_distributed_plane_equals_the_single_device_one(devices, case, reference):
    sim = plane(devices, case, initial__name="random", physics__forcing="random", physics__viscosity=1e-3,
                physics__forcing_wavenumber=3)
    end = advance(sim, sim.initial_state(), 0.01, 12)
    assert relative_error(vorticity(sim, end), reference) < 1e-12


@pytest.mark.parametrize("case", CASES[::3], ids=case_id)
def test_the_nonlinear_term_is_minus_u_dot_grad_omega(devices, case):
    """The stress form of the advection, against -u . grad omega formed by NumPy from the same state (exact
    spectral derivatives, products on a grid fine enough to hold them whole, then the 2/3 rule): to 1e-12."""
    sim = plane(devices, case, initial__name="random")
    state = sim.initial_state()
    got = sim.to_numpy(jax.jit(lambda eq, s: eq.fft.irfft(eq.products(s)[0]))(sim.equation, state))[0]
    w = np.fft.rfft2(vorticity(sim, state)[0])
    kx = 2 * np.pi / BOX[0] * np.fft.fftfreq(SHAPE[0], 1 / SHAPE[0])[:, None]
    ky = 2 * np.pi / BOX[1] * np.arange(SHAPE[1] // 2 + 1)[None, :]
    k2 = kx**2 + ky**2
    psi = np.where(k2 > 0, w / np.where(k2 > 0, k2, 1), 0)
    fine = [np.fft.irfft2(f, SHAPE) for f in (1j * ky * psi, -1j * kx * psi, 1j * kx * w, 1j * ky * w)]
    advection = np.fft.rfft2(-(fine[0] * fine[2] + fine[1] * fine[3]))
    keep = (np.abs(kx) * BOX[0] / (2 * np.pi) < SHAPE[0] / 3) & (ky * BOX[1] / (2 * np.pi) < SHAPE[1] / 3)
    want = np.fft.irfft2(advection * keep, SHAPE)
    assert np.abs(want).max() > 1 and relative_error(got, want) < 1e-12


def test_inviscid_energy_and_enstrophy_are_conserved_to_the_schemes_order(devices):
    """nu = 0: the 2/3 rule conserves E and Z of the semi-discrete equations exactly, so what changes is RK4's time
    error: halving dt divides it by about 2^4."""
    sim = plane(devices, initial__name="random", physics__viscosity=0.0)
    state = sim.initial_state()
    d0 = sim.diagnostics(state, 0.1)
    drift = []
    for dt, steps in ((0.1, 10), (0.05, 20)):
        d = sim.diagnostics(advance(sim, state, dt, steps), dt)
        drift.append([abs(float(d[q]) / float(d0[q]) - 1) for q in ("energy", "enstrophy")])
    drift = np.array(drift)
    assert np.all(drift[0] < 1e-5) and np.all(drift[0] > 0)
    assert np.all(drift[0] / drift[1] > 10), drift


def test_the_random_kick_injects_exactly_its_energy(devices):
    """Each step's kick adds forcing_power * dt of energy whatever the flow, on the forcing's band alone, and its
    phases change from step to step."""
    sim = plane(devices, initial__name="random", physics__forcing="random", physics__forcing_power=0.3,
                physics__forcing_wavenumber=4)
    eq, p, dt = sim.equation, sim.params, 0.02
    state = sim.initial_state()
    energy = jax.jit(lambda s: 0.5 * eq.ops.mean(jnp.abs(s[0]) ** 2 * eq.ops.inv_k2))
    kick = jax.jit(lambda s, t: eq.settle(s, t, jnp.asarray(dt), p))
    first, second = kick(state, jnp.asarray(0.0)), kick(state, jnp.asarray(dt))
    for kicked in (first, second):
        assert abs(float(energy(kicked) - energy(state)) - 0.3 * dt) < 1e-12
    change = np.asarray(first - state)[0]
    m = np.sqrt(sim.to_numpy(eq.ops.k2)) * BOX[1] / (2 * np.pi)
    assert np.all(np.abs(change[np.abs(np.broadcast_to(m, change.shape) - 4) > 0.5]) == 0)
    assert not np.allclose(np.asarray(first), np.asarray(second))


def test_a_passive_scalar_decays_exactly_in_a_plane(devices):
    """theta = sin(2 pi x/Lx) in a flow at rest decays as exp(-kappa k^2 t)."""
    sim = plane(devices, physics__scalars=[{"diffusivity": 0.03}])
    x = np.arange(SHAPE[0]) * BOX[0] / SHAPE[0]
    theta = np.broadcast_to(np.sin(2 * np.pi * x / BOX[0])[:, None], SHAPE)[None, None]
    state = sim.state_from_fields(vorticity=np.zeros((1, *SHAPE)), scalar=theta)
    end = advance(sim, state, 0.01, 25)
    got = sim.to_numpy(sim.fields(end, "scalar")["scalar"])
    assert relative_error(got, theta * math.exp(-0.03 * (2 * math.pi / BOX[0]) ** 2 * 0.25)) < 1e-12


def test_the_lamb_chaplygin_dipole_travels_along_x_at_its_speed(devices):
    """The dipole is a steady Euler solution moving at U along +x: its centre of |omega| moves about U t (catches the
    sign of the nonlinear term and of the velocity from the stream function). The kink of omega at r = a converges
    at first order only: 0.91 U at 6.4 cells per radius (64^2), 0.95 U at 12.8 (128^2), in float64."""
    sim = plane(devices, initial__name="dipole", physics__viscosity=0.0, grid__shape=[64, 64], grid__box=[20.0, 20.0],
                initial__speed=1.0, initial__radius=2.0)
    state = sim.initial_state()

    def centre(s):
        w = np.abs(vorticity(sim, s)[0])
        x = np.arange(64) * 20.0 / 64
        return float(np.sum(w.sum(axis=1) * x) / w.sum())

    x0 = centre(state)
    x1 = centre(advance(sim, state, 0.02, 100))
    assert 0.88 * 2.0 < x1 - x0 < 2.0, (x0, x1)


# ---- a planar run's restarts, files and bad input ---------------------------------------------------------------


def _config(**values):
    base = {"physics.name": "ns2d", "grid.shape": SHAPE, "grid.box": BOX, "precision": "float64",
            "initial.name": "random", "physics.forcing": "random", "physics.forcing_wavenumber": 3, "time.dt": 0.01,
            "time.t_end": 0.2, "output.chunk": 5, "checkpoint.every": 10, "output.snapshots.every": 20,
            "runtime.cpu_devices": 8, "fft.mesh": [2]}
    return simulator.load_config(None, {**base, **values})


def _vorticity(run) -> np.ndarray:
    with Snapshot(run / "snapshots" / "s00000020.h5") as snap:
        return snap.read("vorticity")


@pytest.fixture(scope="module")
def straight(tmp_path_factory):
    """A forced planar run of 20 steps on a slab of 2, uninterrupted, with a checkpoint at step 10."""
    run = tmp_path_factory.mktemp("plane") / "straight"
    assert simulator.run_config(_config(), run) == 0
    return run


@pytest.mark.parametrize("values", [{}, {"fft.mesh": [4]}, {"fft.backend": "single", "fft.mesh": None}],
                         ids=["same", "slab-4", "single"])
def test_a_planar_restart_ends_where_the_straight_run_ends(straight, tmp_path, values):
    """From the step-10 checkpoint: on the same devices bitwise; on 4 devices or one, to 1e-12 (the random kick's
    phases come from the step's number, so the forcing is the same; its energy is a sum over the devices, and FFTW
    plans by the batch: the next test is bitwise without them)."""
    run = tmp_path / "run"
    shutil.copytree(straight, run)
    for path in (run / "snapshots").glob("s00000020*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    assert simulator.run_config(_config(**values), run, restart=str(run / "checkpoints" / "c00000010.json")) == 0
    got, want = _vorticity(run), _vorticity(straight)
    assert got.shape == (1, *SHAPE)
    if not values:
        assert np.array_equal(got, want)
    assert relative_error(got, want) < 1e-12


def test_an_unforced_planar_restart_on_xlas_fft_is_bitwise_on_any_device_count(tmp_path, monkeypatch):
    """Where nothing sums over the devices in their order (no random kick: its injected energy is such a sum) and
    the transforms are XLA's (FFTW may plan another batch of lines, which the device count sets, otherwise: a 64^2
    plane's 20 steps differ by 5e-16 between 4 devices and one), a plane's
    state does not depend on how many devices hold it: from a checkpoint of a run on 2 devices, restarted on 4
    and on one, it ends bitwise where the straight run ends."""
    monkeypatch.setenv("SIMULATOR_FFT", "xla")
    unforced = {"physics.forcing": "none", "physics.viscosity": 0.01}
    straight = tmp_path / "straight"
    assert simulator.run_config(_config(**unforced), straight) == 0
    for name, values in {"slab-4": {"fft.mesh": [4]}, "single": {"fft.backend": "single", "fft.mesh": None}}.items():
        run = tmp_path / name
        shutil.copytree(straight, run)
        for path in (run / "snapshots").glob("s00000020*"):
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        restart = str(run / "checkpoints" / "c00000010.json")
        assert simulator.run_config(_config(**unforced, **values), run, restart=restart) == 0
        assert np.array_equal(_vorticity(run), _vorticity(straight)), name


def test_a_planar_checkpoint_starts_a_run_on_a_finer_plane(straight, tmp_path, devices):
    """initial.name: file from a planar checkpoint onto a plane twice as fine in each direction: the same modes,
    zero-padded, so the fine field at the coarse grid's points is the coarse field (spectral interpolation)."""
    ckpt = straight / "checkpoints" / "c00000010.json"
    out = tmp_path / "fine"
    cfg = _config(**{"grid.shape": [32, 64], "initial.name": "file", "initial.path": str(ckpt), "time.t_end": 0.01,
                     "output.chunk": 1, "output.snapshots.every": 1, "checkpoint.every": 0})
    assert simulator.run_config(cfg, out) == 0
    with Snapshot(out / "snapshots" / "s00000000.h5") as snap:
        fine = snap.read("vorticity")
    coarse = plane(devices)
    want = vorticity(coarse, coarse.state_from_file(str(ckpt)))
    assert fine.shape == (1, 32, 64) and want.shape == (1, *SHAPE)
    assert relative_error(fine[:, ::2, ::2], want) < 1e-12


BAD = [
    (["--set", "grid.shape=[64,64,1]"], r"^error: grid\.shape = \[64, 64, 1\] has an entry of 1"),
    (["--set", "grid.box=[1,2,3]"], r"^error: grid\.box = \[1\.0, 2\.0, 3\.0\] has three lengths"),
    (["--set", "physics.name=navier_stokes"], r"^error: grid\.shape = \[64, 64\] is a plane; a box for physics\.name"),
    (["--set", "fft.backend=pencil"], r"^error: fft\.backend = 'pencil' does not take a plane"),
    (["--set", "fft.backend=jaxdecomp"], r"^error: fft\.backend = 'jaxdecomp' (does not take a plane|.*not installed)"),
    (["--set", "initial.name=abc"], r"^error: initial\.name = 'abc'"),
    (["--set", "physics.forcing=random", "--set", "physics.forcing_wavenumber=30"],
     r"^error: physics\.forcing_wavenumber = 30 is not resolved"),
    # the plane's own axes, Nx and Ny, not the box (1, Nx, Ny)'s y and z it runs as
    (["--set", "grid.shape=[16,15]"], r"^error: grid\.shape = \[16, 15\] has an odd Ny; Ny must be even"),
    (["--set", "grid.shape=[12,16]", "--set", "runtime.cpu_devices=8"],
     r"^error: grid\.shape = \[12, 16\] does not divide over the mesh; slab on mesh \[8\] needs Nx = 12 divisible"),
    (["--set", "grid.shape=[16,8]", "--set", "runtime.cpu_devices=8"], r"^error: .* needs Ny/2 = 4 divisible by 8"),
    # in the compact layout too, as the plane page says
    (["--set", "grid.shape=[64,36]", "--set", "runtime.cpu_devices=4", "--set", "fft.layout=compact"],
     r"^error: grid\.shape = \[64, 36\] does not divide over the mesh; slab on mesh \[4\] needs Ny/2 = 18 divisible"),
]


@pytest.mark.parametrize(("args", "pattern"), BAD, ids=[" ".join(a[1::2]) for a, _ in BAD])
def test_bad_planar_input_is_one_line_exit_2_and_nothing_written(tmp_path, capfd, args, pattern):
    config = tmp_path / "plane.yaml"
    config.write_text("physics: {name: ns2d}\ngrid: {shape: [64, 64]}\n")
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "run"), *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.match(pattern, err.strip()), err
    assert not (tmp_path / "run").exists()


@pytest.mark.parametrize(("config", "name", "pattern"), [
    ("forced_2d.yaml", "navier_stokes", r"grid\.shape = \[256, 256\] is a plane; a box for physics\.name"),
    ("taylor_green.yaml", "ns2d", r"grid\.shape = \[32, 32, 32\] is a box; a plane for physics\.name = ns2d"),
])
def test_another_dimensions_equation_on_a_shipped_config_is_refused_naming_grid_shape(capfd, config, name, pattern):
    """A box's equation on the plane's shipped config (whose initial section holds a plane's ``energy``), and a
    planar one on a box's, are refused naming ``grid.shape`` as the plane page says, not a key of the other
    equation's sections."""
    path = str(Path(__file__).parents[1] / "configs" / config)
    code, out, err = command(capfd, "validate", path, "--set", f"physics.name={name}")
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.match("^error: " + pattern, err.strip()), err


def test_the_layout_names_the_planes_own_axes(devices):
    """The layout a planar run logs and records (``layout`` in config.yaml, ``simulator info``) names the box's axes
    as the plane's files do, (z, x, y): the slab splits the plane's x in real space and its ky in k-space (the line
    said y and kz, the box's names)."""
    line = simulation(devices, ("slab", 2, None), physics__name="ns2d", grid__shape=[16, 8]).fft.describe()
    found = re.search(r"real \(([\w,]+)\) sharded \(([^)]*)\), k-space \(([\w,]+)\) sharded \(([^)]*)\)", line)
    assert found, line
    pairs = (found.group(1, 2), found.group(3, 4))  # (axis names, their sharding) in real space, then in k-space
    sharded = [names.split(",")[spec.split(", ").index("'slab'")] for names, spec in pairs]
    assert sharded == ["x", "ky"], line


@pytest.mark.parametrize("name", sorted(n for n, info in registry().items() if info.dimensions == 2))
def test_every_planar_equation_writes_snapshots_that_export(name, tmp_path):
    """Each planar equation's snapshots (fields (1, Nx, Ny), vectors (3, 1, Nx, Ny) with their component across the
    plane zero) in the run's netCDF export as a plane: dimensions x, y, vectors their two components in the plane; a
    plane between plates is an x-z plane, its dimensions x, z and its components x, z (no one-cell axis, no zero
    component)."""
    import h5netcdf

    from simulator.results.export import export_netcdf

    cfg = simulator.load_config(None, {"physics.name": name, "grid.shape": [16, 16], "time.dt": 1e-3,
                                       "time.t_end": 2e-3, "output.chunk": 2, "output.snapshots.every": 2})
    assert simulator.run_config(cfg, tmp_path / "run") == 0
    with h5netcdf.File(export_netcdf(tmp_path / "run"), "r") as f:
        vectors = [v for v in f.variables.values() if "component" in v.dimensions and v.name != "/component"]
        cell, across = ("y", "z") if cfg.grid.walls.on else ("z", "y")
        assert vectors and all(v.dimensions == ("time", "component", "x", across) for v in vectors)
        assert all(v.shape[1:] == (2, 16, 16) for v in vectors)
        assert [s.decode() if isinstance(s, bytes) else s for s in f["component"][:]] == ["x", across]
        scalars = [v for v in f.variables.values() if v.dimensions[:1] == ("time",) and len(v.dimensions) > 1
                   and "component" not in v.dimensions]
        assert scalars and all(v.dimensions == ("time", "x", across) for v in scalars) and cell not in f.dimensions
