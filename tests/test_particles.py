"""Lagrangian particles: the exact point evaluation of a spectrum (every FFT backend, 1 and several
devices), tracers and inertial particles against exact solutions, convergence at the scheme's order,
distributed equals single-device, gradients, and the config's one-line errors."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.integrate import solve_ivp

from simulator import equations
from simulator.api import load_config
from simulator.errors import ConfigError
from simulator.fft import BACKENDS, build_mesh
from simulator.particles.flow import position_key, velocity_key
from simulator.time.schemes import SCHEMES, SEMILINEAR, compatible

from support import (
    backend_cases,
    case_id,
    command,
    distributed_cases,
    mesh_cases,
    relative_error,
    simulation,
    unavailable,
)

SHAPE = (16, 8, 12)
BOX = (2 * np.pi, 3.0, 5.0)


def _band_limited(shape, seed=1):
    """A random real field (3, *shape) without Nyquist content (where conventions for a real
    interpolant differ), so the direct sum below is its one band-limited interpolant."""
    rng = np.random.default_rng(seed)
    spectrum = np.fft.fftn(rng.normal(size=(3, *shape)), axes=(-3, -2, -1))
    for axis, n in enumerate(shape):
        index = [slice(None)] * 4
        index[axis + 1] = n // 2
        spectrum[tuple(index)] = 0
    return np.real(np.fft.ifftn(spectrum, axes=(-3, -2, -1)))


def _direct_sum(field, points, box):
    """sum_k f_hat_k exp(i k.x) / N over the full spectrum, point by point (NumPy, float64)."""
    shape = field.shape[1:]
    spectrum = np.fft.fftn(field, axes=(-3, -2, -1))
    k = [np.fft.fftfreq(n, 1 / n) * 2 * np.pi / length for n, length in zip(shape, box, strict=True)]
    out = np.empty((field.shape[0], len(points)))
    for p, x in enumerate(points):
        phase = (np.exp(1j * k[0] * x[0])[:, None, None] * np.exp(1j * k[1] * x[1])[None, :, None]
                 * np.exp(1j * k[2] * x[2])[None, None, :])
        out[:, p] = np.real(np.sum(spectrum * phase, axis=(-3, -2, -1))) / np.prod(shape)
    return out


def _need_nufft():
    from simulator.fft.points import nufft_available

    why = nufft_available()
    if why:
        unavailable("NUFFT particle tests", "SIMULATOR_REQUIRE_NUFFT", why)


@pytest.mark.parametrize("method, tolerance", [("direct", 1e-13), ("nufft", 1e-13)])
@pytest.mark.parametrize("case", backend_cases(), ids=case_id)
def test_evaluate_at_equals_the_direct_sum(devices, case, method, tolerance):
    if method == "nufft":
        _need_nufft()
    name, n, mesh = case
    shape = (16, 8, 16) if name == "slab" and n > 1 else SHAPE  # the slab shards Nz/2 over 4 devices
    fft = BACKENDS[name](shape, build_mesh(BACKENDS[name], mesh, devices[:n]))
    field = _band_limited(shape)
    # points anywhere (outside the box too: the sum is periodic), and the grid points themselves
    points = np.random.default_rng(2).uniform(-7.0, 11.0, (41, 3))
    grid = np.array([[0, 0, 0], [3, 5, 7], [15, 7, shape[2] - 1]])
    points = np.concatenate([points, grid * (np.array(BOX) / np.array(shape))])
    spectrum = fft.rfft(jax.device_put(jnp.asarray(field), fft.real_sharding(1)))
    k, w = fft.wavenumbers(BOX, True, jnp.float64), fft.parseval_weight(True, jnp.float64)
    evaluate = jax.jit(lambda s, p, k, w: fft.evaluate_at(s, p, k, w, method, BOX))
    got = np.asarray(evaluate(spectrum, jnp.asarray(points), k, w))
    expected = _direct_sum(field, points, BOX)
    assert got.shape == (3, len(points))
    assert np.max(np.abs(got - expected)) / np.max(np.abs(expected)) < tolerance
    on_grid = np.stack([field[:, i, j, k] for i, j, k in grid], axis=1)
    assert np.max(np.abs(got[:, -3:] - on_grid)) < 1e-13 * np.max(np.abs(field))


@pytest.mark.parametrize("case", [("single", 1, None), *distributed_cases()], ids=case_id)
def test_nufft_path_differentiates_and_batches_like_the_direct_sum(devices, case):
    """Gradients in the points and the spectrum (through the psum) and vmap over spectra (ensembles)."""
    _need_nufft()
    name, n, mesh = case
    shape = (16, 8, 16)
    fft = BACKENDS[name](shape, build_mesh(BACKENDS[name], mesh, devices[:n]))
    each = [fft.rfft(jax.device_put(jnp.asarray(_band_limited(shape, seed)), fft.real_sharding(1))) for seed in (1, 2)]
    spectra = jnp.stack(each)
    points = jnp.asarray(np.random.default_rng(4).uniform(0, 5, (9, 3)))
    k, w = fft.wavenumbers(BOX, True, jnp.float64), fft.parseval_weight(True, jnp.float64)

    def loss(method):
        return lambda s, p: jnp.sum(jnp.sin(fft.evaluate_at(s, p, k, w, method, BOX)))

    # both gradients in one program per method, and the direct sum compiled once for both spectra: op by op it
    # compiled two dozen tiny programs
    ref = jax.jit(jax.grad(loss("direct"), (0, 1)))(each[0], points)
    got = jax.jit(jax.grad(loss("nufft"), (0, 1)))(each[0], points)
    for argnum in (0, 1):
        assert relative_error(got[argnum], ref[argnum]) < 1e-12, argnum
    batched = np.asarray(jax.jit(jax.vmap(lambda s: fft.evaluate_at(s, points, k, w, "nufft", BOX)))(spectra))
    direct = jax.jit(lambda s: fft.evaluate_at(s, points, k, w, "direct", BOX))
    for i in range(2):
        assert relative_error(batched[i], direct(each[i])) < 1e-13


def _smooth(points, box):
    """A smooth periodic test field (not band-limited on the grids below: aliasing-free but not exact)."""
    x, y, z = (2 * np.pi / length * c for c, length in zip(np.asarray(points).T, box, strict=True))
    return np.stack([np.sin(x + 1) * np.cos(2 * y) + np.cos(z), np.cos(2 * x) * np.sin(y + z), np.sin(x + y + 2 * z)])


@pytest.mark.parametrize("case", backend_cases(), ids=case_id)
def test_local_lagrange_interpolation_converges_at_fourth_order(devices, case):
    name, n, mesh = case
    points = np.random.default_rng(0).uniform(-5.0, 12.0, (100, 3))
    errors = []
    for size in (16, 32):
        fft = BACKENDS[name]((size,) * 3, build_mesh(BACKENDS[name], mesh, devices[:n]))
        grid = np.stack(np.meshgrid(*(np.arange(size) * length / size for length in BOX), indexing="ij"), -1)
        field = _smooth(grid.reshape(-1, 3), BOX).reshape(3, size, size, size)
        u = jax.device_put(jnp.asarray(field), fft.real_sharding(1))
        got = jax.jit(lambda u, p: fft.interpolate_local(u, p, BOX))(u, jnp.asarray(points))
        errors.append(np.max(np.abs(np.asarray(got) - _smooth(points, BOX))))
        # on the grid points themselves it is the field
        nodes = np.array([[0, 0, 0], [3, 5, 7], [size - 1, 2, size - 1]])
        at_nodes = jax.jit(lambda u, p: fft.interpolate_local(u, p, BOX))(u, jnp.asarray(nodes * np.array(BOX) / size))
        expected = np.stack([field[:, i, j, k] for i, j, k in nodes], axis=1)
        assert np.max(np.abs(np.asarray(at_nodes) - expected)) < 1e-14
    assert np.log2(errors[0] / errors[1]) > 3.8, errors
    assert errors[1] < 1e-3, errors  # 16 points per wavelength of the shortest mode


def _lagrange4_windows(points, shape, box):
    """Each point's nodes (per axis: the nodes -1, 0, 1, 2 around its cell, taken modulo the axis's cells) and their
    4-point Lagrange weights, computed by hand: an independent, periodic reference."""
    for x in points:
        nodes, weights = [], []
        for a in range(3):
            s = x[a] * shape[a] / box[a]
            t = s - np.floor(s)
            nodes.append((int(np.floor(s)) + np.arange(-1, 3)) % shape[a])
            weights.append(np.array([-t * (t - 1) * (t - 2) / 6, (t + 1) * (t - 1) * (t - 2) / 2,
                                     -(t + 1) * t * (t - 2) / 2, (t + 1) * t * (t - 1) / 6]))
        yield np.ix_(*nodes), np.einsum("i,j,k->ijk", *weights)


def _lagrange4_by_hand(field, points, box):
    """``field`` ``(C, n0, n1, n2)`` interpolated at ``points`` by :func:`_lagrange4_windows`: ``(C, P)``."""
    return np.stack([np.einsum("cijk,ijk->c", field[(slice(None), *at)], w)
                     for at, w in _lagrange4_windows(points, field.shape[1:], box)], axis=1)


def _deposit_by_hand(values, points, shape, box):
    """``values`` ``(C, P)`` spread onto the grid by the same windows, the transpose: ``(C, *shape)``."""
    out = np.zeros((values.shape[0], *shape))
    for p, (at, w) in enumerate(_lagrange4_windows(points, shape, box)):
        for c in range(values.shape[0]):
            np.add.at(out[c], at, values[c, p] * w)  # a node met twice (an axis shorter than the window) adds twice
    return out


def _thin_shapes(case):
    """Grids of ``case``'s mesh with an axis of 1 cell (a plane's box, :mod:`simulator.fft.plane`) or 2 held whole,
    shorter than lagrange4's 4 points, their split axes holding the window's 4 planes per device as a run needs."""
    name, n, mesh = case
    layout = BACKENDS[name]
    sizes = dict(zip(layout.axis_names, layout.mesh_shape(n, mesh), strict=True))
    shapes = []
    for shape in ((8, 8, 2), (2, 16, 8), (16, 2, 8), (1, 8, 8), (1, 16, 8)):
        try:
            layout.check_layout(shape, layout.mesh_shape(n, mesh))
        except ConfigError:
            continue
        if all(m is None or sizes[m] == 1 or shape[a] // sizes[m] >= 4 for a, m in enumerate(layout.real_axes)):
            shapes.append(shape)
    return shapes


THIN = [(case, shape) for case in mesh_cases() for shape in _thin_shapes(case)]


@pytest.mark.parametrize("path", ["native", "xla"])
@pytest.mark.parametrize(("case", "shape"), THIN, ids=[f"{case_id(c)}-{'x'.join(map(str, s))}" for c, s in THIN])
def test_an_axis_shorter_than_the_window_interpolates_as_its_period_says(devices, case, shape, path, monkeypatch):
    """A thin box's axis of 2 cells, held whole, is shorter than the 4-point window (a run of [16, 16, 2] with
    lagrange4 tracers failed in the native kernel): interpolated periodically, and deposited as its transpose, as
    computed by hand, to rounding, by the native kernel and by XLA's path (as on a GPU)."""
    monkeypatch.setenv("SIMULATOR_PARTICLES", path)
    name, n, mesh = case
    rng = np.random.default_rng(1)
    points = rng.uniform(-5.0, 12.0, (40, 3))
    fft = BACKENDS[name](shape, build_mesh(BACKENDS[name], mesh, devices[:n]))
    field = rng.standard_normal((2, *shape))
    u = jax.device_put(jnp.asarray(field), fft.real_sharding(1))
    values = rng.standard_normal((2, len(points)))  # and the transpose, the deposit (the kernel's scatter)

    def both(u, v):
        got, pull = jax.vjp(lambda u: fft.interpolate_local(u, jnp.asarray(points), BOX), u)
        return got, pull(v)[0]

    got, deposited = jax.jit(both)(u, jnp.asarray(values))
    assert relative_error(got, _lagrange4_by_hand(field, points, BOX)) < 1e-13
    assert relative_error(deposited, _deposit_by_hand(values, points, shape, BOX)) < 1e-13


