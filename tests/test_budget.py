"""The spectral energy budget of Navier-Stokes and of its passive scalars (float64), on every backend.

T(k), the rate of change of a spectrum by the nonlinear terms (``transfer_<quantity>``), must move
energy and scalar variance between shells and create none (sum_k T(k) = 0 to round-off, inviscid and
unforced, computed without gathering), and every shell must obey its budget,
dE(k)/dt = T(k) - 2 nu k^2 E(k) + F(k) (and dE_theta/dt = T + P - 2 kappa k^2 E_theta for a scalar),
checked by central differences in time at t = 0, with and without forcing, and with hyperviscosity
(- 2 nu_p k^(2p) E(k) more in the energy's). The simulations are those of tests/test_scalars.py (shared
for the session).
"""

import functools

import h5py
import jax.numpy as jnp
import numpy as np
import pytest
import yaml
from test_scalars import RANDOM, SCALARS, N, ns

import simulator
from simulator import plots
from simulator.fft.check import collective_counts
from simulator.observables import spectra as shells

from support import advance, backend_cases, case_id, shared

CASES = backend_cases()


@functools.cache
def random_fields():
    """The real-space fields of the RANDOM initial condition (from one device: a state is then made of
    them on each backend without compiling its builder again)."""
    sim = ns()
    return {k: sim.to_numpy(v) for k, v in sim.fields(sim.initial_state(RANDOM), "velocity", "scalar").items()}


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_transfers_sum_to_zero_without_gathering(case):
    """sum_k T(k) = 0 for the energy and for each scalar's variance (the dealiased nonlinear terms conserve
    them): here to 1e-13 of sum_k |T(k)|. The shell sums are all-reduces: nothing is gathered."""
    sim = ns(case)
    state = sim.state_from_fields(**random_fields())
    table = {k: np.asarray(v) for k, v in sim.spectra(state).items()}
    for name in ("transfer_energy", "transfer_scalar0_variance", "transfer_scalar1_variance"):
        assert abs(table[name].sum()) < 1e-13 * np.abs(table[name]).sum(), name
        assert np.abs(table[name]).sum() > 1e-3 * table[name.removeprefix("transfer_")].sum()  # it transfers
    if case[1] > 1:
        # Simulation.spectra's program
        text = sim.lower("spectra", state, sim.time_array(0.0), sim.scalar(0.01)).compile().as_text()
        assert collective_counts(text)["all-gather"] == 0


def shell_budget(sim, state, params, h):
    """Per budgeted spectrum (the energy, each scalar's variance): (dE(k)/dt by central differences of
    one step each way, the right-hand side T - 2 (nu k^2 + nu_p k^(2p)) E + F (+ P) at t = 0, T), the
    hyperviscous term alone; and the spectra at t = 0."""
    eq = sim.equation
    now, plus, minus = (sim.spectra(s, params=params) for s in (state, advance(sim, state, h, 1, params),
                                                                  advance(sim, state, -h, 1, params)))
    u_hat, theta_hat = eq.split(state)
    k2 = eq.ops.k[0] ** 2 + eq.ops.k[1] ** 2 + eq.ops.k[2] ** 2
    k2_norm = eq.ops.weight * k2 / float(eq.fft.size) ** 2

    def shell(power):
        return np.asarray(shells.shell_sum(power, eq.ops.k, eq.fft.shape, eq.box))

    # 2 nu_p k^(2p) E(k), mode by mode
    order = eq.physics.hyperviscosity_order
    hyper = (params["hyperviscosity"] * shell(k2_norm * k2 ** (order - 1) * jnp.abs(u_hat) ** 2) if order
             else np.zeros(shell(k2_norm).shape))
    rhs = {"energy": now["transfer_energy"] + now.get("injection_energy", 0.0)
           - params["viscosity"] * shell(k2_norm * jnp.abs(u_hat) ** 2) - hyper}  # 2 nu k^2 E(k), mode by mode
    for i, s in enumerate(params["scalars"]):
        name = f"scalar{i}_variance"
        rhs[name] = (now[f"transfer_{name}"] + now[f"production_{name}"]
                     - 2 * s["diffusivity"] * shell(k2_norm * jnp.abs(theta_hat[i]) ** 2))
    rates = {name: ((np.asarray(plus[name]) - np.asarray(minus[name])) / (2 * h), np.asarray(expected),
                    np.asarray(now[f"transfer_{name}"])) for name, expected in rhs.items()}
    return rates, hyper, now


