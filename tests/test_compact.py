"""The compact spectral layout (``fft.layout``, :mod:`simulator.fft.compact`) equals the full half spectrum.

Checked in float64, to 1e-12 relative: the transforms of every backend of the registry that has a
real-to-complex transform, on 1 and several devices, against the full layout's composed with the
truncation (forward, inverse, round trip, ``jax.vjp`` and ``jax.jvp``); every flow equation (Navier-Stokes
with a passive scalar, hyperviscosity and forcing; Boussinesq; MHD) stepped in compact against the full
layout, and on one device with a vector's inverse transforms stacked and one by one; ``jax.grad`` through a
short run; an ensemble's outputs that read spectra (spectra.h5, statistics.h5, particles by the direct sum
and the NUFFT, time series, snapshots). The spectra read at
points (the particles' exact velocity) by both methods, on every case; the NUFFT's assumption that each
device holds a contiguous range of modes, on padded compact axes. A backend without a real transform
(jaxdecomp) refuses ``fft.layout: compact`` in one line and runs ``auto`` in the full spectrum. Two
processes: tests/test_gradients.py (the worker's compact gradients against one process's full layout).

Compiling is nearly all the cost of these tests: each builds one program per layout and case, from random
fields rather than a random initial condition (whose counter-based generator compiles slowly).

Every compact run here asserts that it is compact (``fft.compact``, the log's layout), so no test passes
by running the full layout twice. Grid 12 x 16 x 16: non-cubic, so a mixed-up axis shows, and padded
where a mesh axis needs it (slab on 4 devices: Kz = 8 for the 2/3 rule's 6 planes; pencil 2x2: Ky = 12 for
11 modes), so the modes outside the 2/3 rule are exercised too.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import simulator
from simulator.errors import ConfigError
from simulator.fft import BACKENDS, build_mesh, compact
from simulator.fft.points import check_nufft, nufft_available
from simulator.runtime import make_fft
from simulator.time.integrators import run_steps

import grad_objective as obj
from support import backend_cases, case_id, relative_error, simulation

GRID = (12, 16, 16)
#: the registry's backends that hold a compact spectrum (a real-to-complex transform), on 1 and several devices
CASES = [c for c in backend_cases() if BACKENDS[c[0]].has_real_transform]
FULL_ONLY = sorted(name for name, cls in BACKENDS.items() if not cls.has_real_transform)
SINGLE = ("single", 1, None)
#: diagnostics that are round-off in exact arithmetic (max |div u|, a helicity of a symmetric field): absolute
RESIDUAL = 1e-13


def backends(case, shape=GRID):
    """The case's backend in the compact and in the full layout, on the same mesh."""
    name, n, mesh = case
    cls = BACKENDS[name]
    grid = build_mesh(cls, list(mesh) if mesh else None, jax.devices()[:n])
    fc, ff = cls(shape, grid, compact=True), cls(shape, grid)
    assert fc.compact is not None and ff.compact is None
    assert fc.spectral_shape(real=True) != ff.spectral_shape(real=True)
    assert fc.perm == (0, 1, 2)  # from_full/to_full below index the spectral axes in x, y, z order
    return fc, ff


def dealiased(x: np.ndarray) -> np.ndarray:
    """``x`` with only the 2/3 rule's modes (|m_i| < N_i/3) and no Nyquist plane: a field the compact layout
    holds whole (a random field's kz = 0 plane is not Hermitian-closed on a padded axis)."""
    shape = x.shape[-3:]
    k = np.fft.rfftn(x, axes=(-3, -2, -1))
    m = np.meshgrid(*(np.abs(np.fft.fftfreq(n, 1.0 / n)) for n in shape[:2]), np.arange(shape[2] // 2 + 1),
                    indexing="ij")
    keep = np.all([mi < n / 3 for mi, n in zip(m, shape, strict=True)], axis=0)
    return np.fft.irfftn(k * keep, s=shape, axes=(-3, -2, -1))


def close(a, b, what, rel=1e-12):
    """``a`` equals ``b`` to ``rel`` of b's largest value (exactly where b is zero: a scalar that starts at 0)."""
    if any(np.max(np.abs(np.asarray(y))) == 0 for y in jax.tree.leaves(b)):
        assert all(np.array_equal(np.asarray(x), np.asarray(y)) for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b),
                                                                                  strict=True)), what
        return
    error = relative_error(a, b)
    assert error < rel, (what, error)


