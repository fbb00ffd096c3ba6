"""The no-slip direction's numerics (simulator/walls/), in float64 against exact answers: the Chebyshev transforms,
derivatives, products and weights; the banded Helmholtz and wall-normal velocity solves; the IMEX scheme's order;
a Stokes mode between plates; and the eigenvalue solvers against the published values."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import scipy.fft
from numpy.polynomial import chebyshev as series

from simulator.time import imex, multistep
from simulator.walls import banded, chebyshev, eigen
from simulator.walls.helmholtz import DIRICHLET, NEUMANN, Helmholtz
from simulator.walls.wall_normal import WallNormal, horizontal_velocity, laplacian

RNG = np.random.default_rng(92)
LENGTH = 3.0  # an interval other than [-1, 1]: [0, 3]


def x_of(z):
    return (2 * z - LENGTH) / LENGTH


@pytest.mark.parametrize("n", [9, 16])
def test_transforms_round_trip_and_equal_scipys_dct(n):
    """Values -> coefficients -> values is the identity to round-off, real and complex, batched over leading axes;
    the forward transform is scipy's DCT-I of the values from the top plate down, scaled; a random series'
    values are numpy's."""
    values = RNG.standard_normal((3, 2, n)) + 1j * RNG.standard_normal((3, 2, n))
    assert np.abs(chebyshev.backward(chebyshev.forward(values)) - values).max() < 1e-14
    real = values.real
    ends = np.ones(n)
    ends[[0, -1]] = 2
    expected = scipy.fft.dct(real[..., ::-1], type=1, axis=-1) / ((n - 1) * ends)
    assert np.abs(chebyshev.forward(real) - expected).max() < 1e-14
    a = RNG.standard_normal(n)
    z = chebyshev.points(n, (0.0, LENGTH))
    assert z[0] == 0.0 and z[-1] == LENGTH and np.all(np.diff(z) > 0)
    assert np.abs(chebyshev.backward(a) - series.chebval(x_of(z), a)).max() < 1e-13


@pytest.mark.parametrize("n", [8, 13])
def test_derivatives_of_polynomials_are_exact(n):
    a = RNG.standard_normal((2, n))
    for order in (1, 2, 3):
        exact = series.chebder(a, order, scl=2 / LENGTH, axis=-1)
        got = chebyshev.derivative(jnp.asarray(a), LENGTH, order)
        assert np.abs(got[..., :n - order] - exact).max() < 1e-12 * np.abs(exact).max()
        assert np.all(got[..., n - order:] == 0)


def test_products_are_dealiased_exactly_and_weights_integrate():
    """The 3/2-padded product keeps the exact product's first n coefficients; the Clenshaw-Curtis weights
    integrate a polynomial of degree n - 1 exactly and the plates' values are the series' ends."""
    n = 11
    a, b = RNG.standard_normal((2, n))
    assert chebyshev.padded_size(n) == 17
    assert np.abs(chebyshev.product(a, b) - series.chebmul(a, b)[:n]).max() < 1e-14
    z = chebyshev.points(n, (0.0, LENGTH))
    integral = series.chebint(a, lbnd=-1) * LENGTH / 2
    assert abs(chebyshev.weights(n, LENGTH) @ series.chebval(x_of(z), a) - series.chebval(1.0, integral)) < 1e-13
    lower, upper = chebyshev.boundary_values(a)
    assert np.allclose([lower, upper], series.chebval([-1.0, 1.0], a), rtol=0, atol=1e-14)


def _polynomial_problem(n, alpha, condition):
    """A random polynomial u of degree N (three of them), f = alpha u - u'', and its plates' data (``condition``
    one for both plates or a (lower, upper) pair)."""
    u = RNG.standard_normal((3, n))
    second = np.concatenate([series.chebder(u, 2, scl=2 / LENGTH, axis=-1), np.zeros((3, 2))], -1)
    slope = series.chebder(u, 1, scl=2 / LENGTH, axis=-1)
    lower_c, upper_c = (condition, condition) if isinstance(condition, str) else condition
    lower = series.chebval(-1.0, (u if lower_c == DIRICHLET else slope).T)
    upper = series.chebval(1.0, (u if upper_c == DIRICHLET else slope).T)
    return u, alpha * u - second, lower, upper


