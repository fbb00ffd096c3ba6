"""Plane Couette and Poiseuille flow between no-slip plates (simulator.equations.channel2d), float64, on the single
backend and slabs of 2 devices: laminar flow steady under every drive, the start-up of Couette flow against its
exact series, the Tollmien-Schlichting wave's growth against the Orr-Sommerfeld eigenvalue, divergence and no-slip
at round-off at every step, the bulk velocity held under a fixed flux, distributed runs equal to one device's,
restarts bitwise and the refusals of bad input."""

from __future__ import annotations

import dataclasses
import math
import re
import shutil
import subprocess
import sys
from pathlib import Path

import jax
import numpy as np
import pytest

import simulator
from simulator.fft.bases import Chebyshev
from simulator.output.hdf5 import Snapshot
from simulator.time.schemes import SCHEMES
from simulator.walls import channel, eigen

from support import advance, case_id, command, simulation

CASES = [("single", 1, None), ("slab", 2, None)]


def channel_run(devices, case=("single", 1, None), shape=(8, 16), **overrides):
    values = {"physics__name": "channel2d", "grid__shape": list(shape), **overrides}
    return simulation(devices, case, **values)


def velocity(sim, state) -> np.ndarray:
    return np.asarray(sim.fields(state, "velocity")["velocity"])


@pytest.mark.parametrize("case", CASES, ids=case_id)
@pytest.mark.parametrize("drive", ["couette", "pressure", "flux"])
def test_laminar_channel_flow_is_steady_to_round_off(devices, case, drive):
    """Couette (U = 1.5) and Poiseuille flow under a fixed pressure gradient or a fixed flux at Re = 100, 10 steps
    from their laminar profiles: u to 1e-14, v zero, the wall stresses and the energy budget's terms the exact
    ones."""
    sim = channel_run(devices, case, physics__drive=drive, physics__reynolds=100.0, physics__plate_velocity=1.5,
                      initial__name="laminar")
    state = advance(sim, sim.initial_state(), 0.05, 10)
    y = Chebyshev(16, 2.0).points() - 1
    profile = channel.couette(y, 1.5) if drive == "couette" else channel.poiseuille(y)
    u = velocity(sim, state)
    assert np.abs(u[0, 0] - profile).max() < 1e-14 and np.abs(u[1]).max() == 0.0
    report = {k: float(v) for k, v in sim.diagnostics(state, 0.05).items()}
    tau = 1.5 / 100 if drive == "couette" else 2 / 100
    assert report["tau_bottom"] == pytest.approx(tau, rel=1e-12)
    assert report["tau_top"] == pytest.approx(-tau if drive == "couette" else tau, rel=1e-12)
    assert report["re_tau"] == pytest.approx(math.sqrt(tau) * 100, rel=1e-12)
    assert report["bulk_velocity"] == pytest.approx(0.0 if drive == "couette" else 2 / 3, abs=1e-14)
    # the energy budget's laminar values: the mean flow's dissipation nu <(dU/dy)^2> is the plates' work nu U^2
    # (Couette) or the pressure gradient's G U_b = 4 nu / 3; no fluctuation (round-off): no production, no dissipation
    work = "wall_work" if drive == "couette" else "pressure_work"
    exact = 1.5**2 / 100 if drive == "couette" else 4 / 300
    assert report["mean_dissipation"] == pytest.approx(exact, rel=1e-12) and report[work] == pytest.approx(exact, 1e-12)
    assert max(abs(report[k]) for k in ("production", "dissipation", "fluctuation_energy")) < 1e-28


@pytest.mark.parametrize(("scheme", "dts"), [("rk222", (0.02, 0.01)), ("rk443", (0.02, 0.01)),
                                             ("sbdf2", (0.01, 0.005))], ids=["rk222", "rk443", "sbdf2"])
