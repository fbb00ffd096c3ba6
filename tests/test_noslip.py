"""The no-slip basis of the bounded direction (simulator.fft.bases.Chebyshev, the ``chebyshev`` series of
simulator.fft.walls): its transforms through the distributed FFT against the Chebyshev series by NumPy, in both
differentiation modes, on every layout that takes walls and 1, 2 and 4 devices; and the flow between no-slip
plates per mode (simulator.walls.flow) against the dense eigen-solver and the exact steady states, float64."""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.fft import BACKENDS, build_mesh
from simulator.fft.bases import Chebyshev
from simulator.fft.layouts import LAYOUTS
from simulator.time import imex, multistep
from simulator.walls import chebyshev, eigen, flow

from support import case_id

#: (backend, devices) of every layout that takes walls, on 1, 2 and 4 devices where it splits
WALL_CASES = [(name, n, None) for name, layout in sorted(LAYOUTS.items()) if layout.takes_walls
              for n in ((1, 2, 4) if layout.real_axes != (None, None, None) else (1,))]
#: a plane's box (1, Nx, Nz) and a box, each dividing over 4 devices
SHAPES = [(1, 8, 16), (4, 8, 8)]


def backend(devices, case, shape):
    """The case's backend for a walled grid of ``shape``; a pencil (no plane backend) transforms a box of the
    plane's sizes, two planes of it."""
    name, n, _ = case
    cls = BACKENDS[name]
    if name == "pencil" and shape[0] == 1:
        shape = (2, *shape[1:])
    return cls(shape, build_mesh(cls, None, devices[:n]), walls=True)


def numpy_spectrum(x: np.ndarray, height: float) -> np.ndarray:
    """The Chebyshev coefficients along z by NumPy's interpolation at the Gauss-Lobatto points (mapped to
    [-1, 1]), NumPy's FFT along x and y."""
    nz = x.shape[-1]
    xi = 2.0 * Chebyshev(nz, height).points() / height - 1.0
    vander = np.polynomial.chebyshev.chebvander(xi, nz - 1)  # values = vander @ coefficients
    return np.fft.fftn(np.einsum("kj,...j->...k", np.linalg.inv(vander), x), axes=(-3, -2))


def test_the_chebyshev_points_run_from_plate_to_plate():
    """The Gauss-Lobatto points ascend from the lower plate (0) to the upper (H), both plates grid points."""
    z = Chebyshev(9, 2.5).points()
    assert z[0] == 0.0 and z[-1] == pytest.approx(2.5, rel=1e-15) and np.all(np.diff(z) > 0)
    np.testing.assert_allclose(z + z[::-1], 2.5, rtol=0, atol=1e-15)


@pytest.mark.parametrize("case", WALL_CASES, ids=case_id)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_the_chebyshev_transforms_are_numpys_series(devices, case, shape):
    """Forward: the Chebyshev coefficients (NumPy's, by interpolation at the points) along the bounded axis and
    NumPy's FFT across; inverse: the field back, on every device count, float64 round-off."""
    fft = backend(devices, case, shape)
    x = np.random.default_rng(1).standard_normal((2, *fft.shape))
    field = jax.device_put(x, fft.real_sharding(1))
    expected = numpy_spectrum(x, 1.0)
    spectrum = fft.forward_walls(field, "chebyshev")
    assert spectrum.sharding.is_equivalent_to(fft.spectral_sharding(1), 5)
    np.testing.assert_allclose(np.asarray(spectrum), expected, rtol=0, atol=1e-12 * np.abs(expected).max())
    back = np.asarray(fft.inverse_walls(jax.device_put(expected, fft.spectral_sharding(1)), "chebyshev"))
    np.testing.assert_allclose(back, x, rtol=0, atol=1e-12)


