"""What every planar flow takes from the base they share (:mod:`simulator.equations.flow.plane`): friction,
hypoviscosity and both forcings, checked against exact solutions in float64 on each planar flow of a stream function;
the resolution ``simulator plan`` states, asked of the equation; the errors that read the registry."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest

from simulator.api import load_config
from simulator.equations import registry
from simulator.equations.resolution import plan_line
from simulator.output.hdf5 import Snapshot
from simulator.output.timeseries import read_timeseries

from support import advance, command, relative_error, simulation

#: the planar flows of a stream function (their state's row 0 the vorticity)
VORTICITY_FLOWS = ("ns2d", "boussinesq2d", "mhd2d")
#: each one's other state field, zero in the exact solutions below (boussinesq2d without stratification)
OTHER = {"ns2d": {}, "boussinesq2d": {"physics.brunt_vaisala": 0.0}, "mhd2d": {}}
SHAPE, BOX = [16, 16], [2 * math.pi, 2 * math.pi]
#: a plug-in flow: the planar Navier-Stokes under another name
PLUGIN_FLOW = """\
import dataclasses
from simulator.equations.ns2d import INFO as NS2D, NS2DParams
from simulator.schema import setting

@dataclasses.dataclass(frozen=True)
class MyFlowParams(NS2DParams):
    name: str = setting("my_flow", "equation to solve")

INFO = dataclasses.replace(NS2D, name="my_flow", params=MyFlowParams)
"""


def plane(devices, name, **overrides):
    return simulation(devices, physics__name=name, grid__shape=SHAPE, grid__box=BOX, **OTHER[name], **overrides)


def from_vorticity(sim, omega):
    """The state whose vorticity is ``omega`` ``(Nx, Ny)`` and whose other fields are zero."""
    zero = np.zeros((1, *SHAPE))
    fields = {name: zero for name in sim.equation.state_fields}
    fields["vorticity"] = omega[None]
    return sim.equation.from_fields(fields, sim.params)


def kinetic_energy(sim, state, name):
    diagnostics = sim.diagnostics(state, 0.01)
    return float(diagnostics["energy" if name == "ns2d" else "kinetic_energy"])


@pytest.mark.parametrize("name", VORTICITY_FLOWS)
def test_friction_and_hypoviscosity_decay_a_single_mode_exactly(devices, name):
    """omega = cos(2x + y) alone has no nonlinear term (nor, without stratification or field, any coupling): its
    energy decays as exp(-2 (nu k^2 + alpha + nu_m k^(-2)) t), each coefficient of its own size."""
    nu, alpha, hypo = 0.011, 0.05, 0.037
    sim = plane(devices, name, physics__viscosity=nu, physics__friction=alpha, physics__hypoviscosity=hypo,
                physics__hypoviscosity_order=1)
    x = np.arange(SHAPE[0])[:, None] * BOX[0] / SHAPE[0]
    y = np.arange(SHAPE[1])[None, :] * BOX[1] / SHAPE[1]
    state = from_vorticity(sim, np.cos(2 * x + y))
    k2 = 5.0
    dt, steps = 0.01, 20
    end = advance(sim, state, dt, steps)
    rate = nu * k2 + alpha + hypo / k2
    expected = kinetic_energy(sim, state, name) * math.exp(-2 * rate * dt * steps)
    assert math.isclose(kinetic_energy(sim, end, name), expected, rel_tol=1e-12)


@pytest.mark.parametrize("name", VORTICITY_FLOWS)
def test_the_kolmogorov_flow_is_steady_under_friction(devices, name):
    """f_x = F sin(k_f y) drives omega = -F k_f cos(k_f y) / (nu k_f^2 + alpha), an exact steady solution (a single
    shear mode: no nonlinear term); the run stays on it and its injection is the dissipation."""
    nu, alpha, amplitude, m = 0.02, 0.1, 0.3, 2
    sim = plane(devices, name, physics__viscosity=nu, physics__friction=alpha, physics__forcing="kolmogorov",
                physics__forcing_amplitude=amplitude, physics__forcing_wavenumber=m)
    y = np.arange(SHAPE[1])[None, :] * BOX[1] / SHAPE[1] + np.zeros((SHAPE[0], 1))
    steady = -amplitude * m * np.cos(m * y) / (nu * m**2 + alpha)
    state = from_vorticity(sim, steady)
    end = advance(sim, state, 0.01, 30)
    assert relative_error(end, state) < 1e-12
    diagnostics = sim.diagnostics(end, 0.01)
    dissipation = diagnostics["dissipation" if name == "ns2d" else next(k for k in ("kinetic_dissipation",
                                                                                   "viscous_dissipation")
                                                                          if k in diagnostics)]
    assert math.isclose(float(diagnostics["injection"]), float(dissipation), rel_tol=1e-12)


@pytest.mark.parametrize("name", VORTICITY_FLOWS)
def test_the_random_forcing_injects_its_power_exactly(devices, name):
    """From rest, one step is the forcing's kick alone: the kinetic energy is then forcing_power dt, to round-off,
    whatever the equation's other fields; the run reports that power as its injection."""
    power, dt = 0.3, 0.02
    sim = plane(devices, name, physics__forcing="random", physics__forcing_power=power, physics__forcing_wavenumber=3)
    state = from_vorticity(sim, np.zeros(SHAPE))
    end = advance(sim, state, dt, 1)
    assert math.isclose(kinetic_energy(sim, end, name), power * dt, rel_tol=1e-12)
    assert float(sim.diagnostics(end, dt)["injection"]) == power