def test_the_start_up_of_couette_flow_against_its_exact_series(devices, scheme, dts):
    """Plates set moving from rest at Re = 1 (laminar initial condition at U = 0, then U = 1 through the traced
    parameter): the mean flow at t = 0.5 against channel.couette_startup, the error falling as dt^p when dt halves,
    p the order of ``time.integrator`` (a ratio of 4 for RK222 and 8 for RK443, within 10%; SBDF2, started by SBDF1
    from the impulsive start, reaches its ratio of 4 at half their steps: 4.37 from dt = 0.02, 4.17 from 0.01)."""
    sim = channel_run(devices, shape=(4, 32), physics__drive="couette", physics__reynolds=1.0,
                      physics__plate_velocity=0.0, initial__name="laminar", time__integrator=scheme)
    rest = sim.initial_state()
    params = {**sim.params, "plate_velocity": np.float64(1.0)}
    exact = channel.couette_startup(Chebyshev(32, 2.0).points() - 1, 0.5, 1.0)
    errors = []
    for dt in dts:
        state = advance(sim, rest, dt, round(0.5 / dt), params)
        errors.append(np.abs(velocity(sim, state)[0, 0, 0] - exact).max())
    ratio = 2.0 ** SCHEMES[scheme].order
    assert errors[1] < 2e-5 and 0.9 * ratio < errors[0] / errors[1] < 1.1 * ratio, errors


def test_sbdf2_keeps_its_order_where_dt_changes_between_chunks(devices):
    """The start-up of Couette flow as above by SBDF2, to t = 0.25 in steps of dt and on to t = 0.5 in steps of 0.6 dt:
    the step where dt changes takes the variable-step coefficients (its own solve), and the error still falls by 4
    (within 10%) when dt halves; SBDF2's fixed coefficients there would leave an error of first order."""
    sim = channel_run(devices, shape=(4, 32), physics__drive="couette", physics__reynolds=1.0,
                      physics__plate_velocity=0.0, initial__name="laminar", time__integrator="sbdf2")
    params = {**sim.params, "plate_velocity": np.float64(1.0)}
    exact = channel.couette_startup(Chebyshev(32, 2.0).points() - 1, 0.5, 1.0)
    errors = []
    for dt in (0.01, 0.005):
        half = sim.advance(sim.initial_state(), round(0.25 / dt), dt, 0.0, params)
        assert float(half.history.dt[0]) == dt  # the step before, held in the state
        state = sim.advance(half, round(0.25 / (0.6 * dt)), 0.25 / round(0.25 / (0.6 * dt)), 0.25, params)
        errors.append(np.abs(velocity(sim, state)[0, 0, 0] - exact).max())
    assert errors[1] < 2e-5 and 3.6 < errors[0] / errors[1] < 4.4, errors


def test_sbdf2_ends_alike_in_one_chunk_or_two_its_history_carried_in_the_state(devices):
    """Laminar Poiseuille flow plus noise (0.1) at Re = 2000 under a fixed flux by SBDF2: 20 steps in one chunk end
    bit for bit where 7 and then 13 end (the step before's M X, explicit terms and dt are leaves of the state, the
    chunk's end no restart); the 13 from the same state with its history dropped (the start step SBDF1 again) do
    not."""
    sim = channel_run(devices, physics__drive="flux", physics__reynolds=2000.0, initial__name="laminar",
                      initial__amplitude=0.1, time__integrator="sbdf2")
    start = sim.initial_state()
    assert float(start.history.dt[0]) == 0.0  # none held: the first step is SBDF1
    one = sim.advance(start, 20, 0.01, 0.0)
    part = sim.advance(start, 7, 0.01, 0.0)
    two = sim.advance(part, 13, 0.01, 0.07)
    for got, want in zip(jax.tree.leaves(two), jax.tree.leaves(one), strict=True):
        assert np.array_equal(np.asarray(got), np.asarray(want))
    dropped = sim.advance(sim.equation.carried(dataclasses.replace(part, history=None)), 13, 0.01, 0.07)
    difference = np.abs(velocity(sim, dropped) - velocity(sim, one)).max()
    assert 0.0 < difference < 1e-3 * np.abs(velocity(sim, one)[1]).max(), difference