@pytest.mark.parametrize("case", [c for c in WALL_CASES if c[1] in (1, 2)], ids=case_id)
def test_the_chebyshev_transforms_differentiate_in_both_modes(devices, case):
    """Reverse mode is the transpose (the dot-product test <ct, W x> = <W^T ct, x>), forward mode the transform
    of the tangent."""
    fft = backend(devices, case, (1, 8, 8))
    shape = fft.shape
    rng = np.random.default_rng(2)
    x = jax.device_put(rng.standard_normal(shape), fft.real_sharding())
    ct = rng.standard_normal(shape) + 1j * rng.standard_normal(shape)
    forward = np.asarray(fft.forward_walls(x, "chebyshev"))
    _, pull = jax.vjp(lambda u: fft.forward_walls(u, "chebyshev"), x)
    (x_bar,) = pull(jax.device_put(ct, fft.spectral_sharding()))
    assert np.sum(np.asarray(x_bar) * np.asarray(x)) == pytest.approx(np.real(np.sum(ct * forward)), rel=1e-12)
    k = jax.device_put(forward, fft.spectral_sharding())
    real_ct = rng.standard_normal(shape)
    _, pull = jax.vjp(lambda s: fft.inverse_walls(s, "chebyshev"), k)
    (k_bar,) = pull(jax.device_put(real_ct, fft.real_sharding()))
    inverse = np.asarray(fft.inverse_walls(k, "chebyshev"))
    assert np.real(np.sum(np.asarray(k_bar) * forward)) == pytest.approx(np.sum(real_ct * inverse), rel=1e-12)
    _, tangent = jax.jvp(lambda u: fft.forward_walls(u, "chebyshev"), (x,), (x,))
    np.testing.assert_allclose(np.asarray(tangent), forward, rtol=0, atol=1e-13 * np.abs(forward).max())


# ---- the flow between no-slip plates, per mode (simulator.walls.flow) ------------------------------------------

N = 33  # Chebyshev coefficients across the gap: the onset's mode resolved to round-off
RA_C, K_C = eigen.rayleigh_benard_onset()


def convection(ra: float, kx: float) -> flow.NoSlipFlow:
    """The linearised convection of one mode about the conductive state, free-fall units, Pr = 1."""
    return flow.NoSlipFlow(jnp.asarray([kx]), jnp.asarray([0.0]), N, 1.0, ra**-0.5, (ra**-0.5,),
                           flow.Plates(scalars=("fixed-value",), values=((0.0, 0.0),)))


@functools.partial(jax.jit, static_argnames=("steps", "coupled"))
def evolve(ra, kx, state, dt, steps: int, coupled: bool = True):
    """``steps`` RK222 steps of :func:`convection` (``coupled``: with the buoyancy terms, else diffusion alone),
    with w and dw/dz at the plates after every step, ``(steps, 2, 2)``."""
    fl = convection(ra, kx)
    step = fl.step((lambda x, t: flow.buoyancy(fl, x)) if coupled else
                   (lambda x, t: jax.tree.map(jnp.zeros_like, x)), dt, imex.RK222)

    def body(x, i):
        x = step(x, i * dt)
        slope = chebyshev.derivative(x.w, 1.0)
        return x, jnp.stack([jnp.stack(chebyshev.boundary_values(x.w))[:, 0],
                             jnp.stack(chebyshev.boundary_values(slope))[:, 0]])

    return jax.lax.scan(body, state, jnp.arange(steps))


def eigenmode(ra: float) -> tuple[float, flow.State]:
    """The independent dense eigen-solve's growth rate at (Ra, k_c) and its mode as a :class:`flow.State`."""
    sigma, _, w, b = eigen.rayleigh_benard_growth(ra, 1.0, K_C)
    coefficients = [np.asarray(chebyshev.forward(jnp.asarray(v)))[:N] for v in (w, b)]
    return sigma, flow.State(jnp.asarray(coefficients[0])[None], jnp.zeros((1, N)), jnp.zeros((2, N)),
                             jnp.asarray(coefficients[1])[None, None])


def measured_rate(ra: float, dt: float, steps: int) -> tuple[float, float, np.ndarray]:
    sigma, state = eigenmode(ra)
    end, walls = evolve(ra, K_C, state, dt, steps)
    growth = np.abs(np.asarray(end.scalars)).max() / np.abs(np.asarray(state.scalars)).max()
    return sigma, float(np.log(growth) / (dt * steps)), np.asarray(walls)