def test_plan_states_the_resolution_the_equation_declares():
    """2D MHD's energy cascades to the Kolmogorov scale, the planar Navier-Stokes' enstrophy to eta_Z: the line
    ``simulator plan`` prints (:func:`~simulator.equations.resolution.plan_line`, here without the plan's compilation)
    asks the equation, not the grid's shape."""
    mhd = plan_line(load_config("configs/orszag_tang_2d.yaml", {"grid.shape": [32, 32]}))
    assert "k_max eta >= 1 while epsilon <= nu^3 k_max^4" in mhd and "eta_Z" not in mhd
    ns2d = plan_line(load_config("configs/forced_2d.yaml", {"grid.shape": [32, 32], "physics.forcing_wavenumber": 4}))
    assert "k_max eta_Z >= 1 while the enstrophy dissipation chi <= nu^3 k_max^6" in ns2d


def test_the_particles_error_lists_the_registered_flows(tmp_path, monkeypatch, capfd):
    """The flows that take particles come from the registry: a plug-in flow is among them."""
    (tmp_path / "my_flow.py").write_text(PLUGIN_FLOW)
    monkeypatch.setenv("SIMULATOR_EQUATIONS", "my_flow")
    monkeypatch.syspath_prepend(str(tmp_path))
    flows = [n for n, i in registry().items() if "velocity" in i.fields]
    assert "my_flow" in flows
    code, _, err = command(capfd, "validate", "configs/taylor_green.yaml", "--set", "physics.name=schrodinger_poisson",
                           "--set", "initial.name=random", "--set", "time.integrator=kdk",
                           "--set", "particles=[{name: p, count: 8}]")
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert f"use an equation with a velocity field ({', '.join(flows)})" in err