def test_four_points_across_the_fewest_the_grid_takes_hold_laminar_flow(devices):
    """4 Gauss-Lobatto points, the fewest grid.shape takes between no-slip plates (3 are refused: the Helmholtz
    solves take 4 coefficients), run: Poiseuille flow, a parabola they hold exactly, stays steady to round-off for
    5 steps at Re = 100, its wall stress 2/Re."""
    sim = channel_run(devices, shape=(8, 4), physics__reynolds=100.0, initial__name="laminar")
    state = advance(sim, sim.initial_state(), 0.05, 5)
    u = velocity(sim, state)
    assert np.abs(u[0, 0] - channel.poiseuille(Chebyshev(4, 2.0).points() - 1)).max() < 1e-14
    assert float(sim.diagnostics(state, 0.05)["tau_bottom"]) == pytest.approx(0.02, rel=1e-12)


def _wave_rate(devices, case, drive: str, amplitude: float, reynolds: float, shape, dt: float, steps: int,
               each: int = 1) -> tuple[float, float, list[float], object]:
    """The growth rate of the wave's k_x = 1 mode of v (its Chebyshev norm) from a Tollmien-Schlichting initial
    condition, the largest divergence and slip over the run's chunks of ``each`` steps (over the amplitude), the
    bulk velocity after each chunk, and the simulation."""
    sim = channel_run(devices, case, shape, physics__drive=drive, physics__reynolds=reynolds,
                      initial__name="tollmien_schlichting", initial__amplitude=amplitude)
    start = sim.initial_state()
    state, worst, bulks = start, 0.0, []
    for _ in range(steps // each):
        state = advance(sim, state, dt, each)
        report = sim.diagnostics(state, dt)
        worst = max(worst, float(report["divergence"]), float(report["slip"]))
        bulks.append(float(report["bulk_velocity"]))
    grow = np.linalg.norm(np.asarray(state.w)[0, 1]) / np.linalg.norm(np.asarray(start.w)[0, 1])
    return math.log(grow) / (dt * steps), worst / amplitude, bulks, sim


def test_a_tollmien_schlichting_wave_grows_at_the_orr_sommerfeld_rate(devices):
    """Re = 10^4, alpha = 1, amplitude 10^-5 in the nonlinear run (8 x 64): the wave's growth rate over t = 10
    equals alpha Im c of the eigen-solver (c = 0.23752649 + 0.00373967 i, Orszag 1971) to 1e-5 relative;
    divergence and no-slip at round-off after every step."""
    rate, worst, _, _ = _wave_rate(devices, CASES[0], "pressure", 1e-5, 1e4, (8, 64), 0.02, 500)
    c = eigen.orr_sommerfeld(1e4, 1.0, "poiseuille", channel.TS_DEGREE)[0][0]
    assert c.real == pytest.approx(0.23752649, abs=1e-8) and c.imag == pytest.approx(0.00373967, abs=1e-8)
    assert rate == pytest.approx(c.imag, rel=1e-5)
    assert worst < 1e-10


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_fixed_flux_holds_the_bulk_velocity_exactly(devices, case):
    """A Tollmien-Schlichting wave of finite amplitude (0.05) at Re = 2000 under a fixed flux of 2/3: the bulk
    velocity after every step is the one set, to round-off; divergence and no-slip held."""
    _, worst, bulks, _ = _wave_rate(devices, case, "flux", 0.05, 2000.0, (8, 32), 0.02, 20)
    assert np.abs(np.array(bulks) - 2 / 3).max() < 1e-15
    assert worst < 1e-12


def test_a_distributed_channel_run_equals_the_single_device_one(devices):
    """Laminar Poiseuille flow plus noise (0.1) at Re = 5000 for 20 steps: a slab of 2 devices ends where one
    device ends, to 1e-12."""
    values = {"initial__name": "laminar", "initial__amplitude": 0.1, "physics__reynolds": 5000.0}
    single = channel_run(devices, **values)
    want = velocity(single, advance(single, single.initial_state(), 0.01, 20))
    sim = channel_run(devices, CASES[1], **values)
    got = velocity(sim, advance(sim, sim.initial_state(), 0.01, 20))
    assert np.abs(want[1]).max() > 1e-3
    assert np.abs(got - want).max() < 1e-12 * np.abs(want).max()


CONFIG = {"physics.name": "channel2d", "physics.reynolds": 2000.0, "physics.drive": "flux", "grid.shape": [8, 16],
          "precision": "float64", "initial.name": "laminar", "initial.amplitude": 0.1, "time.dt": 0.01,
          "time.t_end": 0.2, "output.chunk": 5, "checkpoint.every": 10, "output.snapshots.every": 20,
          "runtime.cpu_devices": 8, "fft.mesh": [2]}


@pytest.mark.parametrize("integrator", ["rk222", "sbdf2"])
def test_a_channel_restart_ends_bitwise_where_the_straight_run_ends(tmp_path, integrator):
    """Under a fixed flux, from the step-10 checkpoint of a run on a slab of 2, restarted there: its step-20
    snapshot is the straight run's, bit for bit (the state holds all a step needs: the pressure gradient is found
    again from it; SBDF2's history, the step before's M X, explicit terms and dt, is stored with it)."""
    config = {**CONFIG, "time.integrator": integrator}
    straight = tmp_path / "straight"
    assert simulator.run_config(simulator.load_config(None, config), straight) == 0
    run = tmp_path / "run"
    shutil.copytree(straight, run)
    for path in (run / "snapshots").glob("s00000020*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    restart = str(run / "checkpoints" / "c00000010.json")
    assert simulator.run_config(simulator.load_config(None, config), run, restart=restart) == 0
    with Snapshot(run / "snapshots" / "s00000020.h5") as got, Snapshot(straight / "snapshots" / "s00000020.h5") \
            as want:
        assert np.array_equal(got.read("velocity"), want.read("velocity"))
        assert np.abs(want.read("velocity")[1]).max() > 1e-3



def test_a_channel_restarts_on_a_finer_grid_by_its_chebyshev_series(devices, tmp_path, capfd):
    """A channel under a fixed flux on 8 x 16 over a slab of 2, restarted from its step-10 checkpoint onto 16 x 46 on
    one device, where every second point along x and every third Gauss-Lobatto height are the stored grid's: there the
    remapped velocity is the stored one to round-off, the bulk velocity is the same, divergence and slip are
    round-off, and the restart runs on under the flux; a box under a fixed pressure gradient (its wall-normal
    vorticity remapped too) likewise, 8 x 4 x 16 onto 16 x 8 x 46. A run started from the checkpoint on the finer grid
    (initial.name: file) steps as the restart. Restarted onto a periodic plane: one line, exit 2, nothing written."""
    straight = tmp_path / "straight"
    assert simulator.run_config(simulator.load_config(None, {**CONFIG, "time.t_end": 0.1}), straight) == 0
    ckpt = str(straight / "checkpoints" / "c00000010.json")
    config = tmp_path / "channel.yaml"
    config.write_text((straight / "config.yaml").read_text())
    finer_args = ["--set", "grid.shape=[16,46]", "--set", "fft.backend=single", "--set", "fft.mesh=null"]
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "finer"), "--restart", ckpt,
                             *finer_args, "--set", "time.t_end=0.2")
    assert code == 0, err
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "file"), *finer_args,
                             "--set", "initial.name=file", "--set", f"initial.path={ckpt}",
                             "--set", "time.t_end=0.1", "--set", "output.snapshots.every=10")
    assert code == 0, err
    with Snapshot(tmp_path / "finer" / "snapshots" / "s00000020.h5") as snap, \
            Snapshot(tmp_path / "file" / "snapshots" / "s00000010.h5") as started:
        assert snap.read("velocity").shape == (3, 1, 16, 46)
        assert np.array_equal(started.read("velocity"), snap.read("velocity"))  # initial.name: file, the same state
    assert simulator.load_run(tmp_path / "finer").timeseries["bulk_velocity"][-1] == pytest.approx(2 / 3, abs=1e-14)
    box = {**CONFIG, "physics.name": "channel", "physics.drive": "pressure", "grid.shape": [8, 4, 16],
           "time.t_end": 0.05, "checkpoint.every": 5}
    assert simulator.run_config(simulator.load_config(None, box), tmp_path / "box") == 0
    for values, finer_shape, path in [(CONFIG, [16, 46], ckpt),
                                      (box, [16, 8, 46], str(tmp_path / "box" / "checkpoints" / "c00000005.json"))]:
        coarse = simulator.Simulation(simulator.load_config(None, values), devices[:2])
        stored = coarse.state_from_file(path)
        finer = simulator.Simulation(simulator.load_config(None, {**values, "grid.shape": finer_shape,
                                                                  "fft.backend": "single", "fft.mesh": None}),
                                     devices[:1])
        remapped = finer.state_from_file(path)
        want, got = velocity(coarse, stored), velocity(finer, remapped)
        # the stored points among the finer grid's: every n/m-th along the periodic axes, every third height
        strides = [n // m for n, m in zip(got.shape[:-1], want.shape[:-1], strict=True)] + [3]
        shared = got[tuple(slice(None, None, s) for s in strides)]
        assert np.abs(shared - want).max() < 1e-13 * np.abs(want).max(), finer_shape
        before, after = ({k: float(v) for k, v in sim.diagnostics(s, 0.01).items()}
                         for sim, s in ((coarse, stored), (finer, remapped)))
        assert after["bulk_velocity"] == pytest.approx(before["bulk_velocity"], abs=1e-14)
        assert after["tau_bottom"] == pytest.approx(before["tau_bottom"], rel=1e-12)
        assert after["divergence"] < 1e-12 and after["slip"] < 1e-13  # round-off of |u| ~ 1
        assert np.abs(want[1:]).max() > 1e-3  # a flow besides the streamwise one, not laminar flow alone
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "periodic"), "--restart", ckpt,
                             "--set", "grid.walls.axis=null")
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.match(r"^error: grid\.walls\.axis = null", err), err
    assert not (tmp_path / "periodic").exists()

