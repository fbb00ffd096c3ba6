"""Rayleigh-Benard convection between no-slip plates (simulator.equations.convection2d_noslip), in float64 against
the dense eigen-solver (simulator.walls.eigen), on the single backend and slabs of 2 and 4 devices."""

from __future__ import annotations

import math
import re
import shutil
from pathlib import Path

import h5py
import numpy as np
import pytest
import yaml

import simulator
from simulator.fft.bases import Chebyshev
from simulator.output.hdf5 import Snapshot
from simulator.walls import eigen

from support import advance, case_id, command, simulation

CASES = [("single", 1, None), ("slab", 2, None), ("slab", 4, None)]
RA_C, K_C = eigen.rayleigh_benard_onset()
#: a box one critical wavelength wide: the mode m_x = 1 is the onset's
LX = 2 * math.pi / K_C


def convection(devices, case=("single", 1, None), shape=(8, 16), **overrides):
    values = {"physics__name": "convection2d_noslip", "grid__shape": list(shape), "grid__box": [LX, 1.0], **overrides}
    return simulation(devices, case, **values)


def grid_fields(sim, state) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in sim.fields(state, "velocity", "theta", "temperature").items()}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_conductive_state_between_no_slip_plates_is_steady(devices, case):
    """No noise: no flow, the temperature 1 - z at the Gauss-Lobatto heights, Nu = 1 at both plates and through
    the volume, after 10 steps."""
    sim = convection(devices, case, initial__name="conductive", initial__amplitude=0.0)
    state = advance(sim, sim.initial_state(), 0.05, 10)
    fields = grid_fields(sim, state)
    assert np.max(np.abs(fields["velocity"])) == 0.0 and np.max(np.abs(fields["theta"])) == 0.0
    z = Chebyshev(16, 1.0).points()
    np.testing.assert_allclose(fields["temperature"][0], np.broadcast_to(1 - z, (8, 16)), rtol=0, atol=1e-15)
    report = sim.diagnostics(state, 0.05)
    for key in ("nusselt", "nusselt_bottom", "nusselt_top"):
        assert float(report[key]) == pytest.approx(1.0, abs=1e-14)


def measured_rate(devices, rayleigh: float, dt: float, steps: int, case=("single", 1, None)) -> tuple[float, float]:
    """The growth rate of the eigen-solver's mode m_x = 1 from amplitude 1e-8 (the kinetic energy's, halved), and
    the largest divergence and plate velocity over the run's chunks of one step."""
    sim = convection(devices, case, initial__name="mode", initial__amplitude=1e-8, physics__rayleigh=rayleigh)
    state = sim.initial_state()
    before = float(sim.diagnostics(state, dt)["kinetic_energy"])
    worst = 0.0
    for _ in range(steps):
        state = advance(sim, state, dt, 1)
        velocity = grid_fields(sim, state)["velocity"]
        plates = np.abs(velocity[..., [0, -1]]).max() / np.abs(velocity).max()
        worst = max(worst, plates, float(sim.diagnostics(state, dt)["divergence"]) / np.abs(velocity).max())
    after = float(sim.diagnostics(state, dt)["kinetic_energy"])
    return math.log(after / before) / (2 * dt * steps), worst


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_small_mode_grows_at_the_eigen_solvers_rate_divergence_free_and_no_slip(devices, case):
    """The eigen-solver's mode at (Ra, k) = (2000, k_c) grows at its rate to the scheme's O(dt^2) (2e-4 relative at
    dt = 0.05 over t = 1), the velocity's divergence and its values at the plates round-off after every step."""
    rate, worst = measured_rate(devices, 2000.0, 0.05, 20, case)
    assert rate == pytest.approx(eigen.rayleigh_benard_growth(2000.0, 1.0, K_C)[0], rel=2e-4)
    assert worst < 1e-13


def test_the_onset_between_no_slip_plates_is_the_eigen_solvers(devices):
    """The measured growth rate at k_c changes sign between Ra_c (1 -+ 1e-4), Ra_c = 1707.76 the eigen-solver's,
    and the zero of its line through them is Ra_c to 1e-6."""
    below, above = RA_C * (1 - 1e-4), RA_C * (1 + 1e-4)
    (rate_below, _), (rate_above, _) = (measured_rate(devices, ra, 0.1, 10) for ra in (below, above))
    assert rate_below < 0 < rate_above
    onset = below - rate_below * (above - below) / (rate_above - rate_below)
    assert onset == pytest.approx(RA_C, rel=1e-6)
    assert RA_C == pytest.approx(1707.762, abs=1e-3)