@pytest.mark.parametrize("condition", [DIRICHLET, NEUMANN, (DIRICHLET, NEUMANN), (NEUMANN, DIRICHLET)],
                         ids=["dirichlet", "neumann", "dirichlet-neumann", "neumann-dirichlet"])
@pytest.mark.parametrize("alpha", [0.0, 3.0, 1e4, 1e9])
def test_helmholtz_is_exact_for_polynomials(condition, alpha):
    """(alpha - d^2/dz^2) u = f with u or du/dz given at each plate (the same at both, or mixed: a value at one
    plate and a slope at the other, by the Dirichlet factors and one influence function): exact to round-off for a
    polynomial of degree N, from the Stokes-like alpha = 0 (Neumann at both plates takes alpha > 0) to an implicit
    stage's 1/(gamma dt nu). Round-off here is the machine epsilon times N^2, the condition of a second derivative
    on N + 1 points (the right-hand side of a random polynomial of degree 32 is 10^4 times the solution)."""
    if condition == NEUMANN and alpha == 0.0:
        alpha = 0.5
    n = 33
    u, f, lower, upper = _polynomial_problem(n, alpha, condition)
    # one program (op by op, each operation of the build and the solve would compile and be cached apart)
    got = jax.jit(lambda f, lower, upper: Helmholtz.build(np.full(3, alpha), n, condition, LENGTH).solve(
        f, lower, upper))(jnp.asarray(f), lower, upper)
    assert np.abs(got - u).max() < 32 * np.finfo(float).eps * n**2 * np.abs(u).max()


@pytest.mark.parametrize("condition", [DIRICHLET, NEUMANN, (DIRICHLET, NEUMANN), (NEUMANN, DIRICHLET)],
                         ids=["dirichlet", "neumann", "dirichlet-neumann", "neumann-dirichlet"])
def test_helmholtz_converges_to_a_smooth_solution(condition):
    """u = cos(5 z) + z^2 exp(z) on [0, 3]: the grid values of the solve agree with it to round-off at N = 48."""
    n, alpha = 49, 7.0
    z = chebyshev.points(n, (0.0, LENGTH))
    u = np.cos(5 * z) + z**2 * np.exp(z)
    du = -5 * np.sin(5 * z) + (2 * z + z**2) * np.exp(z)
    d2u = -25 * np.cos(5 * z) + (2 + 4 * z + z**2) * np.exp(z)
    lower_c, upper_c = (condition, condition) if isinstance(condition, str) else condition
    lower = (u if lower_c == DIRICHLET else du)[0]
    upper = (u if upper_c == DIRICHLET else du)[-1]
    got = jax.jit(lambda f: chebyshev.backward(Helmholtz.build(alpha, n, condition, LENGTH).solve(
        chebyshev.forward(f), lower, upper)))(jnp.asarray(alpha * u - d2u))
    assert np.abs(got - u).max() < 1e-11 * np.abs(u).max()


def _largest_intermediate(jaxpr) -> int:
    """The largest array any equation of ``jaxpr`` (and of the programs inside it: scans' bodies) makes."""
    largest = 0
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            largest = max(largest, int(np.prod(getattr(var.aval, "shape", ()))))
        for param in eqn.params.values():
            inner = getattr(param, "jaxpr", None)
            if inner is not None:
                largest = max(largest, _largest_intermediate(getattr(inner, "jaxpr", inner)))
    return largest


