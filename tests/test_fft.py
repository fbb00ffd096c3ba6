"""The distributed FFT: every backend and device count against numpy.fft, its k-space layout,
the communication it compiles to, and bad layouts rejected before anything is compiled.

Backends whose local transforms are this package's run every check on both local FFT paths
(``local_fft``: XLA's FFT and the FFTW custom call, see tests/conftest.py); jaxdecomp's transforms are
inside jaxdecomp, so it runs on XLA's only."""

import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.errors import ConfigError, RuntimeSetupError
from simulator.fft import BACKENDS
from simulator.fft.check import (
    check_transform,
    collective_counts,
    distribute,
    host_field,
    largest_buffer,
    max_relative_error,
)
from simulator.runtime import build_mesh, configure_devices

SHAPES = [(12, 8, 16), (16, 16, 16)]  # non-cubic first
PATHS = ["xla", "fftw"]


def with_paths(cases):
    """Each (backend, ...) case on both local FFT paths, except jaxdecomp (XLA's only)."""
    return [(*case, path) for case in cases for path in (["xla"] if case[0] == "jaxdecomp" else PATHS)]


def layouts():
    """(backend, mesh request, device count, local FFT): every backend on 1, 2, 4 and 8 devices."""
    out = [("single", None, 1)]
    for n in (1, 2, 4, 8):
        out += [("slab", None, n), ("pencil", None, n), ("jaxdecomp", None, n)]
    out += [("jaxdecomp", (2, 2), 4), ("jaxdecomp", (2, 4), 8)]  # jaxdecomp pencils
    return with_paths(out)


def make(name, shape, mesh, n, devices, local_fft="xla"):
    cls = BACKENDS[name]
    return cls(shape, build_mesh(cls, mesh, devices[:n]), local_fft=local_fft)


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
@pytest.mark.parametrize("name, mesh, n, local_fft", layouts(), ids=lambda v: str(v).replace(" ", ""),
                         indirect=["local_fft"])
@pytest.mark.parametrize("real", [True, False], ids=["r2c", "c2c"])
def test_float64_matches_numpy(devices, name, mesh, n, local_fft, shape, real):
    r = check_transform(make(name, shape, mesh, n, devices, local_fft), real, jnp.float64, batch=3)
    assert r.forward_error < 1e-12, r
    assert r.roundtrip_error < 1e-12, r


@pytest.mark.parametrize("name, mesh, n, local_fft",
                         with_paths([("single", None, 1), ("slab", None, 8), ("pencil", None, 8),
                                     ("jaxdecomp", (2, 4), 8)]), indirect=["local_fft"])
@pytest.mark.parametrize("real", [True, False], ids=["r2c", "c2c"])
def test_float32_matches_numpy(devices, name, mesh, n, local_fft, real):
    # float32 round-off of an FFT grows like eps * log2(N) (eps = 6e-8): 1e-5 relative to the
    # largest coefficient leaves a margin of ~30 at these sizes while still failing on any real bug
    # (a wrong mode or a missing plane is an O(1) error).
    r = check_transform(make(name, (12, 8, 16), mesh, n, devices, local_fft), real, jnp.float32, batch=3)
    assert r.forward_error < 1e-5 and r.roundtrip_error < 1e-5, r
    assert r.forward_error > 1e-9, "float32 run was not actually in float32"


@pytest.mark.parametrize("name, mesh, n, local_fft",
                         with_paths([("single", None, 1), ("slab", None, 8), ("slab", None, 2), ("pencil", None, 8),
                                     ("jaxdecomp", None, 8), ("jaxdecomp", (2, 4), 8)]), indirect=["local_fft"])
def test_spectral_derivative_uses_the_backend_layout(devices, name, mesh, n, local_fft):
    """d/dx_j of a trigonometric field via i k_j in each backend's own k-space layout, exact to 1e-12."""
    shape, box = (16, 8, 32), (2.0, 3.0, 5.0)
    fft = make(name, shape, mesh, n, devices, local_fft)
    x, y, z = fft.coordinates(box, jnp.float64)
    a, b, c = 2 * np.pi / box[0], 2 * np.pi / box[1], 2 * np.pi / box[2]

    @jax.jit
    def derivatives(x, y, z):
        f = jnp.sin(2 * a * x) * jnp.cos(3 * b * y) * jnp.sin(5 * c * z) + jnp.cos(a * x + 2 * c * z)
        kx, ky, kz = fft.wavenumbers(box, real=True, dtype=jnp.float64)
        fk = fft.rfft(f)
        grads = [fft.irfft(1j * k * fk) for k in (kx, ky, kz)]
        exact = [
            2 * a * jnp.cos(2 * a * x) * jnp.cos(3 * b * y) * jnp.sin(5 * c * z) - a * jnp.sin(a * x + 2 * c * z),
            -3 * b * jnp.sin(2 * a * x) * jnp.sin(3 * b * y) * jnp.sin(5 * c * z) + 0 * y,
            5 * c * jnp.sin(2 * a * x) * jnp.cos(3 * b * y) * jnp.cos(5 * c * z) - 2 * c * jnp.sin(a * x + 2 * c * z),
        ]
        # complex field through the c2c transform: d/dz exp(i(kx x + 3 kz z)) = 3i c exp(...)
        g = jnp.exp(1j * (a * x + 3 * c * z)) + 0 * y
        kxc, kyc, kzc = fft.wavenumbers(box, real=False, dtype=jnp.float64)
        dgz = fft.ifft(1j * kzc * fft.fft(g))
        return grads, exact, dgz - 3j * c * g

    grads, exact, cerr = derivatives(x, y, z)
    for g, e in zip(grads, exact, strict=True):
        scale = float(jnp.max(jnp.abs(e)))
        assert float(jnp.max(jnp.abs(g - e))) / scale < 1e-12
        assert g.sharding.is_equivalent_to(fft.real_sharding(0), 3)
    assert float(jnp.max(jnp.abs(cerr))) / (3 * c) < 1e-12