def test_the_onset_of_convection_between_no_slip_plates_is_the_eigen_solvers():
    """At k_c the growth rate of a small mode changes sign at Ra_c of the dense eigen-solve (1707.76, k_c =
    3.117) to 1e-4 relative in Ra, equals the eigen-solve's rate (time error O(dt^2): 2e-3 relative at dt =
    0.05), and w = dw/dz = 0 at both plates after every step to round-off; away from onset (Ra = 2000) the rates at
    dt and dt/2, extrapolated (second order), equal the eigen-solve's to 1e-6."""
    assert RA_C == pytest.approx(1707.762, abs=1e-3) and K_C == pytest.approx(3.1163, abs=1e-4)
    for sign in (1.0, -1.0):
        sigma, rate, walls = measured_rate(RA_C * (1 + sign * 1e-4), 0.05, 40)
        assert np.sign(rate) == np.sign(sigma) == sign
        assert rate == pytest.approx(sigma, rel=2e-3)
        assert np.abs(walls).max() < 1e-14
    sigma, coarse, _ = measured_rate(2000.0, 0.05, 20)
    _, fine, _ = measured_rate(2000.0, 0.025, 40)
    assert (4 * fine - coarse) / 3 == pytest.approx(sigma, rel=1e-6)


def test_a_temperature_mode_between_no_slip_plates_decays_as_the_scheme_says():
    """theta = sin(pi z) cos(k x) alone (no coupling) decays by RK222's amplification factor R(lambda dt) per
    step, lambda = -kappa (k^2 + pi^2) the exact decay rate, to round-off: the space discretisation exact to the
    resolution's round-off, the time stepping the scheme's own."""
    ra, kx, dt, steps = 2000.0, 2.0, 0.1, 20
    z = 0.5 * (1 - np.cos(np.pi * np.arange(N) / (N - 1)))
    theta = jnp.asarray(chebyshev.forward(jnp.asarray(np.sin(np.pi * z))))
    state = flow.State(jnp.zeros((1, N)), jnp.zeros((1, N)), jnp.zeros((2, N)), theta[None, None])
    end, _ = evolve(ra, kx, state, dt, steps, coupled=False)
    gamma, x = imex.RK222.gamma, -(ra**-0.5) * (kx**2 + np.pi**2) * dt
    amplification = (1 + (1 - gamma) * x / (1 - gamma * x)) / (1 - gamma * x)
    expected = amplification**steps * np.sin(np.pi * z)
    got = np.asarray(chebyshev.backward(end.scalars[0, 0]))
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-14)


def test_the_conductive_state_and_a_couette_flow_are_steady_to_round_off():
    """The conductive temperature b = 1 - z (fixed values 1 and 0) and the Couette flow U = z of a top plate
    moving at 1, V = -2 z of one moving at -2 along y, both held by the plates' values and the solves: unchanged
    after 20 steps to round-off."""
    fl = flow.NoSlipFlow(jnp.asarray([0.0, 1.5]), jnp.asarray([0.0, 0.0]), N, 1.0, 1e-2, (3e-3,),
                         flow.Plates(((0.0, 0.0), (1.0, -2.0)), ("fixed-value",), ((1.0, 0.0),)))
    z = jnp.asarray(0.5 * (1 - np.cos(np.pi * np.arange(N) / (N - 1))))
    line = chebyshev.forward(z)
    b = jnp.stack([chebyshev.forward(1 - z), jnp.zeros(N)])
    state = flow.State(jnp.zeros((2, N)), jnp.zeros((2, N)), jnp.stack([line, -2 * line]), b[None])
    step = jax.jit(fl.step(lambda x, t: jax.tree.map(jnp.zeros_like, x), 0.05, imex.RK222))
    end = state
    for i in range(20):
        end = step(end, 0.05 * i)
    for got, want in zip(jax.tree.leaves(end), jax.tree.leaves(state), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=1e-14)


def test_the_mean_flows_response_to_a_forcing_is_a_whole_steps_from_rest():
    """A fixed-flux drive's response to a unit pressure gradient (:meth:`flow.NoSlipFlow.mean_response`, the mean
    flow's solves alone) is the mean flow of a whole step from rest under that forcing, to round-off, and that
    step leaves every other part of the flow at rest."""
    fl = flow.NoSlipFlow(jnp.asarray([0.0, 1.5]), jnp.asarray([0.0, 0.0]), N, 2.0, 1e-3)
    forcing = jnp.zeros((2, N)).at[0, 0].set(1.0).at[1, 0].set(-0.5)
    rest = flow.State(jnp.zeros((2, N)), jnp.zeros((2, N)), jnp.zeros((2, N)), jnp.zeros((0, 2, N)))
    whole = jax.jit(fl.step(lambda x, t: flow.State(jnp.zeros_like(x.w), jnp.zeros_like(x.zeta), forcing,
                                                    x.scalars), 0.02, imex.RK222))(rest, 0.0)
    got = jax.jit(fl.mean_response, static_argnums=(1, 2))(forcing, 0.02, imex.RK222)
    assert np.abs(np.asarray(whole.mean)).max() > 1e-3
    np.testing.assert_allclose(np.asarray(got), np.asarray(whole.mean), rtol=0, atol=1e-15)
    assert not np.asarray(whole.w).any() and not np.asarray(whole.zeta).any()