BAD = [
    ({"grid.walls.velocity": "[free-slip,free-slip]"}, r"^error: grid\.walls\.velocity = \['free-slip', 'free-slip'\] "
     r"is not available for this equation; no-slip plates for physics\.name = channel2d"),
    ({"physics.reynolds": "0"}, r"^error: physics\.reynolds = 0\.0 is out of range; a number > 0"),
    ({"physics.reynolds": "-5"}, r"^error: physics\.reynolds = -5\.0 is out of range"),
    ({"physics.drive": "flux", "physics.flux": "0"}, r"^error: physics\.flux = 0\.0 is out of range; a bulk velocity"),
    ({"physics.drive": "gravity"}, r"^error: physics\.drive = 'gravity'"),
    ({"grid.box": "[6,1]"}, r"^error: grid\.box = \[6\.0, 1\.0\] does not put the plates 2 apart"),
    ({"initial.name": "tollmien_schlichting", "initial.alpha": "1.5"},
     r"^error: initial\.alpha = 1\.5 is not a wavenumber of the box"),
    ({"initial.name": "tollmien_schlichting", "initial.alpha": "3"}, r"^error: initial\.alpha = 3\.0 is not resolved "
     r"by the grid; 2 pi m / Lx with m < Nx / 3"),
    ({"fft.backend": "pencil"}, r"^error: fft\.backend = 'pencil' does not take a plane"),
    # 16 points across at Re = 10^4: the wave grew 2.5 times too fast, on 9 it decayed (only Nx was checked)
    ({"initial.name": "tollmien_schlichting"}, r"^error: grid\.shape = \[8, 16\] does not resolve the "
     r"Tollmien-Schlichting wave across the plates; a count across the plates on which the wave's Orr-Sommerfeld "
     r"growth rate comes within 1% of the converged 0\.00374 \(Re = 10000, alpha = 1; 16 points give 0\.00926, 41 "
     r"are the fewest above that do\)$"),
    # three points across ended in a 64-line traceback, the run folder created
    ({"grid.shape": "[8,3]"}, r"^error: grid\.shape = \[8, 3\] has too few points across the plates; at least 4 "
     r"points across the no-slip plates"),
    # the plates removed from an odd count across: it blamed the count
    ({"grid.shape": "[8,15]", "grid.walls.axis": "null"}, r"^error: grid\.walls\.axis = null leaves the grid "
     r"periodic; z: channel2d runs between two plates"),
    # mixed plates listed the periodic-only equations as taking free-slip plates: the plane's walled ones that do
    ({"grid.walls.velocity": "[no-slip,free-slip]"}, r"^error: grid\.walls\.velocity = .* free-slip plates: "
     r"physics\.name convection2d or convection2d_noslip$"),
]


