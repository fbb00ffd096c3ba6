"""The windows' gather and scatter (simulator.fft.window) and the hand-over's rows (simulator.fft.owned), their
implementation chosen by simulator.fft.kernels: the native CPU kernels equal XLA's implementation (values, NaN and
zero outside a block, every derivative order, forward and reverse mode, vmap), the particle-mesh programs run them
on CPU and XLA's elsewhere, the hand-over moves the same rows both ways, and how the path is chosen.

The windows' physics (the assignment written out, momentum conservation, the orders, gradients through whole
runs) is held by test_fdm_cdm.py and test_particles.py, on whichever path runs here."""

from __future__ import annotations

import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.errors import ConfigError
from simulator.fft import kernels, window as W
from simulator.fft.stencils import STENCILS

SHAPE = (6, 7, 8)
SPACING = (0.5, 0.25, 1 / 3)
#: (cut axes, reach, outside): a block holding the grid whole; one of several along x and z, points outside it
#: giving 0 (replicated points) or inside by construction (owned); and a reach of one cell giving NaN beyond
BLOCKS = [((False, False, False), 0, "none"), ((True, False, True), 0, "zero"), ((True, False, True), 0, "none"),
          ((True, False, True), 1, "nan")]
HELD = (3, 7, 4)  # the block's own cells along a cut axis
STARTS = (3, 0, 4)
#: the derivative orders of the weights compared: none, a first, a second and a mixed one
ORDERS = [(0, 0, 0), (1, 0, 0), (0, 2, 1)]


@pytest.fixture(scope="module")
def native():
    """The native kernels, or a skip saying why (a failure where CI builds them: SIMULATOR_REQUIRE_NATIVE=1)."""
    from support import unavailable

    module, why = kernels.native()
    if module is None:
        unavailable("native particle kernels", "SIMULATOR_REQUIRE_NATIVE", why)
    return module


def block_case(name: str, cut, reach: int, outside: str, count: int, seed: int, dtype=jnp.float64):
    """A block of ``SHAPE`` with its halo, the points (inside it where ``outside`` is none, also up to 1.5 cells
    beyond otherwise), its starts and values: ``(block, field, points, starts, values, extent)``."""
    rng = np.random.default_rng(seed)
    w = STENCILS[name]
    extent = tuple(h + w.width - 1 + 2 * reach if c else n for h, c, n in zip(HELD, cut, SHAPE, strict=True))
    starts = np.array([s if c else 0 for s, c in zip(STARTS, cut, strict=True)])
    dx = np.array(SPACING)
    lo = np.where(cut, starts * dx, -2 * np.array(SHAPE) * dx)  # an axis held whole: any coordinate (periodic)
    hi = np.where(cut, (starts + np.array(HELD)) * dx, 3 * np.array(SHAPE) * dx)
    margin = 0 if outside == "none" else 1.5 * dx
    points = rng.uniform(lo - margin, hi + margin, (count, 3))
    block = W.Block(SHAPE, SPACING, cut, reach, outside)
    return (block, jnp.asarray(rng.normal(size=(2, *extent)), dtype), jnp.asarray(points, dtype),
            jnp.asarray(starts, jnp.int32), jnp.asarray(rng.normal(size=(2, count)), dtype), extent)


def scaled(a, b) -> float:
    a, b = np.asarray(a), np.asarray(b)
    assert np.array_equal(np.isnan(a), np.isnan(b))
    return float(np.nanmax(np.abs(a - b)) / max(np.nanmax(np.abs(b)), 1e-300))


def test_every_window_is_declared_once_and_weighted_on_its_nodes():
    """The windows' nodes, orders and native codes are one declaration without JAX (simulator.fft.stencils), read
    by the config's checks and choices (physics.cdm_window: the assignment functions, those of an order) and the
    particles' methods; the JAX weights are keyed by it: one function per window, giving one weight per node that
    sum to 1 at every offset (a constant field is interpolated exactly, mass is conserved)."""
    from simulator.equations.cold import window_setting

    assert set(W.WINDOWS) == set(STENCILS) and len({s.code for s in STENCILS.values()}) == len(STENCILS)
    assert window_setting().metadata["choices"] == tuple(n for n, s in STENCILS.items() if s.order) == ("cic", "tsc")
    t = jnp.linspace(0, 1, 7, endpoint=False)
    for name, w in W.WINDOWS.items():
        assert w.stencil is STENCILS[name]
        weights = np.asarray(w.weights(t))
        assert weights.shape == (7, w.stencil.width) and np.allclose(weights.sum(-1), 1, atol=1e-14), name
        assert f"{name} ({w.stencil.doc})" in window_setting().metadata["doc"] or not w.stencil.order, name