def test_a_step_by_factors_built_once_for_its_dt_equals_one_that_factors_itself():
    """A chunk of steps of one dt factors the stage solves once (:meth:`flow.NoSlipFlow.factor`) and hands them
    to every step: five such steps of a growing mode end where five steps factoring in each end, to round-off (the
    two programs are compiled apart, so their sums may round apart)."""
    _, state = eigenmode(2000.0)
    fl = convection(2000.0, K_C)
    explicit = lambda x, t: flow.buoyancy(fl, x)  # noqa: E731
    own = jax.jit(fl.step(explicit, 0.05, imex.RK222))
    shared = jax.jit(lambda x, t, factored: fl.step(explicit, 0.05, imex.RK222, factored)(x, t))
    factored = jax.jit(fl.factor, static_argnums=1)(0.05, imex.RK222)
    a = b = state
    for i in range(5):
        a, b = own(a, 0.05 * i), shared(b, 0.05 * i, factored)
    for got, want in zip(jax.tree.leaves(b), jax.tree.leaves(a), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=1e-14 * np.abs(want).max())


def test_solves_holding_half_the_modes_of_a_real_field_step_as_the_whole():
    """A flow whose modes are a real field's whole spectrum (``hermitian``: one device's) solves and factors the half
    k_y >= 0 alone, the rest the conjugates: a box's state (w, zeta, the mean flow, theta) steps as by every mode's
    own solves, to round-off, with half the factors."""
    rng = np.random.default_rng(3)
    shape, n = (4, 6), 12
    kx, ky = np.meshgrid(np.fft.fftfreq(4, 1 / 4), 2 * np.fft.fftfreq(6, 1 / 6), indexing="ij")

    def spectrum(*lead):  # a real field's: its (x, y) transform, Chebyshev coefficients along the last axis
        return jnp.asarray(np.fft.fftn(rng.standard_normal((*lead, *shape, n)), axes=(-3, -2)))

    state = flow.State(spectrum(), spectrum(), jnp.asarray(rng.standard_normal((2, n))), spectrum(1))
    plates = flow.Plates(((0.5, 0.0), (0.0, -1.0)), ("fixed-value",), ((1.0, 0.0),))
    flows = [flow.NoSlipFlow(jnp.asarray(kx), jnp.asarray(ky), n, 2.0, 0.05, (0.02,), plates, hermitian=h)
             for h in (False, True)]
    ends = [jax.jit(fl.step(lambda x, t, fl=fl: flow.buoyancy(fl, x), 0.01, imex.RK222))(state, 0.0) for fl in flows]
    factored = jax.eval_shape(lambda dt: flows[1].factor(dt, imex.RK222), 0.01)  # traced, not compiled
    assert factored.normal.velocity.alpha.shape == (4, 4)
    for got, want in zip(jax.tree.leaves(ends[1]), jax.tree.leaves(ends[0]), strict=True):
        np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=1e-13 * np.abs(want).max())