@pytest.mark.parametrize(("values", "pattern"), BAD, ids=[" ".join(v) for v, _ in BAD])
def test_bad_channel_input_is_one_line_exit_2_and_nothing_written(tmp_path, capfd, values, pattern):
    config = tmp_path / "channel.yaml"
    config.write_text("physics: {name: channel2d}\ngrid: {shape: [8, 16]}\n")
    args = [a for key, value in values.items() for a in ("--set", f"{key}={value}")]
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "run"), *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.match(pattern, err.strip()), err
    assert not (tmp_path / "run").exists()


def test_the_tutorials_wave_runs_and_its_wall_units_warning_says_a_laminar_study_may_ignore_it(tmp_path, capfd):
    """The tutorial's grid, 8 x 64 (docs/tutorials/channels.md), passes the Tollmien-Schlichting check across the
    plates; its log's wall_resolution warning says what is coarse (wall units, a turbulent channel's) and that a
    laminar study may ignore it, where it said "refine grid.shape, or lower physics.reynolds" alone."""
    shipped = str(Path(simulator.__file__).parents[1] / "configs" / "tollmien_schlichting.yaml")
    code, out, err = command(capfd, "run", shipped, "--set", "grid.shape=[8, 64]", "--set", "time.t_end=0.02",
                             "--set", "output.chunk=1", "--set", "output.snapshots=null", "--set",
                             "output.spectra=null", "--set", "output.profiles=null", "--out", str(tmp_path / "ts"))
    assert code == 0, err
    warned = [line for line in err.splitlines() if "wall_resolution" in line]
    assert len(warned) == 1 and warned[0].endswith("its spacings in wall units are coarser than a turbulent channel "
                                                   "DNS's: refine grid.shape, or lower physics.reynolds, for "
                                                   "turbulence; a laminar or linear-stability study, such as a "
                                                   "Tollmien-Schlichting wave's, may ignore it)"), warned