@pytest.mark.parametrize("name, mesh, n, local_fft",
                         with_paths([("single", None, 1), ("slab", None, 4), ("pencil", None, 8),
                                     ("jaxdecomp", None, 8)]), indirect=["local_fft"])
@pytest.mark.parametrize("real", [True, False], ids=["r2c", "c2c"])
def test_parseval_weights(devices, name, mesh, n, local_fft, real):
    fft = make(name, (8, 8, 16), mesh, n, devices, local_fft)
    x = host_field((8, 8, 16), real)
    dtype = jnp.float64 if real else jnp.complex128
    xs = distribute(x, fft.real_sharding(), dtype)
    k = (fft.rfft if real else fft.fft)(xs)
    w = fft.parseval_weight(real, jnp.float64)
    assert float(jnp.sum(w * jnp.abs(k) ** 2)) / fft.size == pytest.approx(np.sum(np.abs(x) ** 2), rel=1e-12)


def runs_on(hlo_text):
    """Which local FFT a compiled program calls: the FFTW custom call, XLA's fft op, or neither."""
    fftw, xla = 'custom_call_target="simulator_fftw' in hlo_text, re.search(r"\bfft\(", hlo_text) is not None
    return {(True, False): "fftw", (False, True): "xla"}.get((fftw, xla), f"fftw={fftw}, xla={xla}")


def _compiled(fft, real, batch):
    x = host_field((batch, *fft.shape), real)
    xs = distribute(x, fft.real_sharding(1), jnp.float64 if real else jnp.complex128)
    fwd = jax.jit(fft.rfft if real else fft.fft).lower(xs).compile()
    k = fwd(xs)
    inv = jax.jit(fft.irfft if real else fft.ifft).lower(k).compile()
    return fwd.as_text(), inv.as_text(), x.size // fft.mesh.devices.size


@pytest.mark.parametrize("local_fft", PATHS, indirect=True)
@pytest.mark.parametrize("n", [2, 4, 8])
@pytest.mark.parametrize("real", [True, False], ids=["r2c", "c2c"])
def test_slab_costs_one_all_to_all_each_way(devices, n, real, local_fft):
    fft = make("slab", (16, 16, 32), None, n, devices, local_fft)
    fwd, inv, local = _compiled(fft, real, batch=3)
    for text in (fwd, inv):
        counts = collective_counts(text)
        assert counts["all-to-all"] == 1 and counts["all-gather"] == 0, counts
        assert counts["collective-permute"] == 0 and counts["all-reduce"] == 0, counts
        # nothing bigger than one device's share of the batch ever exists on a device
        assert largest_buffer(text) <= local
        assert runs_on(text) == local_fft


@pytest.mark.parametrize("local_fft", PATHS, indirect=True)
@pytest.mark.parametrize("mesh", [(2, 2), (2, 4), (4, 2)])
@pytest.mark.parametrize("real", [True, False], ids=["r2c", "c2c"])
def test_pencil_costs_two_all_to_alls_each_way(devices, mesh, real, local_fft):
    fft = make("pencil", (16, 16, 32), mesh, mesh[0] * mesh[1], devices, local_fft)
    fwd, inv, local = _compiled(fft, real, batch=3)
    for text in (fwd, inv):
        counts = collective_counts(text)
        assert counts["all-to-all"] == 2 and counts["all-gather"] == 0, counts
        assert largest_buffer(text) <= local
        assert runs_on(text) == local_fft


def test_jaxdecomp_never_gathers(devices):
    fft = make("jaxdecomp", (16, 16, 32), (2, 4), 8, devices)
    fwd, inv, local = _compiled(fft, True, batch=3)
    for text in (fwd, inv):
        assert collective_counts(text)["all-gather"] == 0
        assert largest_buffer(text) <= local