@pytest.mark.parametrize("n", [64, 257])
def test_the_solves_store_and_make_nothing_quadratic_in_n(n):
    """Work and storage linear in N per mode, asserted by structure: every stored array of the Helmholtz and
    wall-normal solvers holds O(N) numbers per mode (banded factors of four and five diagonals, two homogeneous
    solutions), and no array that solving or factoring makes, inside its scans included, has N^2 entries per mode."""
    modes = 6
    alpha, k2 = np.linspace(1.0, 50.0, modes), np.linspace(0.0, 9.0, modes)
    helmholtz = Helmholtz.build(alpha, n, DIRICHLET)
    half = banded.padded((n - 1) // 2)  # rows k = 2..N of each parity, padded to the sweeps' trips
    assert helmholtz.factors.upper.shape == (half, modes, 2, 4)  # rows first, the order the solves read them
    assert helmholtz.factors.multipliers.shape == helmholtz.factors.swapped.shape == (half, modes, 2)
    solver = WallNormal.build(alpha, k2, n)
    stored = sum(leaf.size for leaf in jax.tree.leaves(solver))
    assert stored <= 30 * n * modes
    f = jnp.ones((modes, n), complex)
    for program, argument in ((solver.solve, f), (lambda a: WallNormal.build(a, k2, n), jnp.asarray(alpha))):
        assert _largest_intermediate(jax.make_jaxpr(program)(argument).jaxpr) <= 8 * n * modes


def _random_bands(rng, n, batch):
    """Random banded matrices (one sub-diagonal, two super-diagonals) ``(batch, n, 4)`` and their dense form."""
    bands = rng.standard_normal((batch, n, 4))
    dense = np.zeros((batch, n, n))
    for i in range(n):
        for d in range(4):
            if 0 <= i - 1 + d < n:
                dense[:, i, i - 1 + d] = bands[:, i, d]
    return bands, dense


@pytest.mark.parametrize("n", [30, 31])
def test_banded_solve_with_pivoting_matches_a_dense_solve(n):
    """One sub-diagonal, two super-diagonals, random (rows where the sub-diagonal is the larger need the
    interchange): the same solution as numpy's dense solve, complex right-hand sides, a batch of matrices; an odd
    count padded to the sweeps' trips by an identity row."""
    batch, rng = 4, np.random.default_rng(n)  # its own draws, whatever order the tests run in
    bands, dense = _random_bands(rng, n, batch)
    rhs = rng.standard_normal((batch, n)) + 1j * rng.standard_normal((batch, n))
    factors = banded.factor(jnp.asarray(bands))
    rows = np.concatenate([rhs.T, np.zeros((factors.rows - n + 1, batch))])  # rows first, zero past the system's
    got = banded.solve(factors, jnp.asarray(rows[0]), jnp.asarray(rows[1:]))[:n].T
    exact = np.linalg.solve(dense, rhs[..., None])[..., 0]
    assert np.abs(got - exact).max() < 1e-13 * np.abs(exact).max()


@pytest.mark.parametrize("n", [30, 31])
def test_banded_solves_differentiate_as_linear_systems(n):
    """The transposed solve (banded.solve_transposed) equals numpy's dense solve of A^T; a solve handed its bands
    (derivatives as a linear system's: its tangent by the same factors, its cotangent by the transposed solve) has
    the derivatives of the sweeps' own in reverse and in forward mode, in the bands and in the right-hand side, to
    1e-12, and the same value bit for bit. A wrong interchange or multiplier in the transposed sweep, or a
    transposed band, fails the first check; a sign of A' x the second."""
    batch, rng = 3, np.random.default_rng(n)
    bands, dense = _random_bands(rng, n, batch)
    factors = banded.factor(jnp.asarray(bands))
    g = rng.standard_normal((batch, n)) + 1j * rng.standard_normal((batch, n))
    z = banded.solve_transposed(factors, jnp.asarray(np.concatenate([g.T, np.zeros((factors.rows - n, batch))])))
    exact = np.linalg.solve(np.swapaxes(dense, 1, 2), g[..., None])[..., 0]
    assert np.abs(np.asarray(z)[:n].T - exact).max() < 1e-13 * np.abs(exact).max()

    rhs = rng.standard_normal((batch, n)) + 1j * rng.standard_normal((batch, n))
    rows = jnp.asarray(np.concatenate([rhs.T, np.zeros((factors.rows - n + 1, batch))]))
    weight = jnp.asarray(rng.standard_normal((factors.rows, batch)))
    tilt = jnp.asarray(rng.standard_normal(bands.shape))

    def objective(s, linear):
        b = jnp.asarray(bands) + s * tilt
        x = banded.solve(banded.factor(b), rows[0] * (1 + s), rows[1:], b if linear else None)
        return jnp.sum(weight * (jnp.real(x) + 2 * jnp.imag(x)))

    assert float(objective(0.1, True)) == float(objective(0.1, False))
    sweeps = float(jax.grad(objective)(0.1, False))
    assert float(jax.grad(objective)(0.1, True)) == pytest.approx(sweeps, rel=1e-12, abs=0)
    assert float(jax.jvp(lambda s: objective(s, True), (0.1,), (1.0,))[1]) == pytest.approx(sweeps, rel=1e-12, abs=0)


@pytest.mark.parametrize("name", sorted(imex.TABLEAUX))
def test_each_imex_scheme_steps_a_forced_heat_mode_at_its_order(name):
    """u_t = u_zz - lam u + sin(t) m(z) between plates held at 0 (u_zz implicit, the rest explicit, the forcing at
    each stage's own time), m = cos(pi z/2) on [-1, 1]: u = a(t) m with a' = -mu a + sin t, mu = (pi/2)^2 + lam,
    exactly. The error at t = 1 falls as dt^p, p the scheme's order: each halving of dt divides it by 2^p (the
    measured rate within 0.1 of p). A wrong tableau entry or stage time drops the order."""
    tableau = imex.TABLEAUX[name]
    n, lam = 24, 1.0
    mu = (np.pi / 2) ** 2 + lam
    z = chebyshev.points(n)
    start = chebyshev.forward(jnp.cos(np.pi * z / 2))
    exact = (np.exp(-mu) + (mu * np.sin(1.0) - np.cos(1.0) + np.exp(-mu)) / (mu**2 + 1)) * start
    errors = []
    for steps in (40, 80, 160):
        dt = 1.0 / steps
        solver = Helmholtz.build(1 / (tableau.gamma * dt), n)
        step = imex.step(tableau, lambda u: u, lambda u, t: -lam * u + jnp.sin(t) * start,
                         lambda r, s=solver, dt=dt: s.solve(r / (tableau.gamma * dt)), dt)
        u = jax.jit(lambda u, step=step, dt=dt, steps=steps: jax.lax.fori_loop(
            0, steps, lambda i, u: step(u, i * dt), u))(start)
        errors.append(np.abs(u - exact).max())
    rates = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(rates - tableau.order) < 0.1), (rates, errors)


