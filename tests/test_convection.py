"""Rayleigh-Benard convection between free-slip plates (simulator.equations.convection2d), in float64 against the
exact linear theory, on the single backend and slabs of 2 and 4 devices."""

from __future__ import annotations

import math
import re
import shutil

import numpy as np
import pytest

import simulator
from simulator.equations.plates import K_CRITICAL, RA_CRITICAL, growth_rate, rotating_onset
from simulator.output.hdf5 import Snapshot

from support import advance, case_id, command, relative_error, simulation

CASES = [("single", 1, None), ("slab", 2, None), ("slab", 4, None)]
#: a box one critical wavelength wide: the mode m_x = 1 is the onset's
LX = 2 * math.pi / K_CRITICAL


def convection(devices, case=("single", 1, None), shape=(8, 8), **overrides):
    values = {"physics__name": "convection2d", "grid__shape": list(shape), "grid__box": [LX, 1.0],
              "grid__walls__axis": "y", **overrides}
    return simulation(devices, case, **values)


def coefficient(sim, state, m_x: int, n: int, field: int = 1) -> float:
    """The real coefficient of cos(2 pi m_x x / Lx) sin(n pi z) in ``field`` of a state (0 vorticity, 1 theta)."""
    spectrum = np.asarray(state)[field, 0]
    return float(np.real(spectrum[m_x, n] + (spectrum[-m_x, n] if m_x else 0.0)) / sim.fft.size)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_conductive_state_is_steady(devices, case):
    """No noise: the state stays zero, the temperature is 1 - z at the cell centres, and Nu = 1 at both plates and
    through the volume."""
    sim = convection(devices, case, initial__name="conductive", initial__amplitude=0.0)
    state = advance(sim, sim.initial_state(), 0.05, 10)
    assert np.max(np.abs(np.asarray(state))) == 0.0
    temperature = np.asarray(sim.fields(state, "temperature")["temperature"])[0]
    z = (np.arange(8) + 0.5) / 8
    np.testing.assert_allclose(temperature, np.broadcast_to(1 - z, (8, 8)), rtol=0, atol=1e-15)
    report = sim.diagnostics(state, 0.05)
    assert [float(report[k]) for k in ("nusselt", "nusselt_bottom", "nusselt_top")] == [1.0, 1.0, 1.0]


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_temperature_layer_decays_exactly(devices, case):
    """theta = A sin(2 pi z), uniform in x, drives no flow: it decays as exp(-kappa (2 pi)^2 t), kappa = (Ra Pr)^-1/2,
    to round-off (the integrating factor is exact)."""
    ra, pr, dt, steps = 2000.0, 0.7, 0.05, 20
    sim = convection(devices, case, initial__name="mode", initial__modes=[0, 2], initial__amplitude=1.0,
                     physics__rayleigh=ra, physics__prandtl=pr)
    state = advance(sim, sim.initial_state(), dt, steps)
    kappa = 1 / math.sqrt(ra * pr)
    expected = math.exp(-kappa * (2 * math.pi) ** 2 * dt * steps)
    assert coefficient(sim, state, 0, 2) == pytest.approx(expected, rel=1e-13, abs=0)
    assert np.max(np.abs(np.asarray(state)[0])) == 0.0


def measured_rate(devices, rayleigh: float, case=("single", 1, None), prandtl: float = 1.0) -> float:
    """The growth rate of theta's mode (1, 1) from amplitude 1e-8 over t = 2."""
    sim = convection(devices, case, initial__name="mode", initial__amplitude=1e-8, physics__rayleigh=rayleigh,
                     physics__prandtl=prandtl)
    state = sim.initial_state()
    before = coefficient(sim, state, 1, 1)
    after = coefficient(sim, advance(sim, state, 0.01, 200), 1, 1)
    return math.log(after / before) / 2.0


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_small_mode_grows_at_the_exact_linear_rate(devices, case):
    """The eigenmode cos(k_c x) sin(pi z) at Ra = 2000, Pr = 0.7 grows at the closed-form rate of the free-slip
    dispersion relation, to 1e-9."""
    assert measured_rate(devices, 2000.0, case, 0.7) == pytest.approx(growth_rate(2000.0, 0.7, K_CRITICAL, 1),
                                                                      rel=1e-9)