def test_a_steady_no_slip_roll_carries_the_same_heat_through_each_plate_and_the_volume(devices):
    """At Ra = 3000 the onset's mode grows into one steady roll (16 x 16, t = 150): Nu through the bottom and the
    top plate are equal (the roll's symmetry) and equal Nu through the volume to the resolution's truncation
    (3.1e-5 at 16 points across), and both dissipations meet their relations to Nu, (Nu - 1)/sqrt(Ra Pr) and
    Nu/sqrt(Ra Pr), to it."""
    sim = convection(devices, shape=(16, 16), initial__name="mode", initial__amplitude=0.1, physics__rayleigh=3000.0)
    state = advance(sim, sim.initial_state(), 0.1, 1500)
    report = {k: float(v) for k, v in sim.diagnostics(state, 0.1).items()}
    nusselt, root = report["nusselt"], math.sqrt(3000.0)
    assert report["nusselt_bottom"] == pytest.approx(report["nusselt_top"], rel=1e-12)
    assert report["nusselt_bottom"] == pytest.approx(nusselt, rel=5e-5)
    assert report["kinetic_dissipation"] == pytest.approx((nusselt - 1) / root, rel=5e-5)
    assert report["thermal_dissipation"] == pytest.approx(nusselt / root, rel=5e-5)

@pytest.mark.parametrize("case", CASES[1:], ids=case_id)
def test_a_distributed_no_slip_run_equals_the_single_device_one(devices, case):
    """Noise at Ra = 1e5 for 20 steps: slabs of 2 and 4 devices end where one device ends, to 1e-12."""
    values = {"initial__name": "conductive", "initial__amplitude": 0.1, "physics__rayleigh": 1e5}
    single = convection(devices, **values)
    want = grid_fields(single, advance(single, single.initial_state(), 0.01, 20))
    sim = convection(devices, case, **values)
    got = grid_fields(sim, advance(sim, sim.initial_state(), 0.01, 20))
    for name in ("velocity", "theta"):
        assert np.abs(got[name] - want[name]).max() < 1e-12 * np.abs(want[name]).max()


def test_moving_plates_hold_the_couette_flow_and_drive_it_from_rest(devices):
    """Plates moving at U0 = -0.5 and U1 = 1 (physics.plate_velocity): the conductive state, their Couette flow
    U0 + (U1 - U0) z with b = 1 - z, stays steady to round-off (no w, Nu = 1); started from rest, the flow reaches
    it (the implicit solves hold the plates' velocities) to 1e-12."""
    sim = convection(devices, ("slab", 2, None), initial__name="conductive", initial__amplitude=0.0,
                     physics__rayleigh=1e3, physics__plate_velocity=[-0.5, 1.0])
    z = Chebyshev(16, 1.0).points()
    want = np.broadcast_to(-0.5 + 1.5 * z, (1, 8, 16))
    state = advance(sim, sim.initial_state(), 0.05, 10)
    fields = grid_fields(sim, state)
    assert np.max(np.abs(fields["velocity"][0] - want)) < 1e-14 and np.max(np.abs(fields["velocity"][1])) < 1e-14
    assert np.max(np.abs(fields["temperature"] - (1 - z))) < 1e-14
    rest = sim.state_from_fields(velocity=np.zeros((3, 1, 8, 16)), theta=np.zeros((1, 8, 16)))
    fields = grid_fields(sim, advance(sim, rest, 1.0, 150))
    assert np.max(np.abs(fields["velocity"][0] - want)) < 1e-12 and np.max(np.abs(fields["velocity"][1])) < 1e-14


CONFIG = {"physics.name": "convection2d_noslip", "physics.rayleigh": 1e4, "grid.shape": [8, 16],
          "grid.box": [LX, 1.0], "precision": "float64", "initial.name": "conductive", "initial.amplitude": 0.1,
          "time.dt": 0.01, "time.t_end": 0.2, "output.chunk": 5, "checkpoint.every": 10,
          "output.snapshots.every": 20, "runtime.cpu_devices": 8, "fft.mesh": [2]}