@pytest.mark.parametrize("name", ["cic", "tsc", "lagrange4"])
@pytest.mark.parametrize("cut, reach, outside", BLOCKS, ids=lambda v: str(v))
def test_the_native_windows_equal_xla_s(native, name, cut, reach, outside):
    """Gather and scatter, the weights and their derivatives (orders 1 and 2, mixed), on three threads and one:
    the native kernels equal XLA's gather-and-contract to round-off (float64), NaN and 0 where XLA gives them;
    float32 to its round-off."""
    block, field, points, starts, values, extent = block_case(name, cut, reach, outside, 80, 1)

    @jax.jit
    def compared(field, points, starts, values):  # one program for every call (one compile, not 18)
        out = []
        for orders in ORDERS:
            kw = {"window": name, "block": block, "orders": orders}
            out.append([(W.gather(field, points, starts, impl=impl, threads=threads, **kw),
                         W.scatter(values, points, starts, extent=extent, impl=impl, threads=threads, **kw))
                        for impl, threads in (("xla", 1), ("native", 1), ("native", 3))])
        return out

    by_orders = compared(field, points, starts, values)
    for (want, spread), *natives in by_orders:
        for gathered, scattered in natives:
            assert scaled(gathered, want) < 1e-13 and scaled(scattered, spread) < 1e-13
    want = by_orders[-1][0][0]
    if outside != "none":  # points outside the block were drawn, and give what they must
        assert np.any(np.asarray(want) == 0) if outside == "zero" else np.any(np.isnan(np.asarray(want)))
    # called outside any jit: the primitives' own evaluation (a jitted bind each)
    block, field, points, starts, values, extent = block_case(name, cut, reach, outside, 80, 2, jnp.float32)
    kw = {"window": name, "block": block}
    got = W.gather(field, points, starts, impl="native", **kw)
    assert got.dtype == jnp.float32 and scaled(got, W.gather(field, points, starts, impl="xla", **kw)) < 1e-5


@pytest.mark.parametrize("name", ["cic", "tsc", "lagrange4"])
def test_window_derivatives_in_both_modes_and_under_vmap(native, name):
    """Forward mode against central differences in the points (the weights' slopes), reverse mode in the points
    and in the field equal to XLA's, and vmap over the points or the field equal to one call per member."""
    block, field, points, starts, values, extent = block_case(name, (True, False, True), 1, "nan", 60, 3)

    def gather(x, impl, f=field):
        return W.gather(f, x, starts, window=name, block=block, impl=impl, threads=2)

    def scatter(x, impl):
        return W.scatter(values, x, starts, extent=extent, window=name, block=block, impl=impl, threads=2)

    d = jnp.asarray(np.random.default_rng(4).normal(size=points.shape))
    h = 1e-6

    @jax.jit
    def derived(points, d, field):  # every derivative below in one program (one compile, not one a call)
        out = []
        for fn in (gather, scatter):
            tangents = [jax.jvp(lambda x, fn=fn, i=i: fn(x, i), (points,), (d,))[1] for i in ("native", "xla")]
            central = (fn(points + h * d, "native") - fn(points - h * d, "native")) / (2 * h)
            grads = [jax.grad(lambda x, i=i, fn=fn: jnp.nansum(jnp.sin(fn(x, i))))(points) for i in ("native", "xla")]
            out.append((tangents, central, grads))
        by_field = [jax.grad(lambda f, i=i: jnp.nansum(gather(points, i, f) ** 2))(field) for i in ("native", "xla")]
        members = jnp.stack([points, points * 0.9])
        by_points = jax.vmap(lambda x: gather(x, "native"))(members), [gather(m, "xla") for m in members]
        by_fields = (jax.vmap(lambda f: gather(points, "native", f))(jnp.stack([field, 2 * field])),
                     gather(points, "xla"))
        return out, by_field, by_points, by_fields

    out, by_field, (stacked, each), (doubled, once) = derived(points, d, field)
    for (tangent, xla_tangent), central, grads in out:
        beyond = np.isnan(np.asarray(central))  # a point beyond the reach: NaN, a constant (slope 0)
        assert np.all(np.asarray(tangent)[beyond] == 0)
        assert scaled(jnp.where(beyond, 0, central), tangent) < 1e-7
        assert scaled(tangent, xla_tangent) < 1e-13
        assert scaled(*grads) < 1e-13
    assert scaled(*by_field) < 1e-13
    assert all(scaled(stacked[i], each[i]) < 1e-13 for i in range(2))
    assert scaled(doubled[1], 2 * once) < 1e-13