def test_solves_holding_the_kept_columns_alone_step_as_every_columns_own():
    """A flow told the columns the 2/3 rule keeps (``kept``) factors and solves those alone, zero elsewhere: a box's
    state zero outside them steps as by every column's own solves, to round-off (not bitwise: the plates' sums run in
    another order over a batch of another shape), exactly zero outside them, with a third of the factors on one
    device (the kept quarter of the half, 3 x 3 of 6 x 5) and 4/9 of them where the modes are split."""
    rng = np.random.default_rng(5)
    shape, n = (6, 9), 12
    kx, ky = np.meshgrid(np.fft.fftfreq(6, 1 / 6), 2 * np.fft.fftfreq(9, 1 / 9), indexing="ij")
    runs = (((0, 2), (5, 6)), ((0, 3), (7, 9)))  # |m| < 2 of 6, |m| < 3 of 9
    keep = (np.abs(np.fft.fftfreq(6, 1 / 6))[:, None] < 2) & (np.abs(np.fft.fftfreq(9, 1 / 9))[None] < 3)

    def spectrum(*lead):  # a real field's, its columns outside the rule's zero
        return jnp.asarray(np.fft.fftn(rng.standard_normal((*lead, *shape, n)), axes=(-3, -2)) * keep[..., None])

    state = flow.State(spectrum(), spectrum(), jnp.asarray(rng.standard_normal((2, n))), spectrum(1))
    plates = flow.Plates(((0.5, 0.0), (0.0, -1.0)), ("fixed-value",), ((1.0, 0.0),))
    for hermitian, factors in ((True, (3, 3)), (False, (3, 5))):
        flows = [flow.NoSlipFlow(jnp.asarray(kx), jnp.asarray(ky), n, 2.0, 0.05, (0.02,), plates,
                                 hermitian=hermitian, kept=kept) for kept in ((None, None), runs)]
        ends = [jax.jit(fl.step(lambda x, t, fl=fl: flow.buoyancy(fl, x), 0.01, imex.RK111))(state, 0.0)
                for fl in flows]
        factored = jax.eval_shape(lambda dt, fl=flows[1]: fl.factor(dt, imex.RK111), 0.01)
        assert factored.normal.velocity.alpha.shape == factors
        for got, want in zip(jax.tree.leaves(ends[1]), jax.tree.leaves(ends[0]), strict=True):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=1e-13 * np.abs(want).max())
        for got in (ends[1].w, ends[1].zeta, ends[1].scalars):
            assert not np.asarray(got)[..., ~keep, :].any()


@pytest.mark.parametrize("case, columns", [(("single", 1, None), "both"), (("slab", 2, None), "x"),
                                           (("pencil", 4, None), "neither")], ids=lambda c: c if isinstance(c, str)
                         else case_id(c))
def test_the_kept_columns_are_those_of_the_axes_whole_on_a_device(devices, case, columns):
    """The backend's kept columns (:meth:`kept_columns`): the runs of entries |m| < N/3 along each axis of the plates
    whole on a device in the real layout (a slab's x, not its y; neither of a pencil's), None where split."""
    name, n, _ = case
    fft = BACKENDS[name]((6, 12, 8), build_mesh(BACKENDS[name], None, devices[:n]), walls=True, basis="chebyshev")
    runs = {0: ((0, 2), (5, 6)), 1: ((0, 4), (9, 12))}
    want = tuple(runs[a] if columns in ("both", "xy"[a]) else None for a in (0, 1))
    assert fft.kept_columns((1.0, 1.0, 1.0)) == want


@pytest.mark.parametrize("local_fft", ["xla", "fftw"], indirect=True)
@pytest.mark.parametrize("shape", [(1, 12, 9), (9, 12, 7)], ids=["plane", "box"])
def test_the_kept_half_holds_the_kept_columns_of_the_walled_transforms(devices, shape, local_fft):
    """The layout a step runs on on one device (:class:`simulator.fft.walls.KeptHalf`): its transforms of fields
    are the backend's walled transforms on the columns the 2/3 rule keeps, k_y >= 0 (a plane's 1 x 4 of its 12, a
    box's 5 x 4 of 9 x 12), float64 round-off, on XLA's FFT (a GPU's) and FFTW's; spread, its spectrum is the whole
    one zero outside those columns."""
    from simulator.fft.walls import KeptHalf

    fft = BACKENDS["single"](shape, build_mesh(BACKENDS["single"], None, devices[:1]), walls=True, basis="chebyshev",
                             local_fft=local_fft)
    half = KeptHalf(shape[0], shape[1])
    x = jnp.asarray(np.random.default_rng(3).standard_normal((2, *shape)))
    rules = fft.domain_keep((1.0, 1.0, 1.0), jnp.float64)
    keep = np.asarray(rules[0] * rules[1])
    whole = np.asarray(fft.forward_walls(x, "chebyshev")) * keep
    part = half.forward(fft.local, "chebyshev", x)
    assert part.shape == (2, 1 if shape[0] == 1 else 5, 4, shape[2])
    scale = np.abs(whole).max()
    np.testing.assert_allclose(np.asarray(part), np.asarray(half.gather(jnp.asarray(whole))), rtol=0,
                               atol=1e-14 * scale)
    np.testing.assert_allclose(np.asarray(half.spread(part)), whole, rtol=0, atol=1e-14 * scale)
    np.testing.assert_allclose(np.asarray(half.inverse(fft.local, "chebyshev", part)),
                               np.asarray(fft.inverse_walls(jnp.asarray(whole), "chebyshev")), rtol=0, atol=1e-13)


