"""Passive scalars with Navier-Stokes (float64), on every backend: the config of a list of sections,
exact solutions, the sign of every term, the variance budget, the initial fields, distributed =
single device, and a run of configs/scalar_turbulence.yaml through the CLI with its plots.

Two scalars everywhere, with different diffusivities and mean gradients, so that a term applied to
the wrong scalar fails. One simulation per backend case is shared (traced parameters vary).
"""

import re
import struct
from pathlib import Path

import h5py
import jax
import numpy as np
import pytest
import yaml

import simulator
from simulator import config as C, plots
from simulator.equations.scalars import terms
from simulator.errors import ConfigError
from simulator.output.hdf5 import Snapshot
from simulator.output.spectra import read_spectra
from simulator.output.timeseries import read_timeseries
from simulator.run import restart

from support import advance, backend_cases, case_id, distributed_cases, relative_error, shared, simulation

CASES = backend_cases()
N = 16
SCALARS = [{"diffusivity": 0.05, "mean_gradient": [0.0, 0.0, 1.0]},
           {"diffusivity": 0.02, "mean_gradient": [0.5, -1.0, 0.0]}]
ROOT = Path(__file__).parents[1]
#: the random flow and scalars the tests start from (one initial condition: its builder compiles once per case)
RANDOM = {"name": "random", "seed": 7, "k_peak": 3.0, "scalars": {"name": "random", "seed": 1}}


def ns(case=("single", 1, None)):
    """The shared simulation of a backend case (low-storage RK4: its stages are a loop, so the chunk
    compiles in half the time of classical RK4's)."""
    return shared(case, grid__shape=N, physics__scalars=SCALARS, time__integrator="lsrk4")


def cfg_dict(cfg):
    return yaml.safe_load(C.dump(cfg))


def png_size(path):
    return struct.unpack(">II", path.read_bytes()[16:24])


def grid():
    return np.meshgrid(*(np.arange(N) * 2 * np.pi / N,) * 3, indexing="ij")


# ---- config: a list of sections ------------------------------------------------------------------------


def test_scalars_are_a_list_of_sections_with_keys_per_entry():
    cfg = C.load(None, ["physics.scalars=[{diffusivity: 0.01, mean_gradient: [0, 0, 1]}, {}]"])
    first, second = cfg.physics.scalars
    assert (first.diffusivity, first.mean_gradient) == (0.01, (0.0, 0.0, 1.0))
    assert (second.diffusivity, second.mean_gradient) == (1e-3, (0.0, 0.0, 0.0))  # the defaults
    # traced numbers come entry by entry (a pytree jit takes); the count is structure
    assert cfg.physics.traced()["scalars"] == [{"diffusivity": 0.01, "mean_gradient": (0.0, 0.0, 1.0)},
                                               {"diffusivity": 1e-3, "mean_gradient": (0.0, 0.0, 0.0)}]
    assert C.load(None).physics.scalars == () and C.load(None).physics.traced()["scalars"] == []
    # an indexed key sets one entry (sweeps use the same keys); the next entry is added whole, as a mapping
    indexed = C.load(None, ["physics.scalars=[{}]", "physics.scalars[0].diffusivity=0.5"])
    assert indexed.physics.scalars[0].diffusivity == 0.5
    added = C.load(None, ["physics.scalars[0]={diffusivity: 0.5}", "physics.scalars[1]={}"]).physics.scalars
    assert [s.diffusivity for s in added] == [0.5, 1e-3]
    # the resolved config round-trips
    again = C.from_dict(yaml.safe_load(C.dump(cfg)))
    assert again == cfg