# ---- the transforms ---------------------------------------------------------------------------------------


#: programs that run once on a small grid spend their time compiling: XLA without LLVM's optimisations
ONCE = {"xla_backend_optimization_level": 0}
BOX = (2 * np.pi,) * 3


@pytest.mark.parametrize("case", CASES, ids=case_id)
def test_transforms_and_their_derivatives_equal_the_full_layout_truncated(case):
    """rfft = the full rfft truncated, irfft = the full irfft of the spectrum padded with zeros, for any input
    (no Hermitian symmetry assumed); a dealiased field round-trips and matches NumPy; the VJPs and JVPs of both
    transforms equal those of the full transforms composed with the truncation (JAX's own transposes of it);
    the field read at points from its compact spectrum (the particles' exact velocity), by the direct sum and
    by the NUFFT over each device's block, equals the full layout's direct sum."""
    fc, ff = backends(case)
    rng = np.random.default_rng(0)
    real = (2, *GRID)
    spectral = (2, *fc.spectral_shape(real=True))
    x, t, ct_x = (rng.standard_normal(real) for _ in range(3))
    k, ct_k = (rng.standard_normal(spectral) + 1j * rng.standard_normal(spectral) for _ in range(2))
    xd = dealiased(x)
    points = jnp.asarray(rng.uniform(-1.0, 7.0, (16, 3)))  # anywhere: the sums are periodic
    methods = ["direct"] + (["nufft"] if nufft_available() is None and check_nufft(fc) is None else [])
    put_x = lambda a: jax.device_put(a, fc.real_sharding(1))  # noqa: E731
    put_k = lambda a: jax.device_put(a, fc.spectral_sharding(1))  # noqa: E731

    def truncated(x):
        return compact.from_full(ff.rfft(x), fc.compact)

    def padded(k):
        return ff.irfft(compact.to_full(k, GRID))

    def read(fft, spectrum, method):
        wavenumbers = fft.wavenumbers(BOX, real=True, dtype=jnp.float64)
        return fft.evaluate_at(spectrum, points, wavenumbers, fft.parseval_weight(True, jnp.float64), method, BOX)

    @functools.partial(jax.jit, compiler_options=ONCE)
    def both(x, xd, t, k, ct_k, ct_x):
        forward = jax.vjp(fc.rfft, x)[1](ct_k)[0], jax.vjp(truncated, x)[1](ct_k)[0]
        inverse = jax.vjp(fc.irfft, k)[1](ct_x)[0], jax.vjp(padded, k)[1](ct_x)[0]
        spectrum = fc.rfft(xd)
        at_points = read(ff, ff.rfft(xd), "direct")
        return {"rfft": (fc.rfft(x), truncated(x)), "irfft": (fc.irfft(k), padded(k)),
                "vjp rfft": forward, "vjp irfft": inverse,
                "jvp rfft": (jax.jvp(fc.rfft, (x,), (t,))[1], jax.jvp(truncated, (x,), (t,))[1]),
                "jvp irfft": (jax.jvp(fc.irfft, (k,), (ct_k,))[1], jax.jvp(padded, (k,), (ct_k,))[1]),
                **{f"{m} at points": (read(fc, spectrum, m), at_points) for m in methods},
                "dealiased": (spectrum, fc.irfft(spectrum))}

    out = both(put_x(x), put_x(xd), put_x(t), put_k(k), put_k(ct_k), put_x(ct_x))
    spectrum, back = out.pop("dealiased")
    for name, (got, expected) in out.items():
        close(got, expected, name)
    close(spectrum, fc.reference_spectrum(xd, real=True), "against numpy")
    close(back, xd, "round trip")
    assert spectrum.sharding.is_equivalent_to(fc.spectral_sharding(1), 5)
    assert back.sharding.is_equivalent_to(fc.real_sharding(1), 5)
    assert "nufft" in methods or nufft_available() is not None