@pytest.mark.parametrize("name", ["cic", "lagrange4"])
def test_an_empty_slot_gives_0_and_adds_nothing_back(native, name):
    """With ``live`` (owned slots), an empty slot's gather is 0 on both paths, even where its stale position lies
    beyond the reach (NaN unmasked); an occupied one's is the unmasked value. The gradient in the field (the
    transpose, a scatter) adds nothing of an empty slot, the tangent in the points is 0 there, and vmap over
    the masks gives one call per member."""
    block, field, points, starts, values, extent = block_case(name, (True, False, True), 1, "nan", 60, 5)
    live = jnp.asarray(np.random.default_rng(6).uniform(size=60) < 0.5)
    dead = ~np.asarray(live)

    @jax.jit
    def masked(field, points, values, live):  # every call below in one program (one compile, not one a call)
        def gather(f, x, impl, mask=live):
            return W.gather(f, x, starts, window=name, block=block, impl=impl, threads=2, live=mask)

        out = {}
        for impl in ("native", "xla"):
            d = jnp.ones_like(points)
            out[impl] = (gather(field, points, impl),
                         jax.grad(lambda f, impl=impl: jnp.sum(gather(f, points, impl) * values))(field),
                         jax.jvp(lambda x, impl=impl: gather(field, x, impl), (points,), (d,))[1])
        want = W.scatter(jnp.where(live[None, :], values, 0), points, starts, extent=extent, window=name, block=block,
                         impl="xla")
        masks = jnp.stack([live, ~live])
        by_masks = jax.vmap(lambda m: gather(field, points, "native", m))(masks), [gather(field, points, "xla", m)
                                                                                   for m in masks]
        return gather(field, points, "xla", None), out, want, by_masks

    plain, out, want, (stacked, each) = masked(field, points, values, live)
    plain = np.asarray(plain)
    assert np.isnan(plain[:, dead]).any()  # a stale position beyond the reach, which the mask must hide
    for impl in ("native", "xla"):
        got, by_field, tangent = (np.asarray(a) for a in out[impl])
        assert np.all(got[:, dead] == 0) and scaled(got[:, ~dead], plain[:, ~dead]) < 1e-13
        assert scaled(by_field, want) < 1e-13
        assert np.all(tangent[:, dead] == 0)
    assert all(scaled(stacked[i], each[i]) < 1e-13 for i in range(2))

@pytest.mark.parametrize("name", ["cic", "tsc", "lagrange4"])
def test_stale_positions_of_empty_slots_and_runs_of_points_leave_the_rest_exact(native, name):
    """The native kernels compute 64 points' stencils at a time, an empty slot's among them: 300 points (runs cut
    by the threads' ranges), every other slot empty with a position of NaN, +-inf or 1e30. The occupied slots'
    gather equals XLA's, the empty ones give 0, and the scatter of values that are 0 on the empty slots equals
    XLA's scatter without them: no stale position reaches a node outside the block or a value."""
    block, field, points, starts, values, extent = block_case(name, (True, False, True), 1, "nan", 300, 7)
    live = np.arange(300) % 2 == 0
    junk = np.resize(np.array([np.nan, np.inf, -np.inf, 1e30, -1e30]), (150, 3))
    stale = np.asarray(points).copy()
    stale[~live] = junk
    kw = {"window": name, "block": block}

    @jax.jit
    def kept(field, stale, points, values, slots):  # every call below in one program (one compile, not one a call)
        carried = jnp.where(slots[None, :], values, 0)
        natives = [(W.gather(field, stale, starts, impl="native", threads=threads, live=slots, **kw),
                    W.scatter(carried, stale, starts, extent=extent, impl="native", threads=threads, **kw))
                   for threads in (1, 2, 3)]
        return natives, (W.gather(field, points[live], starts, impl="xla", **kw),
                         W.scatter(values[:, live], points[live], starts, extent=extent, impl="xla", **kw))

    natives, (want, spread_want) = kept(field, jnp.asarray(stale), points, values, jnp.asarray(live))
    for got, spread in natives:
        got = np.asarray(got)
        assert np.all(got[:, ~live] == 0) and scaled(got[:, live], want) < 1e-13
        assert scaled(spread, spread_want) < 1e-13


def test_the_native_kernels_refuse_operands_and_results_of_other_shapes_than_they_index(native):
    """Each kernel indexes its result and operands by the shapes of the others (a gather's result (B, P) by the
    block's batch and the points, the rows taken by the indices), so one of another shape would be read or written
    past its end: refused, naming what is expected. Here each is larger than indexed, or holds no element (the old
    kernels ran these, leaving rows unwritten or reading none, with no access out of bounds)."""
    from simulator.fft import owned

    name, block = "cic", W.Block((4, 4, 4), (1.0, 1.0, 1.0))
    attributes = W._attributes(name, block, (0, 0, 0), 1)
    field, points, starts = jnp.zeros((2, 4, 4, 4)), jnp.full((5, 3), 0.5), jnp.zeros(3, jnp.int32)

    def refused(words, target, results, *operands, **attrs):
        with pytest.raises(jax.errors.JaxRuntimeError, match=words):
            jax.block_until_ready(jax.jit(lambda *a: jax.ffi.ffi_call(target, results)(*a, **attrs))(*operands))

    none = jnp.zeros((0,), bool)
    refused("values \\(B, P\\)", "simulator_window_gather", jax.ShapeDtypeStruct((2, 6), field.dtype), field, points,
            starts, none, **attributes)
    refused("values \\(B, P\\)", "simulator_window_gather", jax.ShapeDtypeStruct((3, 5), field.dtype), field, points,
            starts, none, **attributes)
    scratch = jax.ShapeDtypeStruct((0,), field.dtype)
    refused("values \\(B, P\\)", "simulator_window_scatter", (jax.ShapeDtypeStruct(field.shape, field.dtype), scratch),
            jnp.ones((2, 6)), points, starts, **attributes)
    refused("values \\(B, P\\)", "simulator_window_scatter", (jax.ShapeDtypeStruct((3, 4, 4, 4), field.dtype), scratch),
            jnp.ones((2, 5)), points, starts, **attributes)
    x = jnp.arange(15.0).reshape(5, 3)
    refused("take rows: .* one per index", "simulator_take_rows", jax.ShapeDtypeStruct((4, 3), x.dtype), x,
            jnp.arange(2, dtype=jnp.int32))
    # rows without elements, to targets outside x (written nowhere): the rows are not x's
    refused("put rows: rows of x's", "simulator_put_rows", jax.ShapeDtypeStruct(x.shape, x.dtype), x,
            jnp.zeros((2, 0)), jnp.asarray([7, 9], jnp.int32))
    # x without rows: the rows of its shape are taken and put (none of them exists)
    assert np.array_equal(owned._take(jnp.zeros((0, 3)), jnp.zeros(2, jnp.int32), "native"), np.zeros((2, 3)))
    assert owned._put(jnp.zeros((0, 3)), jnp.zeros(2, jnp.int32), jnp.ones((2, 3)), "native").shape == (0, 3)