def test_a_key_of_another_drive_is_named_as_ignored(tmp_path, caplog):
    """The shipped Poiseuille config switched to the pressure drive by editing physics.drive alone (as its header
    said): its flux, and a plate velocity beside it, were ignored silently. `simulator validate` (a process of its
    own: the warning is the package logger's) warns one line per ignored key; load_config warns of a pressure
    gradient under the flux drive, and of nothing in the config as shipped."""
    shipped = str(Path(simulator.__file__).parents[1] / "configs" / "channel_poiseuille.yaml")
    done = subprocess.run([sys.executable, "-m", "simulator", "validate", shipped, "--set", "physics.drive=pressure",
                           "--set", "physics.plate_velocity=2"], cwd=tmp_path, capture_output=True, text=True,
                          timeout=300)
    assert done.returncode == 0, done.stderr
    assert done.stderr.strip().splitlines() == [
        "physics.plate_velocity = 2.0 is ignored under physics.drive = pressure: it sets the plates' speed of drive "
        "= couette; remove it, or set physics.drive = couette",
        "physics.flux = 0.6666666666666666 is ignored under physics.drive = pressure: it sets the bulk velocity of "
        "drive = flux; remove it, or set physics.drive = flux"]
    with caplog.at_level("WARNING", logger="simulator"):
        simulator.load_config(shipped, ["physics.pressure_gradient=0.00125"])
        simulator.load_config(shipped)
    assert [r.getMessage() for r in caplog.records] == [
        "physics.pressure_gradient = 0.00125 is ignored under physics.drive = flux: it sets the mean pressure "
        "gradient of drive = pressure; remove it, or set physics.drive = pressure"]