def test_the_onset_of_convection_is_at_27_pi4_over_4(devices):
    """The measured growth rate at k_c = pi/sqrt(2) changes sign between Ra_c (1 -+ 1e-4), Ra_c = 27 pi^4/4, and the
    zero of its line through them is Ra_c to 1e-6."""
    below, above = RA_CRITICAL * (1 - 1e-4), RA_CRITICAL * (1 + 1e-4)
    rate_below, rate_above = measured_rate(devices, below), measured_rate(devices, above)
    assert rate_below < 0 < rate_above
    onset = below - rate_below * (above - below) / (rate_above - rate_below)
    assert onset == pytest.approx(RA_CRITICAL, rel=1e-6)
    assert RA_CRITICAL == pytest.approx(657.5113644795163, rel=1e-15)


def test_a_steady_roll_carries_the_same_heat_through_each_plate_and_the_volume(devices):
    """At Ra = 3000 the mode grows into one steady roll. Stepped by etdrk4, whose fixed points are the equations'
    own (an integrating-factor scheme's move with dt), the kinetic and thermal dissipations meet their exact
    relations to the volume's Nu to round-off, and Nu through the bottom and the top plate equals it to the
    resolution's truncation (the product w theta's modes past the 2/3 rule: 1.1e-5 at 16^2, 6.8e-7 at 24^2)."""
    sim = convection(devices, shape=(16, 16), initial__name="mode", initial__amplitude=0.1, physics__rayleigh=3000.0,
                     time__integrator="etdrk4")
    state = advance(sim, sim.initial_state(), 0.1, 900)
    report = {k: float(v) for k, v in sim.diagnostics(state, 0.1).items()}
    nusselt, root = report["nusselt"], math.sqrt(3000.0)
    assert nusselt == pytest.approx(3.2178164, rel=1e-7)
    assert report["kinetic_dissipation"] == pytest.approx((nusselt - 1) / root, rel=1e-12)
    assert report["thermal_dissipation"] == pytest.approx(nusselt / root, rel=1e-12)
    assert report["nusselt_bottom"] == report["nusselt_top"]  # the roll's symmetry
    assert report["nusselt_bottom"] == pytest.approx(nusselt, rel=2e-5)


@pytest.mark.parametrize("case", CASES[1:], ids=case_id)
def test_a_distributed_run_equals_the_single_device_one(devices, case):
    """Noise at Ra = 1e5 for 20 steps: slabs of 2 and 4 devices end where one device ends, to 1e-12."""
    values = {"initial__name": "conductive", "initial__amplitude": 0.1, "physics__rayleigh": 1e5}
    single = convection(devices, **values)
    want = advance(single, single.initial_state(), 0.01, 20)
    sim = convection(devices, case, **values)
    got = advance(sim, sim.initial_state(), 0.01, 20)
    assert relative_error(got, want) < 1e-12


CONFIG = {"physics.name": "convection2d", "physics.rayleigh": 1e4, "grid.shape": [8, 8], "grid.box": [LX, 1.0],
          "grid.walls.axis": "y", "precision": "float64", "initial.name": "conductive", "initial.amplitude": 0.1,
          "time.dt": 0.01, "time.t_end": 0.2, "output.chunk": 5, "checkpoint.every": 10,
          "output.snapshots.every": 20, "runtime.cpu_devices": 8, "fft.mesh": [2]}


def test_a_restart_ends_bitwise_where_the_straight_run_ends(tmp_path):
    """From the step-10 checkpoint of a run on a slab of 2, restarted there: its step-20 snapshot is the straight
    run's, bit for bit."""
    straight = tmp_path / "straight"
    assert simulator.run_config(simulator.load_config(None, CONFIG), straight) == 0
    run = tmp_path / "run"
    shutil.copytree(straight, run)
    for path in (run / "snapshots").glob("s00000020*"):
        shutil.rmtree(path) if path.is_dir() else path.unlink()
    restart = str(run / "checkpoints" / "c00000010.json")
    assert simulator.run_config(simulator.load_config(None, CONFIG), run, restart=restart) == 0
    for name in ("theta", "vorticity"):
        with Snapshot(run / "snapshots" / "s00000020.h5") as got, Snapshot(straight / "snapshots" / "s00000020.h5") \
                as want:
            assert np.array_equal(got.read(name), want.read(name))