def test_plain_fftn_on_a_sharded_array_does_gather(devices):
    """The trap the backends exist to avoid: the HLO check above can see a gather when there is one."""
    fft = make("slab", (16, 16, 32), None, 8, devices)
    x = distribute(host_field((16, 16, 32), True), fft.real_sharding(), jnp.float64)
    text = jax.jit(jnp.fft.rfftn).lower(x).compile().as_text()
    counts = collective_counts(text)
    assert counts["all-gather"] + counts["all-to-all"] > 0 or largest_buffer(text) > x.size // 8


@pytest.mark.parametrize(
    "name, shape, mesh, n, pattern",
    [
        ("slab", (16, 12, 16), None, 8, r"slab on mesh \[8\] needs Ny = 12 divisible by 8"),
        ("slab", (16, 16, 8), None, 8, r"needs Nz/2 = 4 divisible by 8"),
        ("slab", (16, 16, 15), None, 1, r"has an odd Nz"),
        ("single", (8, 8, 9), None, 1, r"has an odd Nz"),
        ("pencil", (6, 8, 16), (4, 2), 8, r"pencil on mesh \[4, 2\] needs Nx = 6 divisible by 4"),
        ("jaxdecomp", (8, 6, 16), None, 4, r"jaxdecomp on mesh \[1, 4\] needs Ny = 6 divisible by 4"),
    ],
)
def test_bad_layouts_fail_before_compiling(devices, name, shape, mesh, n, pattern):
    cls = BACKENDS[name]
    with pytest.raises(ConfigError, match=r"^grid\.shape = .*" + pattern):
        cls(shape, build_mesh(cls, mesh, devices[:n]))


def test_mesh_larger_than_the_machine_is_refused(devices):
    with pytest.raises(RuntimeSetupError, match=r"fft\.mesh = \[16\] needs 16 devices but only 8"):
        build_mesh(BACKENDS["slab"], (16,), devices)


def test_device_count_set_too_late_is_an_error(devices):
    with pytest.raises(RuntimeSetupError, match=r"cpu_devices = 4 was asked for after JAX had already started"):
        configure_devices(4, "float64")
    configure_devices(8, "float64")  # the count JAX already has is fine


def test_max_relative_error_sees_a_wrong_shard(devices):
    fft = make("slab", (8, 8, 16), None, 8, devices)
    x = host_field((8, 8, 16), True)
    xs = distribute(x, fft.real_sharding(), jnp.float64)
    wrong = x.copy()
    wrong[:, 7, :] += 1.0  # only the last device's slab differs
    assert max_relative_error(xs, x) == 0.0
    assert max_relative_error(xs, wrong) > 0.1


@pytest.mark.parametrize("name, n", [("single", 1), ("slab", 1), ("slab", 8), ("pencil", 4)])
def test_xla_fft_in_pieces_past_its_element_limit(devices, monkeypatch, uncached_programs, name, n):
    """XLA's GPU FFT garbled C2R results past 2^31 points (simulator/fft/large.py); with the limit
    lowered to a few hundred points, every backend's transforms run in pieces and stay exact (compiled
    afresh: the lowered limit is inside the slab's partition callbacks, which no cached program saw)."""
    from simulator.fft import large

    calls = []
    whole = large._whole
    monkeypatch.setattr(large, "LIMIT", 300)
    monkeypatch.setattr(large, "_whole", lambda kind, x, axes, m: calls.append(x.size) or whole(kind, x, axes, m))
    for real in (True, False):
        r = check_transform(make(name, (16, 16, 16), None, n, devices, "xla"), real, jnp.float64, batch=3)
        assert r.forward_error < 1e-12 and r.roundtrip_error < 1e-12, r
    assert calls and max(calls) <= 300


@pytest.mark.parametrize("kind", ["rfftn", "irfftn", "fftn", "ifftn"])
@pytest.mark.parametrize("axes", [(-3, -2, -1), (-2, -1), (-1,)])
def test_fft_pieces_equal_the_whole_transform_and_its_gradient(monkeypatch, kind, axes):
    from simulator.fft import large

    x = jnp.asarray(np.random.default_rng(1).standard_normal((3, 6, 10, 8)))
    if kind == "irfftn":
        x = large.transform("rfftn", x, axes)
    if kind == "ifftn":
        x = x + 1j * x[::-1]

    whole = large.transform(kind, x, axes, 8)
    weight = jnp.asarray(np.random.default_rng(2).standard_normal(whole.shape))

    def loss(y):
        return jnp.sum(jnp.abs(large.transform(kind, y, axes, 8)) ** 2 * weight)

    grad = jax.grad(loss)(x)
    assert float(jnp.max(jnp.abs(grad))) > 1e-3
    monkeypatch.setattr(large, "LIMIT", 50)
    np.testing.assert_allclose(large.transform(kind, x, axes, 8), whole, rtol=0, atol=1e-12)
    np.testing.assert_allclose(jax.grad(loss)(x), grad, rtol=0, atol=1e-10)