@pytest.mark.parametrize("overrides, message", [
    (["physics.scalars=[{}, {diffusivity: -1}]"], r"^physics\.scalars\[1\]\.diffusivity = -1\.0 is out of range"),
    (["physics.scalars=[{diffusion: 1}]"], r"^physics\.scalars\[0\]\.diffusion = 1 is an unknown key; did you mean "),
    (["physics.scalars=[{mean_gradient: [1, 2]}]"], r"^physics\.scalars\[0\]\.mean_gradient = \[1, 2\] has 2 entries"),
    (["physics.scalars=0.01"], r"^physics\.scalars = 0\.01 has the wrong type; expected a list of mappings"),
    (["physics.scalars=[0.01]"], r"^physics\.scalars\[0\] = 0\.01 has the wrong type; expected a mapping"),
    # a key of an entry that does not exist, even the next one, adds nothing: the key named whole
    (["physics.scalars[1].diffusivity=0.5"], r"^physics\.scalars\[1\]\.diffusivity = 0\.5 names no entry; "
                                             r"physics\.scalars has no entries: add entry 0 whole"),
    (["physics.scalars=[{}]", "physics.scalars[1].diffusivity=0.5"],
     r"^physics\.scalars\[1\]\.diffusivity = 0\.5 names no entry; physics\.scalars has 1 entry, "
     r"physics\.scalars\[0\]: set a key of it, or add entry 1 whole, as a mapping of its keys: "
     r"--set 'physics\.scalars\[1\]=\{key: value, \.\.\.\}'$"),
    (["physics.scalars.0.diffusivity=0.5"], r"^physics\.scalars = \{'0': \{'diffusivity': 0\.5\}\} has the wrong "
                                            r"type; expected a list of mappings, one per entry"),
    (["initial.scalars.name=random"], r"^initial\.scalars\.name = 'random' has no scalar to apply to"),
    (["physics.scalars=[{}]", "initial.scalars.name=blob"], r"^initial\.scalars\.name = 'blob' is unknown"),
])
def test_bad_scalar_config_is_one_line_naming_the_entry(overrides, message):
    with pytest.raises(ConfigError, match=message) as err:
        C.load(None, overrides)
    assert "\n" not in str(err.value)


def test_the_reference_documents_each_key_of_an_entry():
    rows = set(re.findall(r"^\| `([^`]+)` \|", C.config_docs(), re.MULTILINE))
    assert {"physics.scalars", "physics.scalars[].diffusivity", "physics.scalars[].mean_gradient",
            "initial.scalars.name", "initial.scalars.seed"} <= rows


# ---- exact solutions and signs ---------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_a_uniform_flow_carries_the_scalars_exactly(case):
    """u = U is an exact solution (no vorticity, no pressure); each scalar mode moves with it and decays
    as exp(-kappa k^2 t), and the mean of theta_i changes at the rate -U . G_i of its mean gradient."""
    sim = ns(case)
    x, y, z = grid()
    U = np.array([0.3, -0.2, 0.1])

    def theta(t):
        sx, sy, sz = x - U[0] * t, y - U[1] * t, z - U[2] * t
        # modes with |k|^2 = 5 and 10 (kappa_0 = 0.05), and 6 (kappa_1 = 0.02) on a mean of 0.3
        first = np.exp(-0.05 * 5 * t) * np.cos(2 * sx + sy) + 0.5 * np.exp(-0.05 * 10 * t) * np.sin(3 * sz - sx)
        second = np.exp(-0.02 * 6 * t) * np.sin(sx + 2 * sy - sz) + 0.3
        means = [-t * U @ np.array(s["mean_gradient"]) for s in SCALARS]
        return np.stack([first + means[0], second + means[1]])

    u = np.broadcast_to(U[:, None, None, None], (3, N, N, N))
    state = sim.state_from_fields(velocity=u, scalar=theta(0.0))
    end = advance(sim, state, 0.01, 50, sim.parameters(viscosity=0.01))
    got = sim.fields(end, "velocity", "scalar")
    assert relative_error(sim.to_numpy(got["velocity"]), u) < 1e-13
    assert relative_error(sim.to_numpy(got["scalar"]), theta(0.5)) < 1e-10