BAD = [
    ({"grid.walls.velocity": "[no-slip,no-slip]"}, r"^error: grid\.walls\.velocity = \['no-slip', 'no-slip'\] is not "
     r"available for this equation; free-slip plates for physics\.name = convection2d; no-slip plates: physics\.name "
     r"channel2d or convection2d_noslip$"),
    ({"grid.walls.temperature": "[fixed-value,fixed-flux]"}, r"^error: grid\.walls\.temperature = .* mixes conditions"),
    ({"grid.walls.temperature": "[fixed-flux,fixed-flux]"}, r"^error: grid\.walls\.temperature = .* is not available "
     r"for convection2d"),
    ({"grid.walls.axis": "null"}, r"^error: grid\.walls\.axis = null leaves the grid periodic"),
    ({"physics.rayleigh": "0"}, r"^error: physics\.rayleigh = 0"),
    ({"physics.rayleigh": "-5"}, r"^error: physics\.rayleigh = -5"),
    ({"fft.backend": "pencil"}, r"^error: fft\.backend = 'pencil' does not take a plane"),
    ({"grid.box": "[2,3]"}, r"^error: grid\.box = \[2\.0, 3\.0\] does not put the plates 1 apart"),
    ({"grid.shape": "[8,10]", "runtime.cpu_devices": "4"}, r"^error: grid\.shape = \[8, 10\] does not divide"),
    ({"initial.name": "mode", "initial.modes": "[1,6]"}, r"^error: initial\.modes = \[1, 6\] is removed by the 2/3"),
    ({"output.profiles.every": "10", "physics.name": "boussinesq2d", "grid.walls.axis": "null"},
     r"^error: output\.profiles = 'on' needs plates"),
    ({"particles": "[{name: tracers, count: 4}]"}, r"^error: particles = \['tracers'\] cannot be carried between "
     r"plates; none with grid\.walls"),
]


@pytest.mark.parametrize(("values", "pattern"), BAD, ids=[" ".join(v) for v, _ in BAD])
def test_bad_convection_input_is_one_line_exit_2_and_nothing_written(tmp_path, capfd, values, pattern):
    config = tmp_path / "rb.yaml"
    config.write_text("physics: {name: convection2d}\ngrid: {shape: [8, 8], box: [2, 1], walls: {axis: y}}\n")
    args = [a for key, value in values.items() for a in ("--set", f"{key}={value}")]
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "run"), *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.match(pattern, err.strip()), err
    assert not (tmp_path / "run").exists()


def test_a_walled_run_restarts_on_another_grid_and_device_count_by_its_own_series(devices, tmp_path, capfd):
    """A run on 8 x 8 over a slab of 2, restarted from its checkpoint onto 16 x 24 over a slab of 4: the state there,
    at the points the two grids share (every second x, every third cell centre across the plates), is the stored
    state to round-off (each field remapped by its sine series across the plates, Fourier along them), and the
    restart runs on; the finer run's checkpoint starts the stored grid again. A restart onto a periodic plane: one
    line, exit 2, nothing written."""
    straight = tmp_path / "straight"
    assert simulator.run_config(simulator.load_config(None, {**CONFIG, "time.t_end": 0.1}), straight) == 0
    ckpt = str(straight / "checkpoints" / "c00000010.json")
    config = tmp_path / "rb.yaml"
    config.write_text((straight / "config.yaml").read_text())
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "finer"), "--restart", ckpt,
                             "--set", "grid.shape=[16,24]", "--set", "fft.mesh=[4]", "--set", "time.t_end=0.2")
    assert code == 0, err
    coarse = simulator.Simulation(simulator.load_config(None, CONFIG), devices[:2])
    stored = coarse.fields(coarse.state_from_file(ckpt), "theta", "vorticity")
    finer = simulator.Simulation(simulator.load_config(None, {**CONFIG, "grid.shape": [16, 24], "fft.mesh": [4]}),
                                 devices[:4])
    remapped = finer.fields(finer.state_from_file(ckpt), "theta", "vorticity")
    for name in ("theta", "vorticity"):
        want = np.asarray(stored[name])
        assert np.max(np.abs(np.asarray(remapped[name])[:, ::2, 1::3] - want)) < 1e-14 * np.max(np.abs(want))
    with Snapshot(tmp_path / "finer" / "snapshots" / "s00000020.h5") as snap:
        assert snap.read("theta").shape == (1, 16, 24)
    back = coarse.fields(coarse.state_from_file(str(tmp_path / "finer" / "checkpoints" / "c00000020.json")), "theta")
    assert np.asarray(back["theta"]).shape == (1, 8, 8)
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "new"), "--restart", ckpt,
                             "--set", "physics.name=boussinesq2d", "--set", "grid.walls.axis=null",
                             "--set", "initial.name=random")
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.match(r"^error: --restart = .* holds a "
                                                                         r"convection2d state", err.strip()), err
    assert not (tmp_path / "new").exists()