def _abc_velocity(x, t, nu):
    """The decaying ABC flow (A = B = C = 1, k = 1 in a 2 pi box): u0(x) exp(-nu t), an exact solution."""
    u = np.stack([np.sin(x[:, 2]) + np.cos(x[:, 1]), np.sin(x[:, 0]) + np.cos(x[:, 2]),
                  np.sin(x[:, 1]) + np.cos(x[:, 0])], axis=1)
    return u * np.exp(-nu * t)


NU = 0.1
ABC = dict(grid__shape=[16, 16, 16], physics={"name": "navier_stokes", "viscosity": NU},
           initial={"name": "abc", "amplitude": 1.0, "wavenumber": 1}, time__integrator="rk4")
TRACERS = [{"name": "tracers", "count": 12, "seed": 3}]


def _tracer_error(sim, dt, t_end=1.0):
    state = sim.initial_state()
    x0 = np.asarray(state[position_key("tracers")])
    out = sim.advance(state, int(round(t_end / dt)), dt)
    exact = solve_ivp(lambda t, y: _abc_velocity(y.reshape(-1, 3), t, NU).ravel(), (0, t_end), x0.ravel(),
                      method="DOP853", rtol=1e-13, atol=1e-13).y[:, -1].reshape(-1, 3)
    return np.max(np.abs(np.asarray(out[position_key("tracers")]) - exact))