@pytest.mark.parametrize("staged", [True, False], ids=["stages-cpu", "fused-then-cut-gpu"])
def test_both_one_device_routes_equal_the_full_layout_truncated(staged, monkeypatch):
    """On one device a compact spectrum comes from the stages of the kept lines on a CPU and is cut from the
    fused 3D transform on a GPU (``simulator.fft.single.stages_pay``): each route, forced here, equals the full
    layout's transforms composed with the cut and the padding, and so do their VJPs (single and slab)."""
    from simulator.fft import single

    monkeypatch.setattr(single, "stages_pay", lambda mesh: staged)
    rng = np.random.default_rng(1)
    for case in (SINGLE, ("slab", 1, None)):
        fc, ff = backends(case)
        spectral = (2, *fc.spectral_shape(real=True))
        x, ct_x = (rng.standard_normal((2, *GRID)) for _ in range(2))
        k, ct_k = (rng.standard_normal(spectral) + 1j * rng.standard_normal(spectral) for _ in range(2))

        @functools.partial(jax.jit, compiler_options=ONCE)
        def both(x, k, ct_k, ct_x, fc=fc, ff=ff):
            def truncated(x):
                return compact.from_full(ff.rfft(x), fc.compact)

            def padded(k):
                return ff.irfft(compact.to_full(k, GRID))

            return {"rfft": (fc.rfft(x), truncated(x)), "irfft": (fc.irfft(k), padded(k)),
                    "vjp rfft": (jax.vjp(fc.rfft, x)[1](ct_k)[0], jax.vjp(truncated, x)[1](ct_k)[0]),
                    "vjp irfft": (jax.vjp(fc.irfft, k)[1](ct_x)[0], jax.vjp(padded, k)[1](ct_x)[0])}

        for name, (got, expected) in both(x, k, ct_k, ct_x).items():
            close(got, expected, f"{case[0]} {name}")


#: meshes whose sharded compact axes are padded (48: 31 signed modes held as 32 or 36, 16 planes), one with an odd
#: mesh axis over a signed axis (its blocks straddle the wrap: the NUFFT path must refuse it)
MESHES = [("slab", 2, None), ("slab", 8, None), ("pencil", 4, (2, 2)), ("pencil", 8, (4, 2)), ("pencil", 6, (3, 2))]


@pytest.mark.parametrize("case", MESHES, ids=case_id)
def test_the_nufft_path_takes_exactly_the_compact_blocks_of_contiguous_modes(case):
    """What the NUFFT evaluation assumes of each device's block (simulator.fft.points): on every compact axis
    its mode numbers, in order (an unsharded signed axis fftshifted whole), are consecutive integers;
    check_nufft accepts the layout exactly when they are, which is every mesh with even signed-axis counts."""
    fc, _ = backends(case, (48, 48, 48))
    contiguous = True
    for axis, modes in enumerate(fc.wavenumbers((2 * np.pi,) * 3, real=True, dtype=jnp.float64)):
        for shard in modes.addressable_shards:
            block = np.asarray(shard.data).reshape(-1)
            if block.size == modes.size and axis != 2:
                block = np.fft.fftshift(block)
            contiguous &= bool(np.all(np.diff(block) == 1))
    assert (check_nufft(fc) is None) == contiguous
    assert contiguous == (case[2] is None or case[2][0] % 2 == 0)


def test_a_backend_without_a_real_transform_refuses_compact_and_runs_auto_full():
    assert FULL_ONLY, "the registry has no backend without a real transform: drop this test"
    for name in FULL_ONLY:
        with pytest.raises(ConfigError) as refused:
            simulator.load_config(None, {"fft.backend": name, "fft.layout": "compact"})
        message = str(refused.value)
        assert "fft.layout" in message and "\n" not in message, message
        fft = make_fft(simulator.load_config(None, {"fft.backend": name, "grid.shape": list(GRID)}), jax.devices()[:1])
        assert fft.compact is None and "full spectrum" in fft.describe(), fft.describe()
        assert "no real-to-complex transform" in fft.layout_reason, fft.layout_reason