def test_snapshots_place_the_grid_between_the_plates(tmp_path):
    """A walled run's snapshots hold the cell centres (j + 1/2)/Nz as the bounded axis's coordinates, and their XDMF
    is a rectilinear grid at those points (ParaView draws the plates at 0 and 1), x uniform from 0."""
    import xml.etree.ElementTree as ET

    import h5py

    run = tmp_path / "run"
    assert simulator.run_config(simulator.load_config(None, {**CONFIG, "time.t_end": 0.05}), run) == 0
    with h5py.File(run / "snapshots" / "s00000000.h5") as f:
        np.testing.assert_array_equal(f["z"][()], (np.arange(8) + 0.5) / 8)
        np.testing.assert_array_equal(f["x"][()], np.arange(8) * (LX / 8))
    geometry = ET.parse(run / "snapshots" / "s00000000.xdmf").find(".//Geometry")
    assert geometry.get("GeometryType") == "VXVYVZ"
    x, y, depth = (np.array(item.text.split(), float) for item in geometry.findall("DataItem"))
    np.testing.assert_array_equal(y, (np.arange(8) + 0.5) / 8)
    assert x[0] == 0.0 and len(x) == 8 and depth.tolist() == [0.0]
    assert ET.parse(run / "snapshots" / "s00000000.xdmf").find(".//Topology").get("TopologyType") == "3DRectMesh"


def test_the_profiles_of_a_steady_roll_carry_its_nusselt_number_at_every_height(tmp_path):
    """output.profiles through load_run: at the grid's heights, the heat flux profile of the steady roll is its
    Nusselt number at every height (to the truncation, as at the plates), the temperature profile falls from near 1
    to near 0 in boundary layers at the plates, antisymmetric about mid-height, and the rms velocity is even about
    it."""
    values = {**CONFIG, "physics.rayleigh": 3000.0, "grid.shape": [16, 16], "initial.name": "mode",
              "initial.amplitude": 0.1, "time.integrator": "etdrk4", "time.dt": 0.1, "time.t_end": 90.0,
              "output.chunk": 100, "checkpoint.every": 0, "output.snapshots.every": 0, "output.profiles.at_end": True}
    run = tmp_path / "run"
    assert simulator.run_config(simulator.load_config(None, values), run) == 0
    results = simulator.load_run(run)
    profiles = results.output("profiles")
    np.testing.assert_array_equal(profiles["z"], (np.arange(16) + 0.5) / 16)
    nusselt = float(results.timeseries["nusselt"][-1])
    assert nusselt == pytest.approx(3.2178164, rel=1e-7)
    np.testing.assert_allclose(profiles["heat_flux"][-1], nusselt, rtol=2e-5)
    temperature = profiles["temperature"][-1]
    np.testing.assert_allclose(temperature + temperature[::-1], 1.0, rtol=0, atol=1e-12)
    assert temperature[0] > 0.9 and np.all(np.abs(temperature[4:12] - 0.5) < 0.05)  # boundary layers, a mixed core
    np.testing.assert_allclose(profiles["velocity_rms"][-1], profiles["velocity_rms"][-1][::-1], rtol=1e-12)


# ---- a box between plates (physics.name: convection) ---------------------------------------------------------------


def box(devices, case=("single", 1, None), **overrides):
    values = {"physics__name": "convection", "grid__shape": [8, 8, 8], "grid__box": [LX, LX, 1.0], **overrides}
    return simulation(devices, case, **values)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_small_mode_in_a_box_grows_at_the_exact_rate_divergence_free(devices, case):
    """In a box, the eigenmode cos(k_c x) sin(pi z) at Ra = 2000, Pr = 0.7 grows at the plane's closed-form rate to
    1e-9, and the velocity's divergence stays at round-off (the projection is exact mode by mode)."""
    sim = box(devices, case, initial__name="mode", initial__amplitude=1e-8, physics__rayleigh=2000.0,
              physics__prandtl=0.7)
    state = sim.initial_state()
    before = float(np.real(np.asarray(state)[3, 1, 0, 1]))
    state = advance(sim, state, 0.01, 200)
    rate = math.log(float(np.real(np.asarray(state)[3, 1, 0, 1])) / before) / 2.0
    assert rate == pytest.approx(growth_rate(2000.0, 0.7, K_CRITICAL, 1), rel=1e-9)
    assert float(sim.diagnostics(state, 0.01)["divergence"]) < 1e-20