def test_a_no_slip_restart_ends_bitwise_where_the_straight_run_ends(tmp_path):
    """From the step-10 checkpoint of a run on a slab of 2, restarted there: its step-20 snapshot is the straight
    run's, bit for bit, and the snapshot's heights are the Gauss-Lobatto points."""
    straight = tmp_path / "straight"
    assert simulator.run_config(simulator.load_config(None, CONFIG), straight) == 0
    run = tmp_path / "run"
    shutil.copytree(straight, run)
    for path in (run / "snapshots").glob("s00000020*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    restart = str(run / "checkpoints" / "c00000010.json")
    assert simulator.run_config(simulator.load_config(None, CONFIG), run, restart=restart) == 0
    with Snapshot(run / "snapshots" / "s00000020.h5") as got, Snapshot(straight / "snapshots" / "s00000020.h5") \
            as want:
        for name in ("theta", "velocity"):
            assert np.array_equal(got.read(name), want.read(name))


def test_a_no_slip_run_restarts_on_another_grid_and_device_count_by_its_chebyshev_series(devices, tmp_path, capfd):
    """A run on 8 x 16 over a slab of 2, restarted from its checkpoint onto 16 x 24 over a slab of 4: the state there,
    at every second x (the points the grids share), is the stored state's interpolating polynomial through its 16
    Gauss-Lobatto heights (numpy's Chebyshev fit) at the 24 new heights, to round-off; the restart runs on with
    no flow at the plates."""
    straight = tmp_path / "straight"
    assert simulator.run_config(simulator.load_config(None, {**CONFIG, "time.t_end": 0.1}), straight) == 0
    ckpt = str(straight / "checkpoints" / "c00000010.json")
    config = tmp_path / "rb.yaml"
    config.write_text((straight / "config.yaml").read_text())
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "finer"), "--restart", ckpt,
                             "--set", "grid.shape=[16,24]", "--set", "fft.mesh=[4]", "--set", "time.t_end=0.2")
    assert code == 0, err
    coarse = simulator.Simulation(simulator.load_config(None, CONFIG), devices[:2])
    stored = grid_fields(coarse, coarse.state_from_file(ckpt))
    finer = simulator.Simulation(simulator.load_config(None, {**CONFIG, "grid.shape": [16, 24], "fft.mesh": [4]}),
                                 devices[:4])
    remapped = grid_fields(finer, finer.state_from_file(ckpt))
    z16, z24 = (2 * Chebyshev(n, 1.0).points() - 1 for n in (16, 24))
    for name in ("velocity", "theta"):
        values = stored[name].reshape(-1, 16)
        want = np.polynomial.chebyshev.chebval(z24, np.polynomial.chebyshev.chebfit(z16, values.T, 15))
        got = remapped[name][..., ::2, :].reshape(-1, 24)
        assert np.max(np.abs(got - want)) < 1e-13 * np.max(np.abs(values))
    with Snapshot(tmp_path / "finer" / "snapshots" / "s00000020.h5") as snap:
        velocity = snap.read("velocity")
    assert velocity.shape == (3, 1, 16, 24) and np.max(np.abs(velocity[..., [0, -1]])) < 1e-13


def test_export_and_the_slice_place_the_gauss_lobatto_heights(tmp_path, capfd):
    """A no-slip run's netCDF export holds the Gauss-Lobatto heights as its coordinate across the plates (it held
    uniform points from 0), and its slice figure draws each row of pixels around its own height, from plate to
    plate (it drew a uniform grid)."""
    run = tmp_path / "run"
    values = {**CONFIG, "time.t_end": 0.1, "output.snapshots.every": 10}
    assert simulator.run_config(simulator.load_config(None, values), run) == 0
    code, out, err = command(capfd, "export", str(run))
    assert code == 0, err
    heights = Chebyshev(16, 1.0).points()
    with h5py.File(run / "export" / "run.nc") as nc:
        np.testing.assert_allclose(nc["z"][...], heights, rtol=0, atol=1e-15)
        np.testing.assert_allclose(nc["x"][...], np.arange(8) * LX / 8, rtol=0, atol=1e-15)
    fig = simulator.load_run(run).plot.slice("temperature")
    mesh = fig.axes[0].collections[0]
    rows = mesh.get_coordinates()[:, 0, 1]
    np.testing.assert_allclose(rows, np.concatenate([[0.0], (heights[1:] + heights[:-1]) / 2, [1.0]]), atol=1e-15)