# ---- the velocity's advection from the traceless stress --------------------------------------------------------


@pytest.mark.parametrize("case", [SINGLE, ("slab", 4, None), ("pencil", 4, (2, 2))], ids=case_id)
def test_the_traceless_stress_gives_the_rotational_forms_projected_advection(case):
    """In the compact layout the velocity's advection is -div(u u - u_z^2 I) (simulator.equations.flow.components,
    Basdevant 1983): after the 2/3 rule and the Leray projection it equals P[(u x w)^] to round-off, for a
    random dealiased solenoidal u. Before the projection the two differ by a gradient only (their difference
    is parallel to k: its cross product with k is round-off, the difference itself is not), so a wrong sign or
    a missing component of the stress shows. The form is only taken where the truncation is alias-free and
    the fields are transformed by component."""
    from simulator.equations.flow.components import Transforms
    from simulator.equations.operators import SpectralOperators, cross

    fc, _ = backends(case)
    ops = SpectralOperators(fc, BOX, jnp.float64)
    transforms = Transforms(ops)
    assert transforms.stress_form
    assert not Transforms(ops, stacked=True).stress_form
    for dealiasing in ("hou_li", "phase_shift_spherical"):
        assert not Transforms(SpectralOperators(fc, BOX, jnp.float64, dealiasing=dealiasing)).stress_form
    assert Transforms(SpectralOperators(fc, BOX, jnp.float64, dealiasing="phase_shift_cubic")).stress_form
    rng = np.random.default_rng(3)
    velocity = jax.device_put(dealiased(rng.standard_normal((3, *GRID))), fc.real_sharding(1))

    @functools.partial(jax.jit, compiler_options=ONCE)
    def both(velocity):
        u_hat = ops.project(fc.rfft(velocity))
        u = transforms.fields(u_hat)
        stress = ops.dealias * transforms.momentum(u, u_hat)
        rotational = ops.dealias * transforms.spectrum(cross(u, transforms.curl(u_hat)))
        difference = stress - rotational
        return ops.project(stress), ops.project(rotational), ops.stack(cross(ops.k, difference)), difference

    stress, rotational, curl_of_difference, difference = both(velocity)
    close(stress, rotational, "projected advection")
    scale = np.max(np.abs(np.asarray(rotational)))
    assert np.max(np.abs(np.asarray(difference))) > 0.1 * scale  # the isotropic part left out is there
    assert np.max(np.abs(np.asarray(curl_of_difference))) < 1e-12 * scale * 3  # ... and a gradient (|k| <= 3 here)


# ---- every flow equation: a few steps in compact against the full layout ------------------------------------


FLOWS = {
    "navier_stokes": {"physics__forcing": "band", "physics__hyperviscosity": 1e-4, "physics__hyperviscosity_order": 2,
                      "physics__scalars": [{"diffusivity": 0.02, "mean_gradient": [0, 1, 1]}]},
    "boussinesq": {"physics__forcing": "band", "physics__coriolis": 1.0, "physics__brunt_vaisala": 2.0,
                   "physics__hyperviscosity": 1e-4, "physics__hyperdiffusivity": 1e-4,
                   "physics__hyperviscosity_order": 2},
    "mhd": {"physics__forcing": "band", "physics__hyperviscosity": 1e-4, "physics__hyperresistivity": 1e-4,
            "physics__hyperviscosity_order": 2},
}
STEPS, DT = 3, 0.01