def face_points(box: float, n: int, dtype) -> np.ndarray:
    """Coordinates on and around every cell face of an axis of ``n`` cells over ``box`` (the nearest float to
    each k dx, its neighbours two ulps either way, the same below 0 and past L), 0, -0, L, and not finite ones."""
    faces = np.asarray([k * box / n for k in range(-n, 2 * n + 1)], dtype)
    near = [faces]
    for step in (1, 2):
        near += [np.nextafter(faces, dtype(np.inf)), np.nextafter(faces, dtype(-np.inf))]
        faces = near[-2]
        near[-1] = np.nextafter(near[-1], dtype(-np.inf)) if step == 2 else near[-1]
    odd = np.asarray([0.0, -0.0, box, np.nan, np.inf, -np.inf], dtype)
    return np.concatenate([*near, odd]).astype(dtype)


def reference_owner(x: np.ndarray, box: float, n: int, devices: int) -> np.ndarray:
    """The owner by definition: the cell floor(x * dtype(1/dx)) (one IEEE product in x's precision, a subnormal x
    flushed to 0 as XLA's CPU threads do), wrapped as an exact integer, over the block's cells; -1 where x is not
    finite."""
    x = np.where(np.abs(x) < np.finfo(x.dtype).tiny, x.dtype.type(0), x)
    with np.errstate(invalid="ignore"):
        cell = np.floor(x * x.dtype.type(1.0 / (box / n)))
    out = np.full(x.shape, -1)
    finite = np.isfinite(cell)
    out[finite] = (cell[finite].astype(np.int64) % n) // (n // devices)
    return out


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("box, n, devices", [(0.7, 12, 4), (1.0, 98, 2), (1.0, 82, 2), (3.3, 48, 4), (1.0, 16, 4)])
def test_the_owner_of_a_point_on_a_face_is_the_same_everywhere(native, dtype, box, n, devices):
    """A point on or an ulp or two from a cell face, below 0 or past L, and one not finite: the hand-over's owner
    (XLA's and the native pass's) and the windows' cell (the native gather, which gives NaN outside the block)
    all take the cell floor(x (1/dx)) of one product, wrapped exactly, then the block's quotient. XLA compiles a
    division by a constant as that product, so a division anywhere would disagree on faces; a quotient's floor
    off by one put a cell on a multiple of the grid (x = L) or of a block in the wrong block."""
    from simulator.fft import owned

    x = face_points(box, n, dtype)
    want = reference_owner(x, box, n, devices)
    dx = box / n
    got = np.asarray(jax.jit(lambda x: owned.owner(x, n, dx, devices))(jnp.asarray(x)))
    assert np.array_equal(got, want)
    points = np.zeros((x.size, 3), dtype)
    points[:, 0] = x
    live = np.ones(x.size, bool)
    block = W.Block((n, 4, 4), (dx, 1.0, 1.0), (True, False, False), 0, "nan")
    field = jnp.ones((1, n // devices + STENCILS["cic"].width - 1, 4, 4), dtype)

    @jax.jit
    def passes(p, live):  # every device's passes and windows in one program (one compile, not three a device)
        leavers = {impl: [owned._leavers(p, live, jnp.int32(me), 0, n, dx, devices, x.size, impl)
                          for me in range(devices)] for impl in ("native", "xla")}
        windows = [W.gather(field, p, jnp.asarray([me * (n // devices), 0, 0], jnp.int32), window="cic", block=block,
                            impl="native") for me in range(devices)]
        return leavers, windows

    leavers, windows = passes(jnp.asarray(points), jnp.asarray(live))
    for me in range(devices):
        delta = (want - me) % devices
        outs = {}
        for impl in ("native", "xla"):
            outs[impl] = [np.asarray(a) for a in leavers[impl][me]]
            ups = np.flatnonzero((want >= 0) & (delta == 1))
            downs = np.flatnonzero((want >= 0) & (delta == devices - 1) & (devices > 2))
            assert np.array_equal(outs[impl][0][:ups.size], ups) and np.all(outs[impl][0][ups.size:] == x.size)
            assert np.array_equal(outs[impl][1][:downs.size], downs) and np.all(outs[impl][1][downs.size:] == x.size)
            far = np.sum((want < 0) | ((delta != 0) & (delta != 1) & (delta != devices - 1)))
            assert outs[impl][3].tolist() == [ups.size, downs.size, far]
        assert all(np.array_equal(a, b) for a, b in zip(outs["native"], outs["xla"], strict=True))
        # the native window: a point's value is finite exactly where its cell lies in this device's block
        assert np.array_equal(np.isfinite(np.asarray(windows[me])[0]), want == me), me


def mixed_sim(devices, n=8, count=4, case=None):
    from support import simulation

    return simulation(devices, case or ("slab", count, None), physics__name="fdm_cosmo", initial__name="gaussian",
                      grid__shape=[n] * 3, grid__box=[1.0] * 3, physics__fdm_fraction=0.5, physics__cdm_particles=n**3)


def test_the_particle_mesh_runs_the_native_kernels_on_cpu_and_xla_s_when_asked(native, devices, monkeypatch):
    """A mixed step's program on CPU calls the windows' and the hand-over's kernels and no XLA gather or scatter
    of particles (XLA's, 5-10x slower, docs/PERFORMANCE.md); with SIMULATOR_PARTICLES=xla none of them, the same
    state to round-off."""
    from simulator.planning import plan

    text = {}
    ends = {}
    for path in ("native", "xla"):
        monkeypatch.setenv("SIMULATOR_PARTICLES", path)
        sim = mixed_sim(devices)
        state = sim.initial_state()
        # the run's chunk as the planner compiles it, the program whose text is read also taking the steps (one
        # compile of it, not a second for Simulation.advance)
        chunk = plan.compiled_programs(sim, state, ["chunk"])["chunk"]
        text[path] = chunk.as_text()
        ends[path] = chunk(sim.equation, state, sim.time_array(0.0), sim.scalar(3, jnp.int32), sim.scalar(0.02),
                           sim.params)
    targets = ("simulator_window_gather", "simulator_window_scatter", "simulator_first", "simulator_take_rows",
               "simulator_put_rows")
    assert all(f'custom_call_target="{t}"' in text["native"] for t in targets)
    assert not any(t in text["xla"] for t in targets)
    assert " scatter(" not in text["native"] and " scatter(" in text["xla"]
    for leaf in ("position", "momentum", "force", "psi"):
        assert scaled(getattr(ends["native"], leaf), getattr(ends["xla"], leaf)) < 1e-12, leaf
    assert np.array_equal(np.asarray(ends["native"].ident), np.asarray(ends["xla"].ident))  # the same slots


@pytest.mark.parametrize("case", [("slab", 4, None), ("pencil", 4, [2, 2])], ids=["slab4", "pencil2x2"])
def test_the_hand_over_moves_the_same_rows_on_both_paths_in_either_buffers(native, devices, case):
    """The hand-over after a drift of about a cell, on four devices (a slab; a 2 x 2 pencil, along both axes): the
    native kernels and XLA's prefix sums and scatters leave every slot the same, bit for bit, and lose nothing, whether
    it sends the full buffers at once, first buffers just large enough for every device's leavers (the same slots), or
    first buffers one row short, then the rest (the branch every device takes together: the same particles, in other
    slots or not)."""
    from simulator.equations.cold import mesh
    from simulator.fft import owned

    sim = mixed_sim(devices, n=16 if case[2] else 8, case=case)
    state = sim.initial_state()
    moved = mesh.drift(sim.equation, state.position, state.momentum / jnp.max(jnp.abs(state.momentum)) * 0.1, 1.0)
    moves, axes = owned.sharded_axes(sim.fft), tuple(sim.fft.mesh.axis_names)
    geometry = (moves, tuple(sim.fft.shape), tuple(1.0 / n for n in sim.fft.shape))
    buffer = mesh.sizes(sim.equation)[1]
    spread = jax.sharding.PartitionSpec(axes)
    axis, mesh_axis, size = moves[0]

    def counted(live, x):  # the leavers along the first split axis
        counts = owned._leavers(x, live, jax.lax.axis_index(mesh_axis), axis, geometry[1][axis], geometry[2][axis],
                                size, buffer, "xla")[3]
        return jax.lax.pmax(jnp.max(counts[:2]), axes)

    need = int(jax.jit(jax.shard_map(counted, mesh=sim.fft.mesh, in_specs=(spread,) * 2,
                                     out_specs=jax.sharding.PartitionSpec()))(state.live > 0, moved))
    assert 1 < need < buffer  # both branches below are taken
    args = (state.live > 0, moved, state.momentum, state.ident)

    def fresh(*arrays):  # copies to donate (a donated array is deleted by the call)
        return [jax.device_put(np.asarray(a), a.sharding) for a in arrays]

    # donated as a run donates them (the in-place check below compiles the very programs the calls ran)
    out, bodies = {}, {}
    for first in (buffer, need, need - 1):
        for impl in ("native", "xla"):
            bodies[first, impl] = jax.jit(jax.shard_map(
                lambda *a, impl=impl, first=first: owned._migrate_local(*geometry, buffer, (first,) * len(moves), axes,
                                                                   impl, *a),
                mesh=sim.fft.mesh, in_specs=(spread,) * 4, out_specs=(spread,) * 4 + (jax.sharding.PartitionSpec(),)),
                donate_argnums=(0, 1, 2, 3))
            out[first, impl] = [np.asarray(a) for a in bodies[first, impl](*fresh(*args))]
    def by_identity(arrays):
        live, *rows, ident, counts = arrays
        order = np.argsort(ident[live])
        return [r[live][order] for r in rows] + [ident[live][order], counts]

    for key, arrays in out.items():
        if key[0] >= need:  # no device had more leavers than the first buffers hold: the same slots
            assert all(np.array_equal(a, b) for a, b in zip(arrays, out[buffer, "native"], strict=True)), key
        else:  # the rest sent after them: the same particles, the rest's arrivals in later empty slots
            assert all(np.array_equal(a, b) for a, b in zip(by_identity(arrays), by_identity(out[buffer, "native"]),
                                                             strict=True)), key
        assert all(np.array_equal(a, b) for a, b in zip(arrays, out[key[0], "native"], strict=True)), key  # both paths
    # the arrivals are written into the donated arrays in place: XLA copied each whole array first while a write
    # could come before another read of it (docs/PERFORMANCE.md, the hand-over written in place)
    slots = state.live.shape[0] // sim.fft.devices
    for first in (buffer, need):
        text = bodies[first, "native"].lower(*args).compile().as_text()
        assert not re.findall(rf"= (?:f32|f64|s32)\[{slots}(?:,3)?\]\S* copy\(", text), first
    assert out[buffer, "native"][-1].tolist() == [0, 0, 0]
    before, after = np.asarray(state.live) > 0, out[buffer, "native"][0]
    assert after.sum() == before.sum()  # every particle has a slot
    assert np.any(after & ~before) and np.any(before & ~after)  # rows did move between devices
    assert np.array_equal(np.sort(out[buffer, "native"][3][after]), np.arange(before.sum()))
    # a particle not finite along every split axis is far along each (two devices to an axis have no block
    # further away): counted once, not once per axis (the pencil counted it twice), and lost from the slots as
    # every lost particle is, so that no later axis or step counts it again; one not finite along one axis, once
    split = [a for a, _, _ in moves]
    strays = np.flatnonzero(before)[[3, -5]]
    bad = np.asarray(moved).copy()
    bad[strays[0], split] = np.nan
    bad[strays[1], split[0]] = np.inf
    bad = jax.device_put(bad, moved.sharding)
    for impl in ("native", "xla"):
        live, *_, ident, counts = (np.asarray(a) for a in bodies[buffer, impl](*fresh(args[0], bad, *args[2:])))
        assert counts.tolist() == [0, 0, 2], (impl, counts)
        assert live.sum() == before.sum() - 2 and not set(np.asarray(state.ident)[strays]) & set(ident[live]), impl
    why = sim.equation.lost(state._replace(lost=owned.counted(None, jnp.asarray(counts))))
    assert why.reason.startswith("2 cold particle(s) moved more than one device's block"), why


@pytest.mark.parametrize("impl", ["native", "xla"])
def test_a_full_device_loses_nothing_to_the_first_buffers(devices, impl):
    """A device with every slot taken sends 3 particles up and receives 3 (2 from below, 1 from above): the
    slots its leavers free are all the room it has. With first buffers of 2 rows its first arrivals find none
    (they keep out of the slots of the leaver still to be sent); they then take the slots the rest frees. Nothing
    is lost, as with buffers of 4 sent at once, and the same particles end on the same devices."""
    from jax.sharding import NamedSharding, PartitionSpec

    from simulator.fft import owned

    if impl == "native" and kernels.native()[0] is None:
        pytest.skip("native particle kernels not built: " + kernels.native()[1])
    mesh = jax.sharding.Mesh(np.asarray(devices[:4]), ("x",))
    slots, n = 6, 8

    def block(b):  # a coordinate in block b of 4
        return 0.25 * b + 0.1

    position = np.full((4, slots, 3), 0.1)
    live = np.zeros((4, slots), bool)
    position[0, :, 0] = [block(1)] * 3 + [block(0)] * 3  # full; 3 leave up
    live[0] = True
    position[3, :4, 0] = [block(0)] * 2 + [block(3)] * 2  # 2 go up (around) to device 0
    live[3, :4] = True
    position[1, :2, 0] = [block(0), block(1)]  # 1 goes down to device 0
    live[1, :2] = True
    position[2, 0, 0] = block(2)
    live[2, 0] = True
    ident = np.arange(4 * slots, dtype=np.int32)
    spread = NamedSharding(mesh, PartitionSpec("x"))
    args = [jax.device_put(a, spread) for a in (live.reshape(-1), position.reshape(-1, 3), ident)]
    ends = {}
    for first in (4, 2):
        body = jax.shard_map(lambda *a, first=first: owned._migrate_local([(0, "x", 4)], (n, n, n), (1 / n,) * 3, 4,
                                                                           (first,), ("x",), impl, *a),
                             mesh=mesh, in_specs=(PartitionSpec("x"),) * 3,
                             out_specs=(PartitionSpec("x"),) * 3 + (PartitionSpec(),))
        out_live, out_position, out_ident, counts = (np.asarray(a) for a in jax.jit(body)(*args))
        assert counts.tolist() == [0, 0, 0], first
        assert out_live.sum() == live.sum()
        held = out_live.reshape(4, slots)
        ends[first] = [sorted(out_ident.reshape(4, slots)[d][held[d]].tolist()) for d in range(4)]
        x = out_position.reshape(4, slots, 3)[..., 0]
        assert all(np.all(np.floor(x[d][held[d]] / 0.25) == d) for d in range(4))
    assert ends[2] == ends[4]


def test_a_run_hands_over_the_same_particles_whichever_buffers_it_sends_first(devices, monkeypatch):
    """A mixed run of 16^3 particles on a slab of 4 (4 planes a device: the first buffers, one plane's mean count,
    are half the cdm_exchange ones), 6 steps of about a cell: the same particles at the same positions and momenta
    (1e-12; the slots they sit in may differ, so the sums of the deposit may round differently) whether each
    hand-over sends the cdm_exchange buffers at once, first buffers of one plane's mean count (the default), or
    first buffers of one row, so that every step also sends the rest."""
    from simulator.equations.cold import mesh
    from simulator.fft import particle_slots as slots

    from support import advance

    first_rows = slots.first_rows
    ends = {}
    for name, rule in (("at once", lambda held, planes, rows: rows), ("default", first_rows),
                       ("one row", lambda held, planes, rows: 1)):
        monkeypatch.setattr(slots, "first_rows", rule)
        sim = mixed_sim(devices, n=16)
        eq = sim.equation
        held, rows = mesh.sizes(eq)
        assert (rule(held, 4, rows) < rows) == (name != "at once"), (held, rows)
        state = advance(sim, sim.initial_state(), 0.5, 6)
        live = np.asarray(state.live) > 0
        order = np.argsort(np.asarray(state.ident)[live])
        ends[name] = {k: np.asarray(getattr(state, k))[live][order] for k in ("position", "momentum", "ident")}
        ends[name]["lost"] = np.asarray(state.lost)
        assert ends[name]["lost"][:3].tolist() == [0, 0, 0], name
    for name in ("default", "one row"):
        assert np.array_equal(ends[name]["ident"], ends["at once"]["ident"])
        for k in ("position", "momentum"):
            assert scaled(ends[name][k], ends["at once"][k]) < 1e-12, (name, k)


def test_the_environment_chooses_the_path(monkeypatch):
    monkeypatch.setenv("SIMULATOR_PARTICLES", "xla")
    assert kernels.implementation("cpu") == "xla"
    monkeypatch.setenv("SIMULATOR_PARTICLES", "auto")
    assert kernels.implementation("gpu") == "xla"
    assert kernels.implementation("cpu") == ("native" if kernels.native()[0] is not None else "xla")
    monkeypatch.setenv("SIMULATOR_PARTICLES", "fast")
    with pytest.raises(ConfigError, match=r"^SIMULATOR_PARTICLES = 'fast' is not allowed; expected one of auto, "
                                          r"native, xla$"):
        kernels.implementation("cpu")


def test_native_kernels_asked_for_where_they_cannot_run_are_refused_and_info_says_which_run(monkeypatch):
    """SIMULATOR_PARTICLES=native on a GPU, or where the extension is not built, is one line saying why (it
    silently ran XLA's path, 5-10x slower on CPU); ``simulator info`` states which kernels run and why not the
    native ones."""
    monkeypatch.setenv("SIMULATOR_PARTICLES", "native")
    with pytest.raises(ConfigError, match=r"^SIMULATOR_PARTICLES = 'native' .*CPU only, not gpu"):
        kernels.implementation("gpu")
    monkeypatch.setattr(kernels, "native", lambda: (None, "native extension not built (bash scripts/setup.sh ...)"))
    with pytest.raises(ConfigError, match=r"native extension not built .*leave it unset \(auto\)"):
        kernels.implementation("cpu")
    monkeypatch.setenv("SIMULATOR_PARTICLES", "auto")
    assert kernels.implementation("cpu") == "xla"
    assert kernels.describe("cpu") == "xla (native extension not built (bash scripts/setup.sh ...))"
    assert kernels.describe("gpu") == "xla (the native kernels run on CPU only; this is gpu)"
    monkeypatch.undo()
    monkeypatch.delenv("SIMULATOR_PARTICLES", raising=False)
    info = subprocess.run([sys.executable, "-m", "simulator", "info"], capture_output=True, text=True, timeout=120,
                          check=True).stdout
    line = next(line for line in info.splitlines() if line.startswith("particle kernels:"))
    assert line.split(":", 1)[1].strip() == kernels.describe("cpu"), line


def test_an_extension_older_than_the_code_is_not_used(monkeypatch):
    """An extension built from older source (a handler this code calls is missing) falls back to XLA's path,
    saying how to rebuild, instead of failing at run time."""
    import types

    import simulator.fft

    old = types.SimpleNamespace(handlers=lambda: {"simulator_window_gather": None})
    monkeypatch.setattr(kernels.importlib.util, "find_spec", lambda name: object())
    monkeypatch.setitem(sys.modules, "simulator.fft._particles", old)
    monkeypatch.setattr(simulator.fft, "_particles", old, raising=False)
    kernels.native.cache_clear()
    try:
        module, why = kernels.native()
        assert module is None and why.startswith("native extension older than this code (no simulator_first, ")
        monkeypatch.setenv("SIMULATOR_PARTICLES", "auto")
        assert kernels.implementation("cpu") == "xla"
    finally:
        kernels.native.cache_clear()


def test_a_gpu_takes_few_large_chunks_and_they_give_what_small_ones_do():
    """XLA's windows go a chunk of points at a time, each chunk one iteration of a loop of small kernels: on a GPU
    the iterations' launches cost more than their work at a CPU's chunk (256^3 particles' mass assignment took
    9.9 ms on one H200, 1024 chunks), so a GPU's chunks hold as many points as GPU_CHUNK_BYTES of windows do.
    The sums only change order: the same values to round-off."""
    assert W.chunk_points(("cpu",), 3, "tsc", 8) == W.LOCAL_CHUNK
    assert W.chunk_points(("cuda",), 1, "cic", 4) == W.GPU_CHUNK_BYTES // (8 * 16) == 1 << 21
    assert W.chunk_points(("cuda",), 3, "lagrange4", 8) == W.GPU_CHUNK_BYTES // (64 * 36)
    block, field, points, starts, values, extent = block_case("tsc", (True, False, True), 0, "zero",
                                                             2 * W.LOCAL_CHUNK + 5, 3)
    kw = {"window": "tsc", "block": block, "orders": (0, 1, 0)}

    @jax.jit
    def both(field, points, starts, values):  # in one program (one compile, not each operation's own)
        none = jnp.zeros((0,), bool)
        return [(W._xla_scatter(values, points, starts, extent=extent, chunk=chunk, **kw),
                 W._xla_gather(field, points, starts, none, chunk=chunk, **kw)) for chunk in (W.LOCAL_CHUNK, 1 << 20)]

    (small_scatter, small_gather), (large_scatter, large_gather) = both(field, points, starts, values)
    assert scaled(large_scatter, small_scatter) < 1e-13 and scaled(large_gather, small_gather) < 1e-13


def test_the_chunks_are_equal_and_pad_less_than_a_point_each():
    """Points go in the fewest chunks that ``size`` allows, all of one length: 128^3 particles in chunks of at
    most 2^20.7 (a float64 mass assignment on a GPU) had padded the last to 60% more points than there are, and
    taken 3.7 ms a step on one H200 against 1.2 ms once balanced."""
    size = 1_677_721
    for count in (128**3, 2 * size + 5, size, 7):
        points = jnp.zeros((count, 3), jnp.float32)
        c, (chunked, values) = W._chunks(points, jnp.ones((2, count), jnp.float32), size=size)
        chunks = -(-count // size)
        assert c <= size and chunked.shape == (chunks, c, 3) and values.shape == (chunks, 2, c)
        assert 0 <= chunks * c - count < chunks
        assert float(values.sum()) == 2 * count  # every point once, the padding zero


def test_a_gpu_s_program_takes_xla_s_path(devices):
    """Traced along a GPU's route (the planner's, or a GPU run's), the assignment, the interpolation and the
    hand-over lower to XLA's operations, which a GPU compiles: no native call (those are the CPU's)."""
    from simulator.equations.cold import mesh
    from simulator.fft.mesh import as_on

    sim = mixed_sim(devices, count=1)
    eq, state = sim.equation, sim.initial_state()

    def pm(position, live):  # mesh.density and mesh.interpolate traced on CPU already (the state): their jits
        rho = mesh.density(eq, position, live, jnp.asarray(1.0))  # must not hand the CPU's trace to a GPU's route
        moved = mesh.migrate(eq, state._replace(live=live), position)["position"]
        return mesh.interpolate(eq, jnp.stack([rho] * 3), moved, live)

    with as_on("gpu"):
        text = jax.export.export(jax.jit(pm), platforms=["cuda"])(state.position, state.live).mlir_module()
    assert "simulator_" not in text and "stablehlo.scatter" in text and "stablehlo.gather" in text


def test_the_window_benchmark_times_each_kernel_against_xla_s(native, tmp_path):
    """scripts/bench_windows.py at a toy size: a row per window and precision, the native gather and scatter and
    XLA's timed in the same rounds, their ratios and the results files written."""
    import json
    from pathlib import Path

    script = Path(__file__).parents[1] / "scripts" / "bench_windows.py"
    done = subprocess.run([sys.executable, str(script), "--sizes", "8", "--windows", "cic", "tsc", "--precision",
                           "float64", "--repeats", "1", "--out", str(tmp_path)],
                          check=False, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    rows = json.loads((tmp_path / "windows.json").read_text())["rows"]
    assert [(r["window"], r["precision"], r["points"]) for r in rows] == [("cic", "float64", 512),
                                                                          ("tsc", "float64", 512)]
    for r in rows:
        assert min(r["gather_ms"], r["scatter_ms"], r["xla_gather_ms"], r["xla_scatter_ms"]) > 0, r
        assert r["gather_vs_xla"] == r["gather_ms"] / r["xla_gather_ms"] and r["threads"] >= 1
    assert (tmp_path / "windows.csv").read_text().startswith("n,points,window")
    assert "# wrote" in done.stdout