@pytest.mark.parametrize("varying", [False, True], ids=["fixed-dt", "varying-dt"])
def test_sbdf2_steps_a_forced_heat_mode_at_its_order(varying):
    """The forced heat mode above by SBDF2 (its history carried from step to step, SBDF1 the first step): each halving
    of dt divides the error at t = 1 by 4 (the rate within 0.1 of 2), with steps of one dt, the chunk's factorisation
    serving each step after the first, and with steps alternately 1.3 and 0.7 dt long, each step then taking the
    variable-step coefficients of its ratio (0.54 or 1.86) and its own solve."""
    n, lam = 24, 1.0
    mu = (np.pi / 2) ** 2 + lam
    z = chebyshev.points(n)
    start = chebyshev.forward(jnp.cos(np.pi * z / 2))
    exact = (np.exp(-mu) + (mu * np.sin(1.0) - np.cos(1.0) + np.exp(-mu)) / (mu**2 + 1)) * start
    gamma = multistep.SBDF2.gamma

    def factor(g):
        solver = Helmholtz.build(1 / g, n)
        return lambda r: solver.solve(r / g)

    errors = []
    for steps in (40, 80, 160):
        dt = 1.0 / steps
        sizes = dt * (1 + 0.3 * (-1) ** np.arange(steps)) if varying else np.full(steps, dt)
        times = np.concatenate([[0.0], np.cumsum(sizes)[:-1]])
        solve = None if varying else factor(gamma * dt)

        def body(i, carry, sizes=sizes, times=times, solve=solve):
            step = multistep.SBDF2.advance(lambda u: u, lambda u, t: -lam * u + jnp.sin(t) * start, solve,
                                           jnp.asarray(sizes)[i], factor)
            return step(carry[0], jnp.asarray(times)[i], carry[1])

        u, history = jax.jit(lambda u, body=body, steps=steps: jax.lax.fori_loop(
            0, steps, body, (u, multistep.SBDF2.empty(u))))(start)
        assert float(history.dt[0]) == pytest.approx(sizes[-1], rel=1e-14)
        errors.append(np.abs(u - exact).max())
    rates = np.log2(np.array(errors[:-1]) / errors[1:])
    assert np.all(np.abs(rates - 2) < 0.1), (rates, errors)


@pytest.mark.parametrize("name", sorted(imex.TABLEAUX))
def test_each_imex_tableau_is_consistent_and_stiffly_accurate(name):
    """Each stage's explicit row sums to its time c_i and its implicit row with the diagonal gamma to the same
    c_i (the stage is at t + c_i dt for both halves); the last stage is at t + dt (the step's result is its)."""
    t = imex.TABLEAUX[name]
    times = (*t.nodes[1:], 1.0)
    for explicit, implicit, c in zip(t.explicit, t.implicit, times, strict=True):
        assert abs(sum(explicit) - c) < 1e-15 and abs(sum(implicit) + t.gamma - c) < 1e-15