def flow(name, case, layout, overrides=None):
    """The flow's simulation and, from one compiled program, its real-space fields and spectra (keys
    ``spectra/NAME``: the shell sums, whose transfers evaluate the nonlinear terms once more) and its
    diagnostics after ``STEPS`` steps from random real-space fields (every mode: ``from_fields`` truncates
    them). The layout enters through the spectral operators, not the scheme: rk2, the cheapest to compile,
    steps it. ``overrides``: the config's (default ``FLOWS[name]``)."""
    sim = simulation(jax.devices(), case, physics__name=name, grid__shape=list(GRID), fft__layout=layout,
                     time__integrator="rk2", **(FLOWS[name] if overrides is None else overrides))
    make_step, dt = sim.scheme.load(), jnp.asarray(DT, sim.dtype)

    @functools.partial(jax.jit, compiler_options=ONCE)
    def run(eq, fields, p):
        state = run_steps(make_step(eq), eq.from_fields(fields, p), jnp.zeros((), sim.dtype), STEPS, dt, p)
        shells = {f"spectra/{key}": value for key, value in eq.spectra(state, p).items()}
        return {**eq.fields(state, p), **shells}, eq.diagnostics(state, dt, p)

    rng = np.random.default_rng(7)
    fields = {n: jax.device_put(rng.standard_normal(f.shape), f.sharding)
              for n, f in sim.equation.field_layouts().items()}
    out, diagnostics = run(sim.equation, fields, sim.params)
    return sim, {k: sim.to_numpy(v) for k, v in out.items()}, {k: float(v) for k, v in diagnostics.items()}


def same_run(fields, diagnostics, ref_fields, ref_diagnostics):
    """A flow's fields and spectra equal the reference's to 1e-12, its diagnostics to 1e-12 or RESIDUAL."""
    for key, value in fields.items():
        close(value, ref_fields[key], key)
    for key, value in diagnostics.items():
        expected = ref_diagnostics[key]
        assert abs(value - expected) <= max(1e-12 * abs(expected), RESIDUAL), (key, value, expected)


_REFERENCE: dict = {}


def full_reference(name):
    """The flow in the full layout on one device: what each compact case is compared with (the full layout
    across backends and device counts is what the rest of the suite checks)."""
    if name not in _REFERENCE:
        sim, fields, diagnostics = flow(name, SINGLE, "full")
        assert sim.fft.compact is None
        _REFERENCE[name] = fields, diagnostics
    return _REFERENCE[name]


def flow_cases():
    """Navier-Stokes (every term) on every case of the registry but those whose transforms are the single
    backend's own functions (single, and slab on one device): the ensemble test below runs them. Boussinesq
    and MHD each on one decomposition, slab and pencil: what the layout changes under them, the transforms
    and spectral operators, the transform tests and Navier-Stokes cover on every case (each program costs
    seconds to compile)."""
    out = [("navier_stokes", case) for case in CASES if case[0] != "single" and (case[0], case[1]) != ("slab", 1)]
    out += [("boussinesq", ("slab", 4, None)), ("mhd", ("pencil", 4, (2, 2)))]
    return [pytest.param(name, case, id=f"{name}-{case_id(case)}") for name, case in out]


@pytest.mark.parametrize(("name", "case"), flow_cases())
def test_every_flow_equation_steps_in_compact_as_in_the_full_layout(name, case):
    sim, fields, diagnostics = flow(name, case, "compact")
    assert sim.fft.compact is not None and ", compact " in sim.fft.describe(), sim.fft.describe()
    ref_fields, ref_diagnostics = full_reference(name)
    assert set(fields) == set(ref_fields) and set(diagnostics) == set(ref_diagnostics)
    same_run(fields, diagnostics, ref_fields, ref_diagnostics)


#: Navier-Stokes without scalars: component by component, its advection from the traceless stress
BY_COMPONENT = {k: v for k, v in FLOWS["navier_stokes"].items() if k != "physics__scalars"}


@pytest.mark.parametrize("local_fft", ["fftw"], indirect=True)  # the stacked route is FFTW's only
@pytest.mark.parametrize("stacked", [True, False], ids=["stacked", "one-by-one"])
@pytest.mark.parametrize("name", ["navier_stokes", "boussinesq", "mhd"])
def test_a_vectors_inverse_transforms_stacked_or_one_by_one_step_as_the_full_layout(name, stacked, local_fft,
                                                                                     monkeypatch):
    """On one device on FFTW's path a small grid's vector is inverse-transformed stacked, a large one's component
    by component (``FFTBackend.stacks_inverse``); the suite's grids are all small, so the limit is set here to
    take either route. Navier-Stokes without scalars (its advection from the traceless stress)."""
    from simulator.fft import base

    monkeypatch.setenv("SIMULATOR_FFT", local_fft)
    monkeypatch.setattr(base, "STACKED_INVERSE_CELLS", (1 << 19) if stacked else 0)
    overrides = BY_COMPONENT if name == "navier_stokes" else FLOWS[name]
    sim, fields, diagnostics = flow(name, SINGLE, "compact", overrides)
    assert sim.fft.compact is not None and sim.fft.stacks_inverse == stacked
    _, ref_fields, ref_diagnostics = flow(name, SINGLE, "full", overrides)
    same_run(fields, diagnostics, ref_fields, ref_diagnostics)