@pytest.mark.parametrize("scheme", compatible(SEMILINEAR))
def test_tracers_in_the_abc_flow_converge_at_the_scheme_order(devices, scheme):
    """dx/dt = u(x, t) is nonlinear in x and explicitly time-dependent: the particles advance in the scheme's
    stages at its order (measured: rk2 2.00, rk3 2.98-2.99, rk4 4.00, lsrk4 4.02-4.03)."""
    sim = simulation(devices, particles=TRACERS, **{**ABC, "time__integrator": scheme})
    errors = [_tracer_error(sim, dt) for dt in (0.1, 0.05, 0.025)]
    orders = np.log2(np.array(errors[:-1]) / np.array(errors[1:]))
    order = SCHEMES[scheme].order
    assert np.all(np.abs(orders - order) < 0.2), (errors, orders)
    if order == 4:
        assert errors[-1] < 1e-8, errors  # dt = 0.025 on a flow of O(1) gradients over t = 1


def test_inertial_particle_falls_at_the_exact_rate(devices):
    tau, g = 0.2, np.array([0.0, 0.5, -9.81])
    sim = simulation(devices, grid__shape=[8, 8, 8], time__integrator="rk4",
                     particles=[{"name": "drops", "count": 8, "placement": "lattice", "tau_p": tau,
                                 "gravity": g.tolist()}])
    state = sim.state_from_fields(velocity=np.zeros((3, 8, 8, 8)))  # fluid at rest: released at rest
    assert np.all(np.asarray(state[velocity_key("drops")]) == 0)
    x0 = np.asarray(state[position_key("drops")])
    errors = []
    for dt in (0.02, 0.01):
        t = 0.5
        out = sim.advance(state, int(round(t / dt)), dt)
        decay = 1 - np.exp(-t / tau)
        v_exact = g * tau * decay
        x_exact = x0 + g * tau * (t - tau * decay)
        assert np.max(np.abs(np.asarray(out[velocity_key("drops")]) - v_exact)) < 1e-6 * np.abs(g).max()
        errors.append(np.max(np.abs(np.asarray(out[position_key("drops")]) - x_exact)))
    assert np.log2(errors[0] / errors[1]) > 3.8, errors