def test_a_sweep_of_moving_plates_is_one_ensemble_job_and_a_bad_point_refuses_it(tmp_path, monkeypatch, capfd):
    """A sweep of the shipped no-slip config over the top plate's velocity and the Rayleigh number, as an ensemble:
    every point validated (plates and all), the points of one plate velocity one group, and `--submit --dry-run` the
    array job of the shipped Slurm template; a point whose plates move with the linear mode as its start refuses
    the sweep in one line, nothing written."""
    shipped = Path(simulator.__file__).parents[1] / "configs" / "convection_2d_noslip.yaml"
    body = {"name": "plates", "base": str(shipped), "set": {"grid.shape": [8, 16]}, "ensemble": True,
            "grid": {"physics.rayleigh": [1e4, 2e4]}}
    monkeypatch.chdir(tmp_path)
    # the plates' velocity is structure (the stage solves are built for it): one group per velocity
    for i, (velocities, group) in enumerate((([[0.0, 0.5]], "1 group(s)"), ([[0.0, 0.0], [0.0, 0.5]], "2 group(s)"))):
        sweep = {**body, "grid": {**body["grid"], "physics.plate_velocity": velocities}}
        (tmp_path / "s.yaml").write_text(yaml.safe_dump(sweep))
        code, out, err = command(capfd, "sweep", "s.yaml", "--out", f"sw{i}", "--submit", "--dry-run")
        assert code == 0, err
        lines = out.splitlines()
        assert f"ensemble: {group} of the same structure" in out and lines[-1].startswith("sbatch --parsable")
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({**body, "set": {**body["set"], "initial.name": "mode",
                                                                      "physics.plate_velocity": [0.0, 1.0]}}))
    code, out, err = command(capfd, "sweep", "s.yaml", "--out", "bad", "--submit", "--dry-run")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "is not available with moving plates" in err, err
    assert not (tmp_path / "bad").exists()


def test_sbdf2_runs_the_shipped_config_and_resumes_an_rk222_checkpoint_from_the_command_line(tmp_path, capfd):
    """``simulator run configs/convection_2d_noslip.yaml --set time.integrator=sbdf2`` at 16 x 16 on 2 devices runs to
    t = 0.5 under its CFL-controlled dt, exit 0, its last checkpoint holding SBDF2's history (the step before's dt and
    M X); the checkpoint of the shipped RK222, which holds no history, resumed by SBDF2: exit 0, the resume line naming
    the new integrator, the state from the checkpoint's fields and the history started anew (SBDF1 first)."""
    shipped = str(Path(simulator.__file__).parents[1] / "configs" / "convection_2d_noslip.yaml")
    small = ["--set", "grid.shape=[16,16]", "--set", "fft.mesh=[2]", "--set", "output.profiles.dt=0.5"]
    code, _, err = command(capfd, "run", shipped, "--out", str(tmp_path / "sbdf2"), *small, "--set",
                           "time.integrator=sbdf2", "--set", "time.t_end=0.5")
    assert code == 0, err
    with h5py.File(tmp_path / "sbdf2" / "checkpoints" / "c00000004.h5") as f:
        assert f["history.dt"][()].tolist() == [0.125] and np.abs(f["history.mass.w"][()]).max() > 0
    code, _, err = command(capfd, "run", shipped, "--out", str(tmp_path / "rk222"), *small, "--set", "time.t_end=0.25")
    assert code == 0, err
    code, _, err = command(capfd, "run", shipped, "--out", str(tmp_path / "resumed"), *small, "--set",
                           "time.integrator=sbdf2", "--set", "time.t_end=0.5", "--restart",
                           str(tmp_path / "rk222" / "checkpoints" / "c00000002.json"))
    assert code == 0 and "resumed from" in err and "time.integrator now sbdf2" in err, err
    with h5py.File(tmp_path / "resumed" / "checkpoints" / "c00000004.h5") as f:
        assert f["history.dt"][()].tolist() == [0.125]