@pytest.mark.parametrize("name", VORTICITY_FLOWS[1:])
def test_every_planar_flow_carries_scalars_as_ns2d_does(devices, name):
    """A passive scalar with a mean gradient, carried by a flow whose other field is zero (no stratification, no
    magnetic field): the flow is ns2d's, so the scalar after a few nonlinear steps is ns2d's to round-off (their
    advection formed apart: the stress form in ns2d, the conservative form in the others), and so are its
    diagnostics."""
    scalar = {"physics.scalars": [{"diffusivity": 0.02, "mean_gradient": [1.0, 0.5, 0.0]}]}
    reference = plane(devices, "ns2d", initial__name="random", initial__scalars={"name": "random"}, **scalar)
    start = reference.fields(reference.initial_state(), "vorticity", "scalar")
    sim = plane(devices, name, **scalar)
    zero = np.zeros((1, *SHAPE))
    fields = {"vorticity": start["vorticity"], "scalar": start["scalar"], "buoyancy": zero, "potential": zero}
    state = sim.equation.from_fields({k: fields[k] for k in sim.equation.state_fields}, sim.params)
    dt, steps = 0.01, 10
    reached = advance(reference, reference.initial_state(), dt, steps)
    end = advance(sim, state, dt, steps)
    assert relative_error(sim.fields(end, "scalar")["scalar"], reference.fields(reached, "scalar")["scalar"]) < 1e-12
    got, expected = sim.diagnostics(end, dt), reference.diagnostics(reached, dt)
    for key in ("scalar0_variance", "scalar0_dissipation", "scalar0_flux"):
        assert math.isclose(float(got[key]), float(expected[key]), rel_tol=1e-12), key


def test_a_planar_equation_written_on_the_base_runs_its_exact_rossby_wave(devices, monkeypatch):
    """The beta plane of tests/plugins/beta_plane (the how-to's example: the base gives it the sinks, the forcing, the
    scalars): a single Rossby wave travels at Omega = -beta k_x/|k|^2 and decays as exp(-(nu k^2 + alpha) t), exactly
    (its L integrated exactly, its nonlinear term zero), to 1e-12."""
    monkeypatch.setenv("SIMULATOR_EQUATIONS", "beta_plane")
    monkeypatch.syspath_prepend(str(Path(__file__).parent / "plugins"))
    beta, nu, alpha, modes = 3.0, 0.01, 0.05, (1, 2)
    sim = simulation(devices, physics={"name": "beta_plane", "beta": beta, "viscosity": nu, "friction": alpha},
                     grid__shape=SHAPE, grid__box=BOX, initial={"name": "rossby_wave", "modes": list(modes)})
    dt, steps = 0.05, 20
    end = sim.fields(advance(sim, sim.initial_state(), dt, steps), "vorticity")["vorticity"]
    kx, ky = modes
    t = dt * steps
    x = np.arange(SHAPE[0])[:, None] * BOX[0] / SHAPE[0]
    y = np.arange(SHAPE[1])[None, :] * BOX[1] / SHAPE[1]
    omega = -beta * kx / (kx**2 + ky**2)
    exact = np.cos(kx * x + ky * y - omega * t) * math.exp(-(nu * (kx**2 + ky**2) + alpha) * t)
    assert relative_error(end, exact[None]) < 1e-12
    assert relative_error(end, np.cos(kx * x + ky * y)[None]) > 0.1  # it moved


@pytest.mark.parametrize("config", ["stratified_plane", "orszag_tang_2d"])
def test_the_stratified_and_magnetised_planes_run_with_every_planar_option(config, tmp_path, capfd):
    """Through the command line, a shipped stratified or magnetised plane with what a FluidSim ns2d.strat user sets
    first (friction, the random forcing at a fixed injection rate) and hypoviscosity, a passive scalar with a mean
    gradient and tracers: the run writes the injection and the scalar's columns, and its snapshots the scalar."""
    code, _, err = command(capfd, "run", f"configs/{config}.yaml", "--out", str(tmp_path / "run"),
                           "--set", "grid.shape=[16,16]", "--set", "time.t_end=0.1", "--set", "output.chunk=5",
                           "--set", "output.snapshots.dt=0.1", "--set", "physics.friction=0.1",
                           "--set", "physics.hypoviscosity=0.01", "--set", "physics.hypoviscosity_order=1",
                           "--set", "physics.forcing=random", "--set", "physics.forcing_wavenumber=3",
                           "--set", "physics.scalars=[{diffusivity: 0.01, mean_gradient: [1, 0, 0]}]",
                           "--set", "particles=[{name: tracers, count: 16}]")
    assert code == 0, err[-3000:]
    series = read_timeseries(tmp_path / "run" / "timeseries.csv")
    assert np.allclose(series["injection"], 0.1) and np.all(series["scalar0_variance"][1:] > 0)
    with Snapshot(next((tmp_path / "run" / "snapshots").glob("*.h5"))) as snap:
        assert snap.read("scalar").shape == (1, 1, 16, 16)