def test_inertial_particles_relax_to_a_uniform_flow(devices):
    tau, U = 0.1, np.array([0.3, -0.2, 0.7])
    sim = simulation(devices, grid__shape=[8, 8, 8], time__integrator="rk4",
                     particles=[{"name": "drops", "count": 5, "tau_p": tau, "seed": 4}])
    state = sim.state_from_fields(velocity=np.broadcast_to(U[:, None, None, None], (3, 8, 8, 8)))
    assert np.allclose(np.asarray(state[velocity_key("drops")]), U, rtol=0, atol=1e-14)  # released with the fluid
    v0 = np.array([[1.0, 0.0, -1.0]] * 5)
    state = {**state, velocity_key("drops"): jnp.asarray(v0)}
    t, dt = 0.4, 0.005
    out = sim.advance(state, int(round(t / dt)), dt)
    v_exact = U + (v0 - U) * np.exp(-t / tau)
    assert np.max(np.abs(np.asarray(out[velocity_key("drops")]) - v_exact)) < 1e-8


def _flow_equations():
    # particles are refused between plates; the planar flows' particles are tests/test_plane_particles.py's
    return [name for name, info in sorted(equations.registry().items())
            if "velocity" in info.state_fields and info.walls != "required" and info.dimensions == 3]


@pytest.mark.parametrize("physics", _flow_equations())
def test_tracers_on_grid_points_move_with_the_field(devices, physics, tmp_path):
    """Every flow equation carries particles: on grid points, a tracer's velocity is the real-space field's."""
    shape = (8, 8, 8)
    nodes = np.array([[0, 0, 0], [1, 2, 3], [7, 4, 5], [2, 6, 1]])
    path = tmp_path / "start.npy"
    np.save(path, nodes * (2 * np.pi / 8))
    sim = simulation(devices, grid__shape=list(shape), physics={"name": physics},
                     initial={"name": "random"},
                     particles=[{"name": "tracers", "count": 4, "placement": "file", "path": str(path)},
                                {"name": "local", "count": 4, "placement": "file", "path": str(path),
                                 "interpolation": "lagrange4"}])
    state = sim.initial_state()

    @jax.jit  # one program: computed op by op, these three compiled about a hundred
    def at_the_tracers(eq, s, p):
        return eq.fields(s, p)["velocity"], eq.velocities(s), eq.nonlinear(s, jnp.zeros(()), p)[position_key("tracers")]

    u, velocities, rhs = at_the_tracers(sim.equation, state, sim.params)
    u = np.asarray(u)
    expected = np.stack([u[:, i, j, k] for i, j, k in nodes])
    for species in ("tracers", "local"):
        got = np.asarray(velocities[species])
        assert np.max(np.abs(got - expected)) < 1e-13 * np.max(np.abs(u)), species
    assert np.max(np.abs(np.asarray(rhs) - expected)) < 1e-13 * np.max(np.abs(u))
    # a short step moves them by dt u to first order (the second-order term is dt^2 Du/Dt / 2)
    dt = 1e-4
    out = sim.advance(state, 1, dt)
    moved = np.asarray(out[position_key("tracers")]) - np.asarray(state[position_key("tracers")])
    assert np.max(np.abs(moved - dt * expected)) < 1e-2 * dt * np.max(np.abs(expected))