@pytest.mark.parametrize("walls", [("no-slip", "no-slip"), ("no-slip", "free-slip"), ("free-slip", "no-slip"),
                                   ("free-slip", "free-slip")], ids="-".join)
def test_the_wall_normal_solve_is_exact_for_polynomials_with_each_plates_condition(walls):
    """(alpha - lap) lap w = g with w = 0 at both plates and dw/dz = 0 at a no-slip plate, d^2w/dz^2 = 0 at a
    free-slip one: a random polynomial w of degree N meeting the four conditions is recovered from its g to
    round-off, for each pairing of the plates (a free surface above a no-slip plate and the reverse included)."""
    n, alpha, k2 = 25, 40.0, 2.5
    scale = 2 / LENGTH
    x = np.array([-1.0, 1.0])
    free = RNG.standard_normal(n - 4)
    # the last four coefficients solve the conditions: w(-1) = w(1) = 0 and each plate's own
    rows = []
    for i, wall in enumerate(walls):
        order = 1 if wall == "no-slip" else 2
        rows += [[series.chebval(x[i], np.eye(n)[k]) for k in range(n)],
                 [series.chebval(x[i], series.chebder(np.eye(n)[k], order)) for k in range(n)]]
    rows = np.array(rows)
    last = np.linalg.solve(rows[:, n - 4:], -rows[:, :n - 4] @ free)
    w = np.concatenate([free, last])
    lap = np.concatenate([series.chebder(w, 2, scl=scale), [0, 0]]) - k2 * w
    lap2 = np.concatenate([series.chebder(lap, 2, scl=scale), [0, 0]]) - k2 * lap
    got = jax.jit(lambda g: WallNormal.build(alpha, k2, n, LENGTH, walls).solve(g))(jnp.asarray(alpha * lap - lap2))
    assert np.abs(got - w).max() < 1e-10 * np.abs(w).max()


def test_the_influence_functions_keep_their_digits_at_small_viscosity():
    """The homogeneous solutions w_h (of phi = 1 at one plate) are the discrete solutions of (k^2 - d^2/dz^2) w_h =
    -phi_h: at alpha = 40 they equal that solve to round-off, and at alpha = 1.9e6 (a channel at Re = 2800, dt =
    0.005: w_h ~ 5e-7 from a phi_h of height 1) one unit in the last place of alpha moves them and the influence
    matrix by round-off of their own size (solved from phi_h directly, 8e-11 and 3e-12: order-one coefficients
    cancelled, and a GPU's state after 20 channel steps differed from the CPU's by 3.6e-12)."""
    n, k2 = 17, jnp.array([0.25, 1.0, 10.0, 100.0])
    built = WallNormal.build(40.0, k2, n)
    velocity, vorticity = (Helmholtz.build(k2 + a, n, DIRICHLET, 2.0) for a in (0.0, 40.0))
    for plate in (0, 1):
        phi = vorticity.solve(jnp.zeros((4, n)), float(plate == 0), float(plate == 1))
        direct = velocity.solve(-phi)
        assert np.abs(built.homogeneous[:, plate] - direct).max() < 1e-14 * np.abs(direct).max()
    alpha = 1.9e6
    a, b = WallNormal.build(alpha, k2, n), WallNormal.build(alpha * (1 + 2**-52), k2, n)
    for field in ("homogeneous", "influence"):
        x, y = np.asarray(getattr(a, field)), np.asarray(getattr(b, field))
        assert np.abs(x - y).max() < 1e-14 * np.abs(x).max(), field