@pytest.mark.parametrize("factor", [0.999, 1.001])
def test_rotation_moves_the_onset_to_chandrasekhar_s(devices, factor):
    """Rotating about the vertical at Ta = 1000 (physics.taylor), Pr = 1: the mode cos(k_c x) sin(pi z) with its
    eigenvector (v from the Coriolis force) grows, at 0.1% above the onset Ra = (K^6 + Ta pi^2)/k_c^2 = 2657.5 of
    Chandrasekhar's free-slip rotating convection, and decays 0.1% below it, at the rate of his cubic's largest root
    to 1e-6 (without rotation it would grow at both: the onset there is 657.5), divergence-free."""
    ra = factor * rotating_onset(1000.0, K_CRITICAL)
    sim = box(devices, ("slab", 2, None), initial__name="mode", initial__amplitude=1e-8, physics__rayleigh=ra,
              physics__prandtl=1.0, physics__taylor=1000.0)
    state = sim.initial_state()
    before = float(np.real(np.asarray(state)[3, 1, 0, 1]))
    state = advance(sim, state, 0.05, 100)
    rate = math.log(float(np.real(np.asarray(state)[3, 1, 0, 1])) / before) / 5.0
    want = growth_rate(ra, 1.0, K_CRITICAL, 1, taylor=1000.0)
    assert np.sign(rate) == np.sign(factor - 1) and abs(rate - want) < 1e-6 * abs(want), (rate, want)
    assert float(sim.diagnostics(state, 0.05)["divergence"]) < 1e-20


def test_a_distributed_box_equals_the_single_device_one(devices):
    """Noise at Ra = 1e5 for 10 steps in a box: a slab of 4 ends where one device ends, to 1e-12, its velocity
    divergence-free to round-off."""
    values = {"initial__name": "conductive", "initial__amplitude": 0.1, "physics__rayleigh": 1e5}
    single = box(devices, **values)
    want = advance(single, single.initial_state(), 0.01, 10)
    sim = box(devices, ("slab", 4, None), **values)
    got = advance(sim, sim.initial_state(), 0.01, 10)
    assert relative_error(got, want) < 1e-12
    assert float(sim.diagnostics(got, 0.01)["divergence"]) < 1e-12


def test_a_box_state_starts_a_finer_box_by_its_sine_and_cosine_series(devices, tmp_path):
    """A box's checkpoint (u, v cosine series across the plates, w and theta sine series) read onto a grid twice as
    fine along the plates and three times across them: at the points the grids share, the stored fields to
    round-off, and the velocity divergence-free to round-off there."""
    values = {**CONFIG, "physics.name": "convection", "grid.shape": [8, 8, 8], "grid.box": [LX, LX, 1.0],
              "grid.walls.axis": "z", "time.t_end": 0.05, "checkpoint.every": 5, "output.snapshots.every": 5}
    assert simulator.run_config(simulator.load_config(None, values), tmp_path / "run") == 0
    ckpt = str(tmp_path / "run" / "checkpoints" / "c00000005.json")
    coarse = simulator.Simulation(simulator.load_config(None, values), devices[:2])
    stored = coarse.fields(coarse.state_from_file(ckpt), "velocity", "theta")
    finer = simulator.Simulation(simulator.load_config(None, {**values, "grid.shape": [16, 16, 24]}), devices[:2])
    state = finer.state_from_file(ckpt)
    remapped = finer.fields(state, "velocity", "theta")
    for name in ("velocity", "theta"):
        want = np.asarray(stored[name])
        assert np.max(np.abs(np.asarray(remapped[name])[..., ::2, ::2, 1::3] - want)) < 1e-14 * np.max(np.abs(want))
    assert float(finer.diagnostics(state, 0.01)["divergence"]) < 1e-13


def test_the_plane_and_the_box_are_cases_of_one_free_slip_skeleton():
    """Both free-slip equations are declared by one function (simulator.equations.freeslip.freeslip_info) and run on
    one skeleton (simulator.equations.freeslip_flow.FreeSlipConvection): the linear part, fields, diagnostics,
    profiles, spectra and initial conditions are the skeleton's alone, and each geometry gives only its state's flow
    (the plane its vorticity, one state entry; the box its velocity, three)."""
    from simulator.equations import registry
    from simulator.equations.freeslip import freeslip_info
    from simulator.equations.freeslip_flow import BUILDERS, FreeSlipConvection

    shared = ("linear", "exp_linear", "fields", "diagnostics", "profiles", "spectra", "lifts", "wall_lift", "heights")
    for name, entries in (("convection2d", 1), ("convection", 3)):
        info = registry()[name]
        assert info == freeslip_info(info.params, info.initials[1], info.implementation, info.dimensions)
        cls = info.load()
        assert issubclass(cls, FreeSlipConvection) and cls.flow_entries == entries and cls.builders is BUILDERS
        own = [m for m in shared if m in vars(cls)]
        assert not own, f"{name} writes its own {own}"