MIXED = [{"name": "tracers", "count": 40, "seed": 5}, {"name": "drops", "count": 27, "placement": "lattice",
                                                       "tau_p": 0.05, "gravity": [0, 0, -1]},
         {"name": "local", "count": 30, "seed": 6, "interpolation": "lagrange4"}]


@pytest.mark.slow  # ~20 s each on 2 cores: two compilations of a 16^3 flow with particles
@pytest.mark.parametrize("case", distributed_cases(), ids=case_id)
@pytest.mark.parametrize("nufft", [False, True], ids=["direct+lagrange4", "nufft"])
def test_distributed_equals_single_device(devices, case, nufft):
    shape = [16, 16, 16]
    species = MIXED
    if nufft:
        _need_nufft()
        species = [{**s, "interpolation": "nufft"} for s in MIXED]
    kwargs = dict(grid__shape=shape, initial={"name": "random", "amplitude": 2.0}, time__integrator="rk4",
                  particles=species)
    single = simulation(devices, ("single", 1, None), **kwargs)
    sim = simulation(devices, case, **kwargs)
    start = single.initial_state()
    ref = single.advance(start, 20, 0.02)
    out = sim.advance(sim.initial_state(), 20, 0.02)
    # particles leaf by leaf; the flow in real space (jaxdecomp holds a full spectrum, the others a half)
    particles = [key for key in ref if key.startswith("particles.")]
    assert relative_error([out[key] for key in particles], [ref[key] for key in particles]) < 1e-12
    assert relative_error(sim.equation.fields(out, sim.params)["velocity"],
                          single.equation.fields(ref, single.params)["velocity"]) < 1e-12
    # the tracers crossed the quarters of the box (the shards of a 4-way decomposition) along every axis
    before = np.floor(np.asarray(start[position_key("tracers")]) / (2 * np.pi / 4))
    after = np.floor(np.asarray(ref[position_key("tracers")]) / (2 * np.pi / 4))
    assert np.all(np.any(before != after, axis=0))