def test_the_sign_of_advection_and_of_the_mean_gradient_source(devices):
    """u = (sin y, 0, sin x), theta_0 = cos x with G_0 = (0, 0, g), theta_1 = sin z with G_1 = (1, 0, 0):
    d theta_0/dt = -u . grad theta_0 - u . G_0 = sin x sin y - g sin x and d theta_1/dt = -sin x cos z - sin y
    pointwise (kappa = 0): a flipped sign, a missing term or one applied to the other scalar fails."""
    sim = ns()
    x, y, z = grid()
    u = np.stack([np.sin(y), 0 * x, np.sin(x)])
    state = sim.state_from_fields(velocity=u, scalar=np.stack([np.cos(x), np.sin(z)]))
    g = 0.7
    p = sim.parameters(scalars=[{"diffusivity": 0.0, "mean_gradient": [0, 0, g]},
                                {"diffusivity": 0.0, "mean_gradient": [1, 0, 0]}])
    rate = sim.to_numpy(sim.fft.irfft(jax.jit(lambda e, s, p: e.nonlinear(s, 0.0, p))(sim.equation, state, p)))
    np.testing.assert_allclose(rate[3], np.sin(x) * np.sin(y) - g * np.sin(x), atol=1e-13)
    np.testing.assert_allclose(rate[4], -np.sin(x) * np.cos(z) - np.sin(y), atol=1e-13)
    np.testing.assert_allclose(rate[2], -np.sin(y) * np.cos(x), atol=1e-13)  # the flow's own term, unchanged


def test_the_variance_budget_of_each_scalar(devices):
    """d<theta'^2>/dt = -2 |G| flux - chi at t = 0 (central differences of one step each way), and
    the diagnostics equal their real-space definitions."""
    sim = ns()
    h = 3e-5
    p = sim.parameters(viscosity=0.02, scalars=[{"diffusivity": 0.002}, {"diffusivity": 0.001}])
    state = sim.initial_state(RANDOM)
    d0, plus, minus = (sim.diagnostics(s, h, p) for s in (state, advance(sim, state, h, 1, p),
                                                            advance(sim, state, -h, 1, p)))
    f = {k: sim.to_numpy(v) for k, v in sim.fields(state, "velocity", "scalar").items()}
    for i, s in enumerate(SCALARS):
        g = np.array(s["mean_gradient"])
        theta = f["scalar"][i] - f["scalar"][i].mean()
        assert float(d0[f"scalar{i}_variance"]) == pytest.approx(np.mean(theta**2), rel=1e-12)
        flux = np.mean(np.tensordot(g / np.linalg.norm(g), f["velocity"], 1) * theta)
        assert float(d0[f"scalar{i}_flux"]) == pytest.approx(flux, rel=1e-12)
        rate = (float(plus[f"scalar{i}_variance"]) - float(minus[f"scalar{i}_variance"])) / (2 * h)
        expected = -2 * np.linalg.norm(g) * flux - float(d0[f"scalar{i}_dissipation"])
        # to 1e-8 of the budget's larger term: the two terms can nearly cancel (scalar 1 here: 0.0375 and
        # 0.0358), and the difference quotient errs by ~1e-10 absolute (h^2 truncation, then round-off)
        terms = max(abs(2 * np.linalg.norm(g) * flux), float(d0[f"scalar{i}_dissipation"]))
        assert abs(rate - expected) < 1e-8 * terms, (i, rate, expected)
        assert abs(2 * np.linalg.norm(g) * flux) > 0.05 * float(d0[f"scalar{i}_dissipation"])  # both terms matter



def test_the_scalar_diagnostics_leave_out_the_mean_in_closed_form(devices):
    """theta_0 = 2 + sin x carried by u = (0, 0, sin x) (G along z): the mean is kept by the state and left out of
    the statistics, <theta'^2> = 1/2 (not 4 + 1/2), the flux <w theta'> = 1/2, the dissipation
    2 kappa <|grad theta|^2> = kappa."""
    sim = ns()
    x = np.broadcast_to(np.arange(N)[:, None, None] * 2 * np.pi / N, (N,) * 3)
    theta = np.stack([2 + np.sin(x), np.sin(x)])
    state = sim.state_from_fields(velocity=np.stack([0 * x, 0 * x, np.sin(x)]), scalar=theta)
    assert sim.to_numpy(sim.fields(state, "scalar")["scalar"])[0].mean() == pytest.approx(2.0, rel=1e-14)
    d = sim.report(state, 0.01)
    assert d["scalar0_variance"] == pytest.approx(0.5, rel=1e-13)
    assert d["scalar0_flux"] == pytest.approx(0.5, rel=1e-13)
    assert d["scalar0_dissipation"] == pytest.approx(SCALARS[0]["diffusivity"], rel=1e-13)