def test_a_channels_profiles_are_read_back_in_wall_units_and_drawn(tmp_path):
    """Laminar Poiseuille flow at Re = 100 under a fixed pressure gradient, through run_config with profiles:
    load_run reads back <u> = 1 - y^2, no Reynolds stress, the total shear stress -G y; the wall units of the
    window (simulator.walls.channel.wall_units) give u_tau = (2/Re)^(1/2), U+ = <u>/u_tau; simulator plot draws
    channel_profiles.png, the time series of the wall stresses and the energy budget."""
    from simulator.plots.run import plot_run
    from simulator.walls.channel import wall_units

    config = {"physics.name": "channel2d", "physics.reynolds": 100.0, "grid.shape": [8, 16], "precision": "float64",
              "initial.name": "laminar", "time.dt": 0.01, "time.t_end": 0.1, "output.chunk": 5,
              "output.profiles.every": 5, "runtime.cpu_devices": 8}
    assert simulator.run_config(simulator.load_config(None, config), tmp_path / "run") == 0
    run = simulator.load_run(tmp_path / "run")
    data = run.output("profiles")
    y = Chebyshev(16, 2.0).points() - 1
    np.testing.assert_allclose(data["z"], y + 1, atol=1e-15)
    np.testing.assert_allclose(data["mean_velocity"][-1], channel.poiseuille(y), atol=1e-14)
    assert np.abs(data["reynolds_uv"]).max() == 0.0 and np.abs(data["reynolds_uu"]).max() < 1e-28
    np.testing.assert_allclose(data["total_shear_stress"][-1], -2 / 100 * y, atol=1e-15)
    wall = wall_units(y, *(data[k][-1] for k in ("mean_velocity", "reynolds_uu", "reynolds_vv", "reynolds_uv",
                                                 "total_shear_stress")), 1 / 100)
    assert wall.u_tau == pytest.approx(math.sqrt(2 / 100), rel=1e-13) and wall.tau_top == pytest.approx(0.02, 1e-13)
    np.testing.assert_allclose(wall.u_plus, channel.poiseuille(y) / math.sqrt(2 / 100), rtol=1e-13, atol=1e-14)
    series = run.timeseries
    assert np.allclose(series["tau_bottom"], 0.02, rtol=1e-12) and np.allclose(series["re_tau"], math.sqrt(200))
    spectra = run.spectra  # binned by |k_x| from 0 (the laminar flow's fluctuations: none), k_h beside it
    assert spectra["energy"].shape[1] == spectra["k_h"].size and spectra["k_h"][0] == 0.0
    written = {p.name for p in plot_run(tmp_path / "run")}
    assert {"channel_profiles.png", "timeseries.png", "budget.png"} <= written