@pytest.mark.slow  # ~17 s on 2 cores: the reverse pass of ten RK4 steps compiles slowly
def test_gradient_of_mean_position_wrt_viscosity(devices):
    sim = simulation(devices, grid__shape=[8, 8, 8], initial={"name": "random", "amplitude": 1.0},
                     time__integrator="rk4", particles=[{"name": "tracers", "count": 6, "seed": 1},
                                                        {"name": "drops", "count": 4, "tau_p": 0.1}])
    state = sim.initial_state()
    step = sim.scheme.load()(sim.equation)
    dt = jnp.asarray(0.02)

    @jax.jit
    def loss(nu):
        p = {**sim.params, "viscosity": nu}
        final = jax.lax.fori_loop(0, 10, lambda i, s: step(s, i * dt, dt, p), state)
        return jnp.mean(final[position_key("tracers")]) + jnp.mean(final[position_key("drops")])

    nu, h = jnp.asarray(0.05), 1e-4
    grad = float(jax.grad(loss)(nu))
    fd = float((loss(nu + h) - loss(nu - h)) / (2 * h))
    assert abs(grad) > 1e-4  # the viscosity does move the particles
    assert abs(grad - fd) < 1e-6 * abs(fd)


@pytest.mark.parametrize("entry, key", [
    ({"name": "a b"}, "particles[0].name"),
    ({"count": 10, "placement": "lattice"}, "particles[0].count"),
    ({"placement": "file"}, "particles[0].path"),
    ({"path": "x.npy"}, "particles[0].path"),
    ({"gravity": [0, 0, -1]}, "particles[0].gravity"),
    ({"tau_p": -1.0}, "particles[0].tau_p"),
    ({"placement": "grid"}, "particles[0].placement"),
    ({"interpolation": "linear"}, "particles[0].interpolation"),
    ({"interpolation": "lagrange4", "runtime.cpu_devices": 8, "grid.shape": [16, 8, 16]}, "particles[0].interpolation"),
])
def test_bad_particle_config_names_the_key(entry, key):
    entry = dict(entry)
    others = {k: entry.pop(k) for k in list(entry) if "." in k}
    with pytest.raises(ConfigError) as err:
        load_config(None, {"particles": [entry], **others})
    assert str(err.value).startswith(f"{key} = ") and "\n" not in str(err.value)


def test_every_interpolation_method_is_one_entry_declaring_what_is_asked_of_it():
    """The config's choices and doc, the checks, the planner and the right-hand side all read
    simulator.particles.interpolation.METHODS: each entry evaluates by the spectral sum (a route of
    evaluate_at) or on the grid with a halo, costs something the planner can say, and names what to use
    instead wherever it can be refused; a grid method's halo planes are its window's
    (simulator.fft.stencils.STENCILS), not a number of its own."""
    from simulator.fft.stencils import STENCILS
    from simulator.particles.interpolation import METHODS
    from simulator.particles.species import Species

    field = Species.__dataclass_fields__["interpolation"]
    assert field.metadata["choices"] == tuple(METHODS)
    for m in METHODS.values():
        assert m.route in ("direct", "nufft") or (m.route is None and m.planes > 0), m.name
        assert (m.route is None) == (m.window is not None), m.name
        assert m.planes == (max(STENCILS[m.window].below, STENCILS[m.window].above) if m.window else 0), m.name
        assert f"{m.name} ({m.doc})" in field.metadata["doc"] and m.work(512)
        assert (m.platforms is None) == (not m.platform_note), m.name
        assert m.instead or not (m.planes or m.platforms or m.unavailable), m.name