def test_a_stokes_mode_between_no_slip_plates():
    """The least damped Stokes mode of k_x = 1 between plates at z = -1, 1 (nu = 1/100), stepped by the wall-normal
    velocity's influence-matrix solve under IMEX RK222: at every step w and dw/dz vanish at the plates, the
    horizontal velocity u vanishes there and i k_x u + dw/dz = 0 everywhere, to round-off; it decays at the rate
    of the independent Orr-Sommerfeld solve (U = 0) to the scheme's dt^2."""
    kx, nu, n, dt, steps = 1.0, 0.01, 33, 2e-3, 250
    c, _, phi = eigen.orr_sommerfeld(1 / nu, kx, "rest", n - 1)
    start = chebyshev.forward(jnp.asarray(-1j * kx * phi[0]))  # w = -d psi/dx
    gamma = imex.RK222.gamma
    solver = WallNormal.build(1 / (gamma * dt * nu), kx**2, n)
    step = jax.jit(imex.step(imex.RK222, lambda w: laplacian(w, kx**2), lambda w, t: jnp.zeros_like(w),
                             lambda r: solver.solve(r / (gamma * dt * nu)), dt))

    def advance(i, carry):
        w, worst = carry
        w = step(w, i * dt)
        u, _ = horizontal_velocity(w, jnp.zeros_like(w), kx, 0.0)
        slope = chebyshev.derivative(w)
        residuals = [*chebyshev.boundary_values(w), *chebyshev.boundary_values(slope),
                     *chebyshev.boundary_values(u), 1j * kx * u + slope]
        return w, jnp.maximum(worst, jnp.stack([jnp.abs(r).max() for r in residuals]).max())

    w, worst = jax.lax.fori_loop(0, steps, advance, (start, 0.0))
    scale = np.abs(start).max()
    assert worst < 1e-14 * scale
    rate = np.log(np.linalg.norm(w) / np.linalg.norm(start)) / (steps * dt)
    assert abs(rate / (kx * c[0].imag) - 1) < 1e-5


def test_rayleigh_benard_onset():
    """No-slip plates: Ra_c = 1707.7618 at k_c = 3.1163 (Chandrasekhar 1961, table III; Reid & Harris 1958) to
    those digits; free-slip: 27 pi^4 / 4 at pi / sqrt(2), exactly, to round-off in Ra (a minimum is flat in k:
    Ra's round-off moves k by about its square root)."""
    ra, k = eigen.rayleigh_benard_onset(eigen.NO_SLIP)
    assert abs(ra - 1707.7618) < 5e-5 and abs(k - 3.1163) < 5e-5
    ra, k = eigen.rayleigh_benard_onset(eigen.FREE_SLIP)
    assert abs(ra / (27 * np.pi**4 / 4) - 1) < 1e-13 and abs(k / (np.pi / np.sqrt(2)) - 1) < 1e-6


def test_eigen_solvers_converge_to_round_off_as_the_series_lengthen():
    """Each solver's error against its reference falls as the Chebyshev series lengthen and then stays at round-off,
    however long they grow (a collocated fourth derivative's round-off grew like N^8: 1e-6 at 60 points). References:
    free-slip, exact (the sine mode: 27 pi^4 / 4 at pi / sqrt(2), and the growth rate's quadratic as in
    test_rayleigh_benard_growth_changes_sign_at_onset, Ra = 10^4, Pr = 0.7, k = 2.5); no-slip, Dedalus 3.0.5's
    EVP (48 modes, its 72-mode solve agreeing to 6e-15: Ra(3.117) = 1707.761892766432, the growth rate at Ra =
    2000, Pr = 1, k = 3.117, 0.047992974042435); plane Poiseuille flow at Re = 10^4, alpha = 1, Dedalus' 128-mode
    tau solve, c = 0.2375264888202058 + 0.0037396706230241i (its 192-mode solve agrees to 9e-12)."""
    ra, pr, k = 1e4, 0.7, 2.5
    nu, kappa, q2 = (ra / pr) ** -0.5, (ra * pr) ** -0.5, k**2 + np.pi**2
    s, c = (nu + kappa) * q2, nu * kappa * q2**2 - k**2 / q2
    exact = 0.5 * (-s + np.sqrt(s**2 - 4 * c))
    cases = {  # relative error at degree n, the lowest first; the round-off it must reach and keep
        "free-slip growth": (lambda n: eigen.rayleigh_benard_growth(ra, pr, k, eigen.FREE_SLIP, n)[0] / exact - 1,
                             (12, 24, 100), 1e-13),
        "free-slip Ra(k_c)": (lambda n: eigen.rayleigh_number(np.pi / np.sqrt(2), eigen.FREE_SLIP, n)
                              / (27 * np.pi**4 / 4) - 1, (12, 24, 100), 1e-14),
        "no-slip Ra(3.117)": (lambda n: eigen.rayleigh_number(3.117, eigen.NO_SLIP, n) / 1707.761892766432 - 1,
                              (12, 24, 100), 1e-13),
        "no-slip growth": (lambda n: eigen.rayleigh_benard_growth(2000.0, 1.0, 3.117, eigen.NO_SLIP, n)[0]
                           / 0.047992974042435 - 1, (12, 24, 100), 1e-11),
        "Orr-Sommerfeld c": (lambda n: abs(eigen.tollmien_schlichting(1e4, 1.0, n)[0]
                                           / (0.2375264888202058 + 0.0037396706230241j) - 1), (60, 100, 200), 1e-11),
    }
    for name, (error, sizes, round_off) in cases.items():
        coarse, fine, finest = (abs(error(n)) for n in sizes)
        assert fine < round_off and finest < round_off, (name, coarse, fine, finest)
        assert coarse > 100 * round_off, (name, coarse)  # a series short enough to show the convergence