def test_a_flow_declares_only_what_it_owns_and_its_scalars_follow():
    """``flow.info``, what every periodic flow declares through: the name from the parameters, the semi-linear
    schemes at rk4, the class in the package's equation module, and for parameters that carry ``scalars`` the passive
    scalars' field, state, diagnostics, advice, spectra, panels, spectra drawn and labels after the flow's own; a flow
    without them gets none. Every shipped flow with scalars lists them so, last."""
    from dataclasses import dataclass

    from simulator.equations import flow, scalars as passive
    from simulator.equations.flow import planar
    from simulator.equations.spec import Curve, Panel, PlotSpec
    from simulator.schema import setting
    from simulator.time.schemes import SEMILINEAR

    @dataclass(frozen=True)
    class Bare(planar.PlanarParams):
        name: str = setting("bare_flow", "equation to solve")

    @dataclass(frozen=True)
    class Carrying(Bare):
        name: str = setting("carrying_flow", "equation to solve")
        scalars: tuple[passive.PassiveScalar, ...] = passive.scalar_list()

    @dataclass(frozen=True)
    class Start(flow.FlowInitial):
        name: str = setting("start", "initial condition")
        scalars: passive.ScalarInitial = passive.scalar_initial()

    plot = PlotSpec(panels=(Panel("energy", (Curve("energy", "$E$"),)),), spectrum="energy", spectrum_label="E",
                    slice_field="vorticity")
    own = {"dimensions": 2, "summary": "a flow of this test", "fields": {"vorticity": planar.VORTICITY},
           "state_fields": ("vorticity",), "diagnostics": {"energy": "E", "cfl": "CFL"}, "progress": ("energy",),
           "spectra": {"energy": "E(k)"}, "plot": plot}
    bare, carrying = flow.info(Bare, (Start,), "Bare", **own), flow.info(Carrying, (Start,), "Carrying", **own)
    assert (bare.name, bare.protocol, bare.default_integrator) == ("bare_flow", SEMILINEAR, "rk4")
    assert bare.implementation == f"{__name__}.equation:Bare"
    assert (list(bare.fields), bare.state_fields, list(bare.diagnostics)) == (["vorticity"], ("vorticity",),
                                                                             ["energy", "cfl"])
    assert (bare.resolution_advice, list(bare.spectra), len(bare.plot.panels)) == ({}, ["energy"], 1)
    assert carrying.name == "carrying_flow" and carrying.fields["scalar"] == passive.FIELD
    assert list(carrying.fields) == ["vorticity", "scalar"] and carrying.state_fields == ("vorticity", "scalar")
    assert list(carrying.diagnostics) == ["energy", "cfl", *passive.DIAGNOSTICS]
    assert carrying.resolution_advice == passive.ADVICE and list(carrying.spectra) == ["energy", *passive.SPECTRA]
    assert carrying.plot.panels == (*plot.panels, *passive.PANELS)
    assert (carrying.plot.more_spectra, dict(carrying.plot.labels)) == (passive.MORE_SPECTRA, passive.LABELS)
    for info in registry().values():
        if "scalars" in {f.name for f in dataclasses.fields(info.params)} and info.walls == "none":
            assert list(info.fields)[-1] == info.state_fields[-1] == "scalar", info.name
            assert list(info.diagnostics)[-len(passive.DIAGNOSTICS):] == list(passive.DIAGNOSTICS), info.name
            assert info.plot.panels[-len(passive.PANELS):] == passive.PANELS, info.name