@pytest.mark.parametrize("forcing,hyperviscosity", [("none", 0.0), ("band", 0.0), ("none", 1e-6)])
def test_each_shell_obeys_its_budget(devices, forcing, hyperviscosity):
    """dE(k)/dt = T(k) - 2 (nu k^2 + nu_p k^(2p)) E(k) + F(k), and for each scalar dE_theta(k)/dt = T(k) +
    P(k) - 2 kappa k^2 E_theta(k), shell by shell at t = 0 (one step of +-h each way), to 2e-8 of the
    largest rate; T matters in the balance (a flipped or missing transfer fails), and so does the
    hyperviscous term when there is one. The shells add up to the diagnostics: dE/dt = P - epsilon."""
    sim = shared(grid__shape=N, physics__scalars=SCALARS, time__integrator="lsrk4",
                 **({"physics__hyperviscosity_order": 4} if hyperviscosity else {"physics__forcing": forcing}))
    params = sim.parameters(viscosity=0.02, hyperviscosity=hyperviscosity, forcing_power=0.05,
                            scalars=[{"diffusivity": 0.005}, {"diffusivity": 0.002}])
    state = sim.initial_state(RANDOM)
    rates, hyper, now = shell_budget(sim, state, params, h=3e-5)
    for name, (measured, expected, transfer) in rates.items():
        scale = np.abs(expected).max()
        assert np.abs(measured - expected).max() < 2e-8 * scale, (name, np.abs(measured - expected).max() / scale)
        assert np.abs(transfer).max() > 0.1 * scale, name
    scale = np.abs(rates["energy"][1]).max()
    assert np.abs(hyper).max() > 0.1 * scale if hyperviscosity else not hyper.any()
    d = sim.diagnostics(state, 3e-5, params)
    balance = float(d.get("injection", 0.0) - d["dissipation"])
    assert rates["energy"][0].sum() == pytest.approx(balance, abs=2e-8 * scale)
    if forcing == "band":
        assert float(jnp.sum(now["injection_energy"])) == pytest.approx(0.05, rel=1e-12)  # the injected power
        assert np.abs(now["injection_energy"]).max() > 0.1 * np.abs(rates["energy"][1]).max()  # it matters too
    else:
        assert "injection_energy" not in now


def test_the_flux_figure_is_drawn_for_every_transfer_spectrum_by_name(tmp_path):
    """``simulator plot`` draws Pi(k) = -sum_{k' <= k} T(k') for any ``transfer_<quantity>`` in spectra.h5,
    whatever the equation (here a made-up quantity), its panel titled by the quantity's readable name, and no
    flux figure without one."""
    run = tmp_path / "run"
    run.mkdir()
    config = {"name": "budget", "grid": {"shape": [8, 8, 8], "box": [8.0, 8.0, 8.0]},
              "physics": {"name": "navier_stokes"}}
    (run / "config.yaml").write_text(yaml.safe_dump({"config": config}))
    k = np.arange(6.0)
    with h5py.File(run / "spectra.h5", "w") as f:
        f["k"], f["step"], f["time"] = k, np.array([0, 10]), np.array([0.0, 0.1])
        f["energy"] = np.ones((2, 6))
        f["transfer_magnetic_energy"] = np.array([[0, -1.0, -0.5, 0.75, 0.5, 0.25]] * 2)
    written = plots.plot(run)
    assert [p.name for p in written] == ["spectra.png", "spectra_compensated.png", "flux.png"]
    # its panel named as a reader says it, not by the column
    assert simulator.load_run(run).plot.flux().axes[0].get_title(loc="left") == "magnetic energy"
    with h5py.File(run / "spectra.h5", "a") as f:
        del f["transfer_magnetic_energy"]
    assert [p.name for p in plots.plot(run)] == ["spectra.png", "spectra_compensated.png"]


def test_every_mode_lands_in_its_shell_and_the_resolved_shells_are_whole_spheres():
    """Shell j of a box 2 pi x 4 pi x 2 pi (dk = 2 pi / max(L) = 1/2) holds the modes with round(|k| / dk) = j: the
    Parseval weights summed by shell_sum equal NumPy's count of the spectrum's modes per shell, every mode the
    grid holds in some shell (the corner of its cube of modes included). The resolved shells
    (simulator.output.spectra.resolved_shells) of a 24 x 48 x 24 grid in a 2 pi box under the 2/3 rule are
    0 < k <= (2/3) min_i pi N_i / L_i = 8: the mean's shell out, shell 8, which that bound lands on, in."""
    from simulator.output.spectra import resolved_shells

    shape, box = (8, 16, 8), (2 * np.pi, 4 * np.pi, 2 * np.pi)
    sim = shared(grid__shape=list(shape), grid__box=list(box), fft__layout="full")  # every mode held
    ops = sim.equation.ops
    counts = np.asarray(shells.shell_sum(ops.weight + 0 * (ops.k[0] + ops.k[1] + ops.k[2]), ops.k, shape, box))
    m = np.meshgrid(*(np.fft.fftfreq(n, 1 / n) for n in shape), indexing="ij")
    held = m[2] != -shape[2] / 2  # the real transform holds k_z = 0 .. N_z/2 - 1, each k_z > 0 for +-k_z
    index = np.rint(np.sqrt(sum((2 * np.pi / L * mi) ** 2 for mi, L in zip(m, box))) / 0.5).astype(int)[held]
    expected = np.bincount(index, minlength=counts.size)
    assert counts.size == expected.size == shells.shell_wavenumbers(shape, box).size
    assert counts.sum() == held.sum() and counts[0] == 1 and counts[2] == 14  # |k| = 1 and 1.12
    np.testing.assert_array_equal(counts, expected)
    grid = {"shape": [24, 48, 24], "box": [2 * np.pi] * 3}
    k_shells = shells.shell_wavenumbers(grid["shape"], grid["box"])
    keep = resolved_shells(k_shells, {"grid": grid}, simulator.equations.get("navier_stokes"))
    np.testing.assert_array_equal(k_shells[keep], np.arange(1.0, 9.0))
