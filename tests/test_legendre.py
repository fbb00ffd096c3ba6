"""The Legendre basis across no-slip plates (grid.walls.basis: legendre; simulator.walls.legendre, the ``legendre``
series of simulator.fft.walls): its points, transforms, derivatives and Galerkin Helmholtz solves against NumPy's
Legendre series and exact polynomial solutions; its distributed transform and transpose on one device and a slab of
2; and its runs against the exact Couette start-up and the Chebyshev runs' growth rate, float64."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.fft import BACKENDS, build_mesh
from simulator.fft.bases import Chebyshev, Legendre
from simulator.walls import channel, eigen, legendre

from support import advance, case_id, command, simulation

CASES = [("single", 1, None), ("slab", 2, None)]
legval, legder = np.polynomial.legendre.legval, np.polynomial.legendre.legder


def test_the_points_are_legendres_and_the_series_numpys():
    """The points are +-1 and the roots of L_N' (not the Chebyshev points); forward and backward are NumPy's
    Legendre series there, the derivative its legder, the plate slopes L_k'(+-1), the weights Gauss-Lobatto's
    (exact to degree 2N - 1), the integrals 2 for L_0 alone, the padded product NumPy's legmul truncated, a regrid's
    matrix exact for the kept degrees."""
    n = 13
    x = legendre.points(n)
    roots = np.sort(np.polynomial.legendre.Legendre.basis(n - 1).deriv().roots())
    np.testing.assert_allclose(x, np.concatenate([[-1.0], roots, [1.0]]), rtol=0, atol=2e-15)
    assert np.abs(Legendre(n, 2.0).points() - Chebyshev(n, 2.0).points()).max() > 1e-2
    c = np.random.default_rng(0).standard_normal(n)
    np.testing.assert_allclose(legendre.backward(jnp.asarray(c)), legval(x, c), rtol=0, atol=1e-14)
    np.testing.assert_allclose(legendre.forward(jnp.asarray(legval(x, c) + 1j * legval(x, 2 * c))), c + 2j * c,
                               rtol=0, atol=1e-14)
    # on [0, 3]: d/dz = (2/3) d/dx
    second = np.asarray(legendre.derivative(jnp.asarray(c), 3.0, 2))
    np.testing.assert_allclose(second, np.concatenate([legder(c, 2), [0, 0]]) * (2 / 3) ** 2, rtol=0, atol=1e-12)
    lower, upper = legendre.slopes(jnp.asarray(c), 3.0)
    np.testing.assert_allclose([lower, upper], legval([-1.0, 1.0], legder(c)) * 2 / 3, rtol=1e-14)
    assert legendre.weights(n, 3.0) @ legendre.points(n, (0.0, 3.0)) ** (2 * n - 3) == pytest.approx(
        3.0 ** (2 * n - 2) / (2 * n - 2), rel=1e-13)
    assert list(legendre.integrals(4)) == [2.0, 0.0, 0.0, 0.0]
    np.testing.assert_allclose(legendre.product(jnp.asarray(c), jnp.asarray(c)),
                               np.polynomial.legendre.legmul(c, c)[:n], rtol=0, atol=1e-13)
    # a restart on another grid (simulator.run.remap): a polynomial of the kept degrees moves between point sets exactly
    from simulator.fft.bases import resample_matrix

    for other in (9, 21):
        kept = np.where(np.arange(n) < min(n, other), c, 0.0)
        np.testing.assert_allclose(resample_matrix("legendre", n, other) @ legval(x, kept),
                                   legval(legendre.points(other), kept), rtol=0, atol=1e-13)


@pytest.mark.parametrize("condition", ["dirichlet", "neumann", ("dirichlet", "neumann"), ("neumann", "dirichlet")])
def test_the_galerkin_helmholtz_solve_is_exact_for_a_polynomial(condition):
    """(alpha - d^2/dz^2) u = f on [0, 2] with u's values or slopes at the plates, u = z^5 - 2 z^2 + 0.3 (degree 5
    < N = 11), one mode of each alpha: u to round-off (1e-14 of its largest value); the Dirichlet stiffness is
    diag(4k + 6), the mass has entries at k - j in {-2, 0, 2} alone (Shen 1994), both bases' stiffness diagonal."""
    n, height = 12, 2.0
    z = legendre.points(n, (0.0, height))
    u, slope = z**5 - 2 * z**2 + 0.3, lambda z: 5 * z**4 - 4 * z
    alpha = jnp.asarray([0.5, 3.0, 400.0])
    f = alpha[:, None] * u - (20 * z**3 - 4)
    lower, upper = (condition, condition) if isinstance(condition, str) else condition
    at = [u[0] if lower == "dirichlet" else slope(0.0), u[-1] if upper == "dirichlet" else slope(height)]
    solver = legendre.Helmholtz.build(alpha, n, condition, height)
    got = legendre.backward(solver.solve(legendre.forward(f), *at))
    np.testing.assert_allclose(got, np.broadcast_to(u, got.shape), rtol=0, atol=1e-14 * np.abs(u).max())
    for name in ("dirichlet", "neumann"):
        _, _, mass, stiffness = legendre.galerkin(n, name)
        gaps = np.abs(np.subtract.outer(np.arange(n - 2), np.arange(n - 2)))
        assert np.abs(stiffness[gaps != 0]).max() < 1e-13 * np.abs(stiffness).max()  # round-off of exact zeros
        assert np.abs(mass[(gaps != 0) & (gaps != 2)]).max() < 1e-15
    np.testing.assert_allclose(np.diag(legendre.galerkin(n, "dirichlet")[3]), 4 * np.arange(n - 2) + 6, rtol=1e-14)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_distributed_legendre_transform_and_its_transpose(devices, case):
    """forward_walls(x, "legendre") is NumPy's FFT along x by NumPy's Legendre coefficients along z, inverse_walls
    its inverse, and reverse-mode differentiation through it the dense transform's transpose."""
    name, n, _ = case
    cls = BACKENDS[name]
    shape = (1, 8, 10)
    fft = cls(shape, build_mesh(cls, None, devices[:n]), walls=True, basis="legendre")
    x = np.random.default_rng(1).standard_normal(shape)
    inverse = np.linalg.inv(np.polynomial.legendre.legvander(legendre.points(10), 9))
    expected = np.fft.fftn(np.einsum("kj,...j->...k", inverse, x), axes=(-3, -2))
    k = fft.forward_walls(jnp.asarray(x), "legendre")
    np.testing.assert_allclose(np.asarray(k), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(np.asarray(fft.inverse_walls(k, "legendre")), x, rtol=0, atol=1e-13)
    weights = np.random.default_rng(2).standard_normal(shape)
    grad = jax.grad(lambda y: jnp.sum(jnp.real(fft.forward_walls(y, "legendre")) * weights))(jnp.asarray(x))
    # d/dx of sum(Re(F_x C_z x) w) = C_z^T Re(F_x)^T w
    dense = np.einsum("kj,...k->...j", inverse, np.real(np.fft.ifftn(weights, axes=(-3, -2))) * 8)
    np.testing.assert_allclose(np.asarray(grad), dense, rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_couette_start_up_on_legendre_series_is_the_exact_series(devices, case):
    """The start-up of Couette flow (Re = 1, the plates set moving at t = 0) by RK222 at t = 0.5 on 32 Legendre
    points: the run's heights are the Legendre-Gauss-Lobatto points (not Chebyshev's: a run silently on the
    Chebyshev basis fails here), its mean flow there the exact series to Chebyshev's tolerance (2e-5 at dt = 0.01),
    the error falling by 4 (within 10%) when dt halves, as tests/test_channel2d.py's Chebyshev run does."""
    sim = simulation(devices, case, physics__name="channel", grid__shape=[4, 32], physics__drive="couette",
                     physics__reynolds=1.0, physics__plate_velocity=0.0, initial__name="laminar",
                     grid__walls__basis="legendre")
    heights = Legendre(32, 2.0).points()
    np.testing.assert_allclose(np.asarray(sim.equation.heights())[0, 0], heights, rtol=0, atol=1e-15)
    params = {**sim.params, "plate_velocity": np.float64(1.0)}
    exact = channel.couette_startup(heights - 1, 0.5, 1.0)
    errors = []
    for dt in (0.02, 0.01):
        state = advance(sim, sim.initial_state(), dt, round(0.5 / dt), params)
        errors.append(np.abs(np.asarray(sim.fields(state, "velocity")["velocity"])[0, 0, 0] - exact).max())
    assert errors[1] < 2e-5 and 3.6 < errors[0] / errors[1] < 4.4, errors


def growth_rate(devices, case, basis: str) -> float:
    """The kinetic energy's growth rate (halved) of the eigen-solver's mode at (Ra, k) = (2000, k_c) from amplitude
    1e-8 between no-slip plates, 20 steps of dt = 0.05 by RK222 on an 8 x 16 plane of ``basis``."""
    _, k_c = eigen.rayleigh_benard_onset()
    sim = simulation(devices, case, physics__name="convection", grid__shape=[8, 16], grid__box=[2 * math.pi / k_c, 1.0],
                     grid__walls__velocity=["no-slip", "no-slip"], grid__walls__basis=basis, initial__name="mode",
                     initial__amplitude=1e-8, physics__rayleigh=2000.0, time__integrator="rk222")
    state = sim.initial_state()
    before = float(sim.diagnostics(state, 0.05)["kinetic_energy"])
    state = advance(sim, state, 0.05, 20)
    return math.log(float(sim.diagnostics(state, 0.05)["kinetic_energy"]) / before) / 2.0


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_the_no_slip_growth_rate_on_legendre_series_is_the_chebyshev_runs(devices, case):
    """The growth rate of the no-slip onset's mode at Ra = 2000 on 16 Legendre points equals the Chebyshev run's to
    1e-8 relative (1.5e-9 measured: the two discretisations' difference at this resolution; the time error, 2e-4 of
    the rate, is the same scheme's in both) and the eigen-solver's to that time error."""
    rates = [growth_rate(devices, case, basis) for basis in ("legendre", "chebyshev")]
    assert rates[0] == pytest.approx(rates[1], rel=1e-8)
    _, k_c = eigen.rayleigh_benard_onset()
    assert rates[0] == pytest.approx(eigen.rayleigh_benard_growth(2000.0, 1.0, k_c)[0], rel=2e-4)


def test_the_command_line_takes_the_legendre_basis_and_refuses_another_name(capfd):
    """`simulator validate` takes grid.walls.basis=legendre between no-slip plates (exit 0, the basis in the
    resolved config); an unknown basis is one line naming the key, the value and the choices, exit 2."""
    status, out, _ = command(capfd, "validate", "configs/channel_couette.yaml", "--set", "grid.walls.basis=legendre")
    assert status == 0 and "basis: legendre" in out
    status, _, err = command(capfd, "validate", "configs/channel_couette.yaml", "--set", "grid.walls.basis=jacobi")
    assert status == 2
    line = err.strip()
    assert "\n" not in line and "grid.walls.basis" in line and "jacobi" in line and "legendre" in line, line


def test_a_channels_statistics_on_legendre_points_are_exact_for_laminar_poiseuille_flow():
    """channel_statistics of samples on the Legendre points (basis legendre): the bulk velocity 2/3, the wall stress
    2 nu at each plate and the total shear stress -G y, exactly; read as Chebyshev points they are not."""
    from simulator.walls import bases
    from simulator.walls.channel_stats import channel_statistics

    nu, y = 1e-2, legendre.points(17)
    samples = np.zeros((2, 2, 4, y.size))
    samples[:, 0] = channel.poiseuille(y)
    stats = channel_statistics(samples, nu, (2 * math.pi,), pressure_gradient=2 * nu, basis=bases.of("legendre"))
    assert stats.bulk_velocity == pytest.approx(2 / 3, rel=1e-14)
    assert stats.tau_bottom == pytest.approx(2 * nu, rel=1e-12) and stats.tau_top == pytest.approx(2 * nu, rel=1e-12)
    np.testing.assert_allclose(stats.total_shear_stress, -2 * nu * y, atol=1e-15)
    assert abs(channel_statistics(samples, nu, (2 * math.pi,)).bulk_velocity - 2 / 3) > 1e-3


@pytest.mark.parametrize(("walls", "temperature", "k"), [(("no-slip", "free-slip"), ("fixed-value",) * 2, None),
                                                         (("no-slip", "no-slip"), ("fixed-value", "fixed-flux"), 2.5)],
                         ids=["free-surface", "value-flux"])
def test_mixed_plates_grow_on_legendre_series_as_on_chebyshev_series(walls, temperature, k):
    """The flow core (simulator.walls.flow) on each basis, 33 points, from the same polynomial (the eigen-solver's
    mode 1e-3 above its marginal Rayleigh number, mixed plates: a free surface above a no-slip plate, a fixed flux
    above a fixed temperature), 40 RK222 steps of 0.05: the growth rates of theta at mid-height agree to 1e-9
    relative (6e-12 and 1e-10 measured: the bases' difference at this resolution; the time error, the same scheme's,
    is 2e-3) and the plates' conditions hold on the Legendre series to round-off."""
    from simulator.time import imex
    from simulator.walls import bases, chebyshev, flow

    n = 33
    if k is None:
        _, k = eigen.rayleigh_benard_onset(walls, temperature=temperature)
    ra = eigen.rayleigh_number(k, walls, temperature=temperature) * (1 + 1e-3)
    _, _, w, b = eigen.rayleigh_benard_growth(ra, 1.0, k, walls, temperature=temperature)
    rates = []
    for basis in (bases.of("legendre"), bases.of("chebyshev")):
        # the Chebyshev series of the eigen-solver's mode, truncated to n terms, at the basis's points
        at = 2 * basis.points(n, (0.0, 1.0)) - 1
        w_hat, b_hat = (basis.forward(jnp.asarray(np.polynomial.chebyshev.chebval(
            at, np.asarray(chebyshev.forward(jnp.asarray(v)))[:n]))) for v in (w, b))
        start = flow.State(w_hat[None], jnp.zeros((1, n)), jnp.zeros((2, n)), b_hat[None, None])
        core = flow.NoSlipFlow(jnp.asarray([k]), jnp.asarray([0.0]), n, 1.0, ra**-0.5, (ra**-0.5,),
                               flow.Plates(scalars=(temperature,), values=((0.0, 0.0),), walls=walls), basis=basis)
        step = jax.jit(core.step(lambda x, t: flow.buoyancy(core, x), 0.05, imex.RK222))
        end = jax.lax.fori_loop(0, 40, lambda i, x: step(x, i * 0.05), start)
        # theta at mid-height, a functional of the series the same in both bases (x = 0 on [-1, 1])
        middle = (np.polynomial.legendre.legval if basis.name == "legendre" else np.polynomial.chebyshev.chebval)
        rates.append(np.log(middle(0.0, np.asarray(end.scalars[0, 0])) / middle(0.0, np.asarray(
            start.scalars[0, 0]))) / 2.0)
        if basis.name == "legendre":
            scale = np.abs(np.asarray(end.w)).max()
            for plate, wall in enumerate(walls):
                assert abs(float(basis.boundary_values(end.w)[plate][0])) < 1e-13 * scale
                if wall == "no-slip":
                    assert abs(float(basis.slopes(end.w, 1.0)[plate][0])) < 1e-12 * scale
                theta = end.scalars[0, 0] if temperature[plate] == "fixed-value" else basis.derivative(
                    end.scalars[0, 0], 1.0)
                assert abs(float(basis.boundary_values(theta)[plate])) < 1e-11 * scale
    assert rates[0] == pytest.approx(rates[1], rel=1e-9) and rates[0] > 0