BAD = [
    ({"grid.walls.velocity": "[free-slip,free-slip]"}, r"^error: grid\.walls\.velocity = \['free-slip', 'free-slip'\] "
     r"has no no-slip plate; a no-slip plate at least for physics\.name = convection2d_noslip \(the Chebyshev "
     r"basis\), or grid\.walls\.basis: chebyshev; free-slip plates on sine and cosine series: "
     r"physics\.name convection2d"),
    ({"grid.walls.velocity": "[no-slip,sticky]"}, r"^error: grid\.walls\.velocity = .* has 'sticky' at the top plate"),
    ({"grid.walls.axis": "null"}, r"^error: grid\.walls\.axis = null leaves the grid periodic"),
    # mixed plates ran as fixed flux at both, silently; they run now (tests/test_mixed_plates.py), but a scalar takes
    # one condition at both plates
    ({"grid.walls.temperature": "[fixed-flux,fixed-value]", "physics.scalars": "[{diffusivity: 0.01}]"},
     r"^error: physics\.scalars = 1 cannot follow mixed plates yet"),
    # a free-slip plate has no velocity of its own to drag the fluid with
    ({"grid.walls.velocity": "[no-slip,free-slip]", "physics.plate_velocity": "[0,1]"},
     r"^error: physics\.plate_velocity = \[0\.0, 1\.0\] moves a free-slip plate; 0 at the top plate"),
    # three points across ended in a traceback from the compiled step
    ({"grid.shape": "[8,3]"}, r"^error: grid\.shape = \[8, 3\] has too few points across the plates; at least 4 "),
    ({"physics.rayleigh": "0"}, r"^error: physics\.rayleigh = 0"),
    ({"fft.backend": "pencil"}, r"^error: fft\.backend = 'pencil' does not take a plane"),
    ({"time.integrator": "rk4"}, r"^error: time\.integrator = 'rk4' is not available"),
    ({"initial.name": "mode", "initial.modes": "[3]"}, r"^error: initial\.modes = \[3\] is out of range"),
    ({"initial.name": "mode", "physics.plate_velocity": "[0,1]"}, r"^error: initial\.name = 'mode' is not available "
     r"with moving plates; conductive, or file"),
    ({"physics.plate_velocity": "[1]"}, r"^error: physics\.plate_velocity = \[1"),
]


@pytest.mark.parametrize(("values", "pattern"), BAD, ids=[" ".join(v) for v, _ in BAD])
def test_bad_no_slip_input_is_one_line_exit_2_and_nothing_written(tmp_path, capfd, values, pattern):
    config = tmp_path / "rb.yaml"
    config.write_text("physics: {name: convection2d_noslip}\ngrid: {shape: [8, 8], box: [2, 1]}\n")
    args = [a for key, value in values.items() for a in ("--set", f"{key}={value}")]
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "run"), *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.match(pattern, err.strip()), err
    assert not (tmp_path / "run").exists()


def test_the_shipped_example_steps_as_dedalus_example_does(capfd, tmp_path):
    """configs/convection_2d_noslip.yaml takes Dedalus' time step (issue 102): its CFL number 0.5 holds dt, at most
    the example's max_timestep 0.125; a cap of 0.005 held the run at CFL 0.29 in 2.7 times Dedalus' steps. From
    the conductive start, at rest, every step is the cap: 8 steps to t = 1."""
    shipped = Path(simulator.__file__).parents[1] / "configs" / "convection_2d_noslip.yaml"
    code, _, err = command(capfd, "run", str(shipped), "--out", str(tmp_path / "run"), "--set", "grid.shape=[16, 8]",
                           "--set", "time.t_end=1", "--set", "output.chunk=4", "--set", "output.snapshots.dt=1",
                           "--set", "output.profiles.dt=1", "--set", "output.spectra.dt=1")
    assert code == 0, err
    run = simulator.load_run(tmp_path / "run")
    assert run.config.time.cfl == 0.5 and run.config.time.dt == 0.125
    series = run.timeseries
    assert list(series["dt"]) == [0.125] * len(series["dt"]) and series["time"][-1] == 1.0
    assert max(series["cfl"]) < 0.5