def test_orr_sommerfeld_tollmien_schlichting_wave():
    """Plane Poiseuille flow at Re = 10^4, alpha = 1: c = 0.23752649 + 0.00373967 i (Orszag 1971) to its 8 digits;
    the mode's stream function is clamped at the plates and scaled to max |phi| = 1."""
    c, y, phi = eigen.tollmien_schlichting(1e4, 1.0)
    assert abs(c.real - 0.23752649) < 5e-9 and abs(c.imag - 0.00373967) < 5e-9
    assert y[0] == -1.0 and y[-1] == 1.0 and phi[0] == phi[-1] == 0
    assert np.abs(phi).max() == pytest.approx(1.0) and np.abs(phi.imag[np.argmax(np.abs(phi))]) < 1e-14



@pytest.mark.parametrize("walls", [eigen.NO_SLIP, eigen.FREE_SLIP])
def test_rayleigh_benard_growth_changes_sign_at_onset(walls):
    """The time-dependent problem's growth rate (free-fall units, Pr = 1) changes sign between 1 -/+ 10^-4 of the
    marginal problem's Ra(k) at the critical wavenumber, a second formulation agreeing with the first; the mode
    vanishes at the plates. Free-slip at Ra = 10^4, Pr = 0.7, k = 2.5: the largest root of (sigma + nu q^2)(sigma +
    kappa q^2) q^2 = k^2, q^2 = k^2 + pi^2 (the sine mode), to 1e-9."""
    k = 3.1163 if walls == eigen.NO_SLIP else np.pi / np.sqrt(2)
    ra = eigen.rayleigh_number(k, walls)
    below, _, _, _ = eigen.rayleigh_benard_growth(ra * (1 - 1e-4), 1.0, k, walls)
    above, z, w, b = eigen.rayleigh_benard_growth(ra * (1 + 1e-4), 1.0, k, walls)
    assert below < 0 < above
    assert z[0] == 0.0 and z[-1] == 1.0 and w[0] == w[-1] == b[0] == b[-1] == 0 and np.abs(w).max() == 1.0
    if walls == eigen.FREE_SLIP:
        ra, pr, k = 1e4, 0.7, 2.5
        nu, kappa, q2 = (ra / pr) ** -0.5, (ra * pr) ** -0.5, k**2 + np.pi**2
        s, c = (nu + kappa) * q2, nu * kappa * q2**2 - k**2 / q2
        exact = 0.5 * (-s + np.sqrt(s**2 - 4 * c))
        assert abs(eigen.rayleigh_benard_growth(ra, pr, k, walls)[0] - exact) < 1e-9


def test_modes_split_over_devices_solve_as_on_one():
    """The horizontal modes split over 4 devices, each holding its modes' wall-normal direction whole: a
    transform, a wall-normal solve and a derivative give one device's answer (to 1e-12) and stay split by mode."""
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:4]), ("modes",))
    split = jax.sharding.NamedSharding(mesh, jax.sharding.PartitionSpec("modes"))
    modes, n = 8, 33
    values = RNG.standard_normal((modes, n)) + 1j * RNG.standard_normal((modes, n))
    alpha, k2 = np.linspace(10.0, 80.0, modes), np.linspace(0.5, 4.0, modes)

    def program(values, alpha, k2):
        w = WallNormal.build(alpha, k2, n).solve(chebyshev.forward(values))
        return chebyshev.backward(chebyshev.derivative(w))

    # one device's answer compiled as one program: op by op, each of the solve's scans compiled its own programs
    one = np.asarray(jax.jit(program)(values, alpha, k2))
    spread = jax.jit(program)(*(jax.device_put(x, split) for x in (values, alpha, k2)))
    assert np.abs(spread - one).max() < 1e-12 * np.abs(one).max()
    assert spread.sharding.is_equivalent_to(split, 2)