# ---- initial fields ---------------------------------------------------------------------------------------


def test_random_scalars_have_their_rms_spectrum_and_seeds(devices):
    sim = ns()
    state = sim.initial_state({"name": "random", "scalars": {"name": "random", "amplitude": 0.5, "k_peak": 3.0}})
    theta = sim.to_numpy(sim.fields(state, "scalar")["scalar"])
    np.testing.assert_allclose(np.sqrt(np.mean(theta**2, axis=(1, 2, 3))), 0.5, rtol=1e-12)
    assert np.max(np.abs(theta.mean(axis=(1, 2, 3)))) < 1e-14
    assert np.abs(np.corrcoef(theta[0].ravel(), theta[1].ravel())[0, 1]) < 0.2  # two different draws
    spectrum = np.asarray(sim.spectra(state)["scalar0_variance"])
    assert np.argmax(spectrum) in (2, 3, 4) and spectrum.sum() == pytest.approx(0.25, rel=1e-12)
    # scalar 0 is the same whatever the number of scalars, and zero is zero
    ic = sim.cfg.initial.scalars.__class__(name="random", amplitude=0.5, k_peak=3.0)
    alone = jax.jit(lambda eq: terms.initial_fields(eq.ops, ic, 1))(sim.equation)
    assert relative_error(sim.to_numpy(alone)[0], theta[0]) < 1e-14
    assert np.all(sim.to_numpy(sim.fields(sim.initial_state({"name": "abc"}), "scalar")["scalar"]) == 0)


@pytest.mark.parametrize("case", distributed_cases(), ids=case_id)
def test_distributed_equals_single_device(case):
    """50 RK4 steps of random flow and scalars with mean gradients: every decomposition equals one device
    to 1e-12 (the random initial fields included)."""
    results = []
    for c in (("single", 1, None), case):
        sim = ns(c)
        state = sim.initial_state(RANDOM)
        end = advance(sim, state, 0.01, 50, sim.parameters(viscosity=0.01))
        results.append({k: sim.to_numpy(v) for k, v in sim.fields(end, "velocity", "scalar").items()})
    for name in ("velocity", "scalar"):
        assert relative_error(results[1][name], results[0][name]) < 1e-12, name


def test_states_and_fields_by_name(devices):
    sim = ns()
    assert sim.equation.field_info["scalar"].components == 2 and sim.equation.state_fields == ("velocity", "scalar")
    with pytest.raises(KeyError, match="builds a state from scalar, velocity; got velocity"):
        sim.state_from_fields(velocity=np.zeros((3, N, N, N)))
    with pytest.raises(ValueError, match=r"scalar has shape \(1, 16, 16, 16\); this grid needs \(2, 16, 16, 16\)"):
        sim.state_from_fields(velocity=np.zeros((3, N, N, N)), scalar=np.zeros((1, N, N, N)))
    with pytest.raises(ValueError, match=r"navier_stokes\.scalars has 2 entries"):
        sim.parameters(scalars=[{"diffusivity": 1.0}])
    plain = shared(grid__shape=N)  # without scalars there is no scalar field at all
    assert "scalar" not in plain.equation.field_info and plain.equation.state_fields == ("velocity",)
    with pytest.raises(KeyError, match="'scalar' is not a field of navier_stokes; they are: velocity, vorticity"):
        plain.fields(plain.initial_state(), "scalar")


# ---- a run through the CLI, its outputs and plots ----------------------------------------------------------