@pytest.mark.parametrize(("name", "overrides"), [("navier_stokes", BY_COMPONENT), ("boussinesq", None), ("mhd", None)],
                         ids=["navier_stokes", "boussinesq", "mhd"])
def test_one_gpus_route_transforms_in_turn_and_steps_as_the_full_layout(name, overrides):
    """On GPUs the flows' transforms go one field at a time (``FFTBackend.in_turn``: optimization barriers between
    them) in the fields made at once (``Equation.fields``: ``Simulation.fields``, the output tasks), and with
    ``fft.in_turn`` in the step too; a run's snapshot program transforms one component per call and holds none.
    Forced on a CPU device (``simulator.fft.mesh.as_on``): the programs hold the barriers where they should (a
    CPU's route holds none), and with ``fft.in_turn`` the fields, spectra and diagnostics after a few steps equal
    the full layout's; so does a batch of two states under ``jax.vmap``."""
    from simulator.fft.mesh import as_on
    from simulator.planning.plan import abstract_state

    overrides = FLOWS[name] if overrides is None else overrides
    barriers = {}
    for route, in_turn in (("cpu", True), ("gpu", False), ("gpu", True)):
        with as_on(route):
            sim = simulation(jax.devices(), SINGLE, physics__name=name, grid__shape=list(GRID), fft__layout="compact",
                             time__integrator="rk2", fft__in_turn=in_turn, **overrides)
            state, dt = abstract_state(sim), jax.ShapeDtypeStruct((), sim.dtype)
            at_once = jax.jit(lambda eq, s, p: eq.fields(s, p)).lower(sim.equation, state, sim.params)
            barriers[route, in_turn] = ["optimization_barrier" in low.as_text() for low in (
                sim.lower("chunk", state, dt, dt), at_once, sim.lower("fields", state, dt, dt))]
    assert barriers == {("cpu", True): [False, False, False], ("gpu", False): [False, True, False],
                        ("gpu", True): [True, True, False]}

    with as_on("gpu"):
        sim, fields, diagnostics = flow(name, SINGLE, "compact", {**overrides, "fft__in_turn": True})
        eq, p = sim.equation, sim.params
        rng = np.random.default_rng(3)
        state = jax.jit(eq.from_fields)({n: jnp.asarray(rng.standard_normal(f.shape))
                                         for n, f in eq.field_layouts().items()}, p)
        one = jax.jit(eq.fields)(state, p)
        two = jax.jit(jax.vmap(eq.fields, in_axes=(0, None)))(jnp.stack([state, 2 * state]), p)
    for key, value in one.items():  # the real-space fields are linear in the state
        close(two[key][0], value, f"vmap {key}")
        close(two[key][1], 2 * value, f"vmap 2 x {key}")
    ref_sim, ref_fields, ref_diagnostics = flow(name, SINGLE, "full", overrides)
    assert sim.fft.compact is not None and ref_sim.fft.compact is None
    same_run(fields, diagnostics, ref_fields, ref_diagnostics)