def test_particles_need_a_flow_and_distinct_names():
    with pytest.raises(ConfigError, match=r"^particles = .*needs? a flow|^particles = .*is not available"):
        load_config(None, {"physics": {"name": "schrodinger_poisson"}, "initial": {"name": "soliton"},
                           "particles": [{"name": "t"}]})
    with pytest.raises(ConfigError, match=r"^particles\[1\]\.name = 't' repeats"):
        load_config(None, {"particles": [{"name": "t"}, {"name": "t"}]})


def test_a_species_is_added_on_the_command_line_only_whole(capfd):
    """``--set 'particles[2]={...}'`` adds a third species to a config of two (its keys as written, the others
    defaulted); the refusals of a key alone one past the end are in tests/test_bad_input.py. The command's own
    function (:func:`simulator.cli.main`, what ``simulator validate`` runs) in this process."""
    from pathlib import Path

    import yaml

    config = Path(__file__).parents[1] / "configs" / "forced_turbulence_particles.yaml"
    added, changed = "particles[2]={name: heavy, count: 8, tau_p: 0.1}", "particles[1].tau_p=0.2"
    code, out, err = command(capfd, "validate", str(config), "--set", added, "--set", changed)
    assert code == 0, err
    species = yaml.safe_load(out)["particles"]
    assert [(s["name"], s["count"], s["tau_p"]) for s in species] == [("tracers", 4096, 0.0), ("inertial", 512, 0.2),
                                                                     ("heavy", 8, 0.1)]


def test_plan_counts_the_particles_bytes(devices):
    from simulator import particles
    from simulator.planning import plan
    species = [{"name": "tracers", "count": 1000}, {"name": "drops", "count": 8, "placement": "lattice", "tau_p": 0.1}]
    sim = simulation(devices, ("slab", 2, None), grid__shape=[8, 8, 8], particles=species)
    state = plan.abstract_state(sim)
    held = {k: v for k, v in state.items() if k.startswith("particles.")}
    assert all(v.sharding.is_fully_replicated for v in held.values())
    assert sum(v.size * v.dtype.itemsize for v in held.values()) == particles.state_bytes(sim.cfg) == 1000 * 24 + 8 * 48
    line = particles.describe(sim.cfg, 2)
    assert line.startswith("particles: 1008 in 2 species, 0.0233 MiB") and "exact (1008)" in line