@pytest.mark.slow
def test_scalar_turbulence_runs_writes_and_plots(tmp_path):
    """configs/scalar_turbulence.yaml (small), run as ``simulator run`` does: per-scalar columns and
    spectra, the budget's spectra, a stacked snapshot (n, Nx, Ny, Nz) that ParaView reads as one array
    of n components, a restart comparison that sees the list of scalars, and the figures."""
    cfg = simulator.load_config(ROOT / "configs" / "scalar_turbulence.yaml", {
        "grid.shape": 16, "precision": "float64", "time.t_end": 0.4, "time.cfl": None, "output.chunk": 5,
        "output.snapshots.at_end": True, "runtime.cpu_devices": 8})
    run = tmp_path / "run"
    assert simulator.run_config(cfg, run) == 0
    series = read_timeseries(run / "timeseries.csv")
    for i in (0, 1):
        assert {f"scalar{i}_variance", f"scalar{i}_dissipation", f"scalar{i}_flux"} <= set(series)
        assert series[f"scalar{i}_variance"][0] == 0 and series[f"scalar{i}_variance"][-1] > 0  # fed by -u.G
    table = read_spectra(run / "spectra.h5")
    assert {"energy", "transfer_energy", "injection_energy", "scalar0_variance", "transfer_scalar1_variance",
            "production_scalar1_variance"} <= set(table)
    np.testing.assert_allclose(table["scalar1_variance"][:, 1:].sum(axis=1), series["scalar1_variance"], rtol=1e-10,
                               atol=1e-30)
    assert np.max(np.abs(table["transfer_energy"].sum(axis=1))) < 1e-12 * np.max(np.abs(table["transfer_energy"]))
    with h5py.File(run / "spectra.h5") as f:  # each member of a declared family is described
        assert f["transfer_scalar1_variance"].attrs["description"].startswith("transfer T_theta(k)")
    with Snapshot(sorted((run / "snapshots").glob("s*.h5"))[-1]) as snap:
        assert snap.read("scalar").shape == (2, 16, 16, 16)
        assert snap.read("scalar", (1, slice(None), 3)).shape == (16, 16)
        assert 'AttributeType="Matrix"' in snap.path.with_suffix(".xdmf").read_text()
    # a restart compares the physics it was written with, scalars entry by entry
    stored = yaml.safe_load((run / "config.yaml").read_text())["config"]
    assert restart.physics_changes(stored, cfg) == []
    for change in ({"physics.scalars[1].diffusivity": 0.01}, {"physics.scalars": [{}]}):
        assert restart.physics_changes(stored, simulator.load_config(cfg_dict(cfg), change)) == ["physics.scalars"]
    # its last state on a finer grid (initial.name: file, from the checkpoint and from the snapshot): the
    # scalars come along, zero-padded, so their variances and the energy are the run's last ones
    finer = simulation(jax.devices(), ("slab", 2, None), grid__shape=24,
                       physics__scalars=cfg_dict(cfg)["physics"]["scalars"])
    finer.scratch = tmp_path
    for source in (run, sorted((run / "snapshots").glob("s*.h5"))[-1]):
        d = finer.report(finer.state_from_file(source))
        for name in ("energy", "scalar0_variance", "scalar1_variance"):
            assert d[name] == pytest.approx(series[name][-1], rel=1e-10), (source.name, name)
    written = plots.plot(run, field="scalar")
    assert [p.name for p in written] == ["timeseries.png", "budget.png", "spectra.png", "spectra_scalar0_variance.png",
                                         "spectra_scalar1_variance.png", "spectra_compensated.png", "flux.png",
                                         "slice_scalar.png"]
    assert all(png_size(p) == plots.PIXELS for p in written)


def test_scalar_spectra_add_up_to_the_diagnostics(devices):
    """Shell sums are a partition: the variance spectrum and the production add up to the diagnostics."""
    sim = ns()
    state = sim.initial_state(RANDOM)
    spectra = {k: np.asarray(v) for k, v in sim.spectra(state).items()}
    d = sim.report(state)
    assert spectra["energy"].sum() == pytest.approx(d["energy"], rel=1e-12)
    for i in range(2):
        assert spectra[f"scalar{i}_variance"][1:].sum() == pytest.approx(d[f"scalar{i}_variance"], rel=1e-12)
        g = np.linalg.norm(SCALARS[i]["mean_gradient"])
        production = spectra[f"production_scalar{i}_variance"].sum()
        assert production == pytest.approx(-2 * g * d[f"scalar{i}_flux"], rel=1e-10)