# ---- jax.grad through a short run ----------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("route", ["cpu", "gpu"])
def test_the_gradient_of_a_short_run_in_compact_equals_the_full_layouts(route):
    """Reverse mode through tests/grad_objective.py's run (its history and final fields: a number that does
    not depend on the layout) in the viscosity and along the initial state; rk2 steps it, as the flows above.
    On a GPU's route (forced here) with ``fft.in_turn`` the compact run's transforms go one at a time, through
    optimization barriers."""
    from simulator.fft.mesh import as_on

    found = {}
    for layout in ("compact", "full"):
        overrides = {k.replace(".", "__"): v for k, v in obj.overrides("navier_stokes").items()}
        with as_on(route):
            sim = simulation(jax.devices(), SINGLE, **overrides, fft__layout=layout, time__integrator="rk2",
                             fft__in_turn=True)
            assert (sim.fft.compact is not None) == (layout == "compact")
            found[layout] = obj.gradient(sim, ONCE)
    assert all(g != 0 for g in found["full"])
    for compact_value, full_value in zip(found["compact"], found["full"], strict=True):
        assert compact_value == pytest.approx(full_value, rel=1e-12)


# ---- an ensemble and the outputs that read spectra --------------------------------------------------------------


def _tables(run):
    return {"timeseries": run.timeseries, "spectra": run.spectra,
            "statistics": {k: v for k, v in run.statistics.items() if k != "attrs"}}


@pytest.mark.slow
def test_an_ensembles_outputs_in_compact_equal_the_full_layouts(tmp_path):
    """Two members (other viscosities) of a forced, hyperviscous Navier-Stokes run with particles read from the
    velocity spectrum by the direct sum and by the NUFFT, on one device, as one batched program in each layout:
    every member's time series, spectra.h5, statistics.h5, particle snapshots and field snapshots agree.
    (Statistics at t > 0: Taylor-Green's w = 0 at t = 0 makes its dw/dz moments ratios of round-off. No
    passive scalar: the flows above step one in compact, and here it would cost a quarter more compiling.)"""
    particles = [{"name": "direct", "count": 8, "interpolation": "exact"}]
    if nufft_available() is None:
        particles.append({"name": "nufft", "count": 8, "seed": 1, "interpolation": "nufft"})
    base = {"grid.shape": list(GRID), "precision": "float64", "fft.backend": "single", "time.integrator": "rk2",
            "physics.forcing": "band", "physics.hyperviscosity": 1e-4, "physics.hyperviscosity_order": 2,
            "initial.name": "taylor_green", "time.dt": 0.01, "time.t_end": 0.04, "output.chunk": 2,
            "output.spectra.every": 2, "output.snapshots.every": 4, "output.statistics.times": [0.02, 0.04],
            "output.statistics.orders": [2, 3], "output.statistics.separations": [1, 2],
            "output.statistics.pdf_separations": [1], "output.statistics.pdf_bins": 11, "particles": particles}
    runs = {}
    for layout in ("compact", "full"):
        cfgs = [simulator.load_config(None, {**base, "fft.layout": layout, "physics.viscosity": nu, "name": f"m{i}"})
                for i, nu in enumerate((0.01, 0.02))]
        outs = [tmp_path / layout / f"m{i}" for i in range(2)]
        assert simulator.run_ensemble(cfgs, outs) == [0, 0]
        runs[layout] = [simulator.load_run(out) for out in outs]
        log = (outs[0] / "run.log").read_text()
        assert (", compact " in log) == (layout == "compact"), log
    for compact_run, full_run in zip(runs["compact"], runs["full"], strict=True):
        assert len(full_run.snapshots) == 2 and set(full_run.particles) == {p["name"] for p in particles}
        for (what, got), expected in zip(_tables(compact_run).items(), _tables(full_run).values(), strict=True):
            assert got and set(got) == set(expected), what
            for key, value in expected.items():
                np.testing.assert_allclose(got[key], value, rtol=1e-12, atol=RESIDUAL, err_msg=f"{what} {key}")
        for name, series in full_run.particles.items():
            got = compact_run.particles[name]
            close(got.velocity, series.velocity, f"{name} velocity")
            close(got.unwrapped, series.unwrapped, f"{name} position")
        for got, expected in zip(compact_run.snapshots, full_run.snapshots, strict=True):
            with got.open() as a, expected.open() as b:
                assert a.fields == b.fields
                for field in b.fields:
                    close(a.read(field), b.read(field), f"snapshot {got.step} {field}")