@pytest.mark.parametrize("config, overrides", [
    ("convection_2d_noslip", {"grid.shape": [24, 17]}),
    ("convection_2d_noslip", {"grid.shape": [24, 17], "time.integrator": "sbdf2"}),
    ("channel_retau180", {"grid.shape": [8, 6, 13]}),
    ("channel_poiseuille", {"grid.shape": [16, 13]})], ids=["plane", "plane-sbdf2", "channel-box", "channel-flux"])
def test_a_step_on_the_kept_half_is_the_step_on_the_whole_spectrum(devices, config, overrides):
    """On one device a no-slip chunk runs on the kept columns of the half spectrum (the state's gathered at its
    start, spread at its end: :meth:`NoSlipEquation.stepping`), and so do the CFL-controlled chunk, its CFL number
    and a single step (the plane's): three steps of each equal three on the whole spectrum (the solves' own half and
    kept columns) to float64 round-off, a multistep scheme's history and a fixed flux's drive with them; on a slab of
    2 the equation steps on its own layout."""
    from pathlib import Path

    from simulator.api import load_config
    from simulator.run.simulation import Simulation

    path = Path(__file__).resolve().parents[1] / "configs" / f"{config}.yaml"
    sim = Simulation(load_config(str(path), {**overrides, "time.cfl": None, "precision": "float64"}), devices[:1])
    eq, params, dt = sim.equation, sim.params, 0.002
    assert eq.stepping().half is not None and eq.half is None
    tableau = multistep.SBDF2 if "time.integrator" in overrides else imex.RK222
    state = sim.initial_state()
    runs = {"whole": jax.jit(lambda s, t: eq.imex_step(s, t, jnp.asarray(dt), params, tableau))}
    if config == "convection_2d_noslip" and tableau is imex.RK222:  # the step alone relays as the chunk does
        runs["single"] = jax.jit(lambda s, t: imex.make_imex(eq, None, tableau)(s, t, jnp.asarray(dt), params))
    ends = {"chunk": sim.advance(state, 3, dt), "controlled": sim.advance_adaptive(state, 3, cfl=1e6, dt_max=dt).state}
    for name, step in runs.items():
        ends[name] = state
        for i in range(3):
            ends[name] = step(ends[name], dt * i)
    for name in set(ends) - {"whole"}:
        for got, want in zip(jax.tree.leaves(ends[name]), jax.tree.leaves(ends["whole"]), strict=True):
            np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=0, atol=1e-13 * np.abs(want).max())
    # the controlled chunk's CFL number, from the velocity of the kept half's transforms
    rate = sim.cfl_rate(eq.stepping(), eq.to_stepping(ends["whole"]), 3 * dt, params)
    assert abs(rate / sim.cfl_rate(eq, ends["whole"], 3 * dt, params) - 1) < 1e-13 and rate > 0
    if len(devices) >= 2 and config == "channel_retau180":
        two = Simulation(load_config(str(path), {**overrides, "time.cfl": None}), devices[:2])
        assert two.equation.stepping() is two.equation


def test_the_velocity_of_a_no_slip_flow_is_divergence_free_to_round_off():
    """u and w of a mode rebuilt from w (:func:`flow.velocity`): i k_x u + dw/dz = 0 to round-off, and u = w =
    0 at both plates."""
    _, state = eigenmode(2000.0)
    end, _ = evolve(2000.0, K_C, state, 0.05, 20)  # the onset test's program (steps are static): no compile of its own
    fl = convection(2000.0, K_C)
    u, _, w = flow.velocity(fl, end)
    divergence = 1j * K_C * u + chebyshev.derivative(w, 1.0)
    assert np.abs(np.asarray(divergence)).max() < 1e-13 * np.abs(np.asarray(w)).max()
    for field in (u, w):
        assert np.abs(np.asarray(jnp.stack(chebyshev.boundary_values(field)))).max() < 1e-14