@pytest.mark.slow
def test_the_particle_benchmark_measures_each_path_against_the_bare_step(tmp_path):
    """scripts/bench_particles.py at a toy size: a row per path and count, with the tracers' own memory."""
    import json
    import subprocess
    import sys
    from pathlib import Path

    script = Path(__file__).parents[1] / "scripts" / "bench_particles.py"
    # 32768 tracers: 64 (3 KB of positions and velocities) measured -154 bytes each once the 16^3 field's own
    # program moved by 10 KB between two schedules (its advection's form), and 512 (24 KB) 13.7 bytes each once
    # it moved by 27 KB (its velocity's inverse transform stacked on one device): the difference of two chunks
    # means something only where the tracers' bytes outweigh the field program's variation. One count: a second
    # compiled every path again and ran no other line of the script
    done = subprocess.run([sys.executable, str(script), "--sizes", "16", "--counts", "32768",
                           "--interpolations", "lagrange4", "nufft", "--distributions", "replicated", "owned",
                           "--repeats", "1", "--steps", "1", "--out", str(tmp_path)],
                          check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads((tmp_path / "particles.json").read_text())["rows"]
    assert [(r["interpolation"], r["distribution"], r["tracers"]) for r in rows] == [
        ("lagrange4", "replicated", 32768), ("lagrange4", "owned", 32768),
        ("nufft", "replicated", 32768)]  # owned: lagrange4 only
    for r in rows:
        assert r["step_ms"] > 0 and r["bare_ms"] > 0
        # positions and velocities of every tracer live in the chunk: at least 2 x 3 float64 each
        assert r["bytes_per_particle"] >= 48, r
    assert "# wrote" in done.stdout
    # the memory alone, on 4 devices: owned tracers hold a quarter of the slots (capacity 2: half the particles)
    done = subprocess.run([sys.executable, str(script), "--sizes", "16", "--counts", "20000", "--interpolations",
                           "lagrange4", "--distributions", "replicated", "owned", "--devices", "4", "--memory-only",
                           "--out", str(tmp_path)], check=False, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    replicated, owned = json.loads((tmp_path / "particles.json").read_text())["rows"]
    assert replicated["step_ms"] is None and owned["bytes_per_device"] < 0.75 * replicated["bytes_per_device"]


@pytest.mark.parametrize("settings, code, expected", [
    (["time.dt=0.01", "particles=[{name: d, count: 8, placement: lattice, tau_p: 1.0e-6}]"], 2,
     ("error: particles[0].tau_p = 1e-06 is too small for the time step; time.dt = 0.01 exceeds 2.79e-06, the stable "
      "limit of rk4 on the Stokes drag (2.785 tau_p")),
    (["time.cfl=0.5", "particles=[{name: d, count: 8, placement: file, path: p.npy, tau_p: 1.0e-4}]"], 0,
     "the Stokes drag of particles[0] (tau_p = 0.0001) limits dt to 0.000279, the stable limit of rk4"),
    (["particles=[{name: d, count: 8, placement: lattice, tau_p: 1.0, gravity: [0, 0, -1.0e300]}]"], 1,
     ("ERROR particle species d blew up (a position or velocity non-finite, or a position too far out to locate) at "
      "step 2, t = 0.02")),
], ids=["fixed-dt-refused", "cfl-bounded", "blow-up-fails"])
def test_inertial_particles_never_blow_up_with_exit_0(tmp_path, settings, code, expected, monkeypatch, capfd):
    """Stokes drag integrated explicitly is stable only for dt <= 2.785 tau_p in RK4: a fixed time.dt beyond
    it is refused at start-up (no run directory), an adaptive one is bounded by it (said in the log), and a
    particle state that blows up anyway stops the run as a non-finite field does (exit 1, status failed).
    All three ended with exit 0 and positions of 1e45 and more. The file placement also shows the warning
    for positions wrapped into the box. The command's own function (:func:`simulator.cli.main`, what
    ``simulator run`` runs) in this process, in the run's directory, its stderr read at the file descriptor."""
    from pathlib import Path

    np.save(tmp_path / "p.npy", np.array([[7.0, 1, 1], [-1, 1, 1]] + [[1.0, 2, 3]] * 6))
    monkeypatch.chdir(tmp_path)
    config = Path(__file__).parents[1] / "configs" / "taylor_green.yaml"
    # one device, as the command runs it in a process of its own (this one holds the suite's eight)
    sets = [a for s in ["grid.shape=8", "precision=float64", "output.chunk=2", "time.t_end=0.02", "fft.mesh=[1]",
                        *settings] for a in ("--set", s)]
    returncode, _, stderr = command(capfd, "run", str(config), *sets, "--out", "run")
    assert returncode == code and expected in stderr, stderr[-3000:]
    run = tmp_path / "run"
    if code == 2:
        assert len(stderr.strip().splitlines()) == 1 and not run.exists()
    elif code == 1:
        assert '"state": "failed"' in (run / "status.json").read_text() and not (run / "checkpoints").exists()
    else:
        assert "particles[0] (d): 2 of the 8 positions in p.npy lie outside the box; wrapped into it" in stderr
        import h5py

        from simulator.output import checkpoints

        with h5py.File(checkpoints.find(run).index) as f:
            assert np.abs(f[velocity_key("d")][()]).max() < 10 and np.abs(f[position_key("d")][()]).max() < 10
