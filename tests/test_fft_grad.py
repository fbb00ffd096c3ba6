"""Derivatives through the distributed FFT: every backend in forward and reverse mode (float64).

The transforms are linear: their JVP is the transform of the tangent, their transpose a transform in
the other direction (derivation in simulator.fft.linear). Checked here: adjoint (dot-product) identities
on the real representation of complex arrays, against JAX's own rules for jnp.fft on one device, and the
all-to-alls the backward pass compiles to. Gradients of whole runs of every equation, against finite
differences and across backends and device counts: tests/test_gradients.py.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from simulator.fft import BACKENDS
from simulator.fft.check import collective_counts, distribute, host_field
from simulator.runtime import build_mesh

F64 = jnp.float64
SHAPE = (8, 4, 16)  # non-cubic, so that a mixed-up axis shows
KINDS = ("rfft", "irfft", "fft", "ifft")


def layouts(n_multi=4):
    """(backend, mesh request, devices) for every registered backend: one device, and its default mesh
    on ``n_multi`` devices where it distributes (slab [4], pencil [2, 2], jaxdecomp [1, 4])."""
    out = []
    for name, cls in BACKENDS.items():
        out.append((name, None, 1))
        if np.prod(cls.mesh_shape(n_multi, None)) > 1:
            out.append((name, None, n_multi))
    return out


def make(name, mesh, n, devices, shape=SHAPE):
    cls = BACKENDS[name]
    return cls(shape, build_mesh(cls, mesh, devices[:n]))


def rdot(a, b) -> float:
    """The real inner product of the real representations: sum Re(conj(a) b)."""
    return float(jnp.sum(jnp.real(jnp.conj(a) * b)))


# (input space, output space) of each transform; spectra of rfft ("r2c") or of fft ("c2c")
SPACES = {"rfft": ("real", "r2c"), "irfft": ("r2c", "real"), "fft": ("real", "c2c"), "ifft": ("c2c", "real")}


def random_field(fft, space, complex_, batch=2, seed=0):
    """A random ``(batch, ...)`` array of ``space``, laid out and sharded for it.

    Spectra are arbitrary complex arrays (no Hermitian symmetry on the kz = 0 plane): the general
    element of the space the transposes must be exact on."""
    rng = np.random.default_rng(seed)
    shape = (batch, *(fft.shape if space == "real" else fft.spectral_shape(real=space == "r2c")))
    x = rng.standard_normal(shape) + (1j * rng.standard_normal(shape) if complex_ else 0)
    sharding = fft.real_sharding(1) if space == "real" else fft.spectral_sharding(1)
    return distribute(x, sharding, jnp.complex128 if complex_ else F64)


def input_field(fft, kind, seed=0):
    return random_field(fft, SPACES[kind][0], kind != "rfft", seed=seed)


AXES = (-3, -2, -1)


def reference(fft, kind):
    """The same linear map built from jnp.fft on one device (JAX's own differentiation rules)."""
    half = fft.has_real_transform
    to_k = (0,) + tuple(1 + a for a in fft.perm)
    from_k = (0,) + tuple(1 + fft.perm.index(a) for a in range(3))
    def rfft3(x):
        return jnp.fft.rfftn(x, axes=AXES)[..., : x.shape[-1] // 2]

    def irfft3(k):
        full = jnp.pad(k, [(0, 0)] * (k.ndim - 1) + [(0, 1)])  # the dropped Nyquist plane, zero
        return jnp.fft.irfftn(full, s=k.shape[-3:-1] + (2 * k.shape[-1],), axes=AXES)

    def fft3(x):
        return jnp.fft.fftn(x, axes=AXES)

    def ifft3(k):
        return jnp.fft.ifftn(k, axes=AXES)

    return {
        "rfft": lambda x: jnp.transpose(rfft3(x) if half else fft3(x.astype(jnp.complex128)), to_k),
        "irfft": lambda k: irfft3(jnp.transpose(k, from_k)) if half else ifft3(jnp.transpose(k, from_k)).real,
        "fft": lambda x: jnp.transpose(fft3(x), to_k),
        "ifft": lambda k: ifft3(jnp.transpose(k, from_k)),
    }[kind]


@pytest.mark.parametrize("name, mesh, n", layouts(), ids=lambda v: str(v).replace(" ", ""))
def test_transposes_are_exact_adjoints(devices, name, mesh, n):
    """<T x, y> = <x, T* y> with T* from jax.vjp (JAX's cotangents are conjugated: T* y =
    conj(vjp(conj y))), for all four transforms; the vjp equals JAX's own rule for jnp.fft, the jvp is
    the transform itself, and vmap over any axis equals the batch-axis transform."""
    fft = make(name, mesh, n, devices)
    for kind in KINDS:
        transform = getattr(fft, kind)
        x, t = input_field(fft, kind), input_field(fft, kind, seed=2)
        y = random_field(fft, SPACES[kind][1], kind != "irfft", seed=1)  # a cotangent of the output

        @jax.jit
        def derivatives(x, t, y):
            tx, vjp = jax.vjp(transform, x)
            (ct,) = vjp(jnp.conj(y))
            primal, tangent = jax.jvp(transform, (x,), (t,))
            mapped = jax.vmap(transform, in_axes=1, out_axes=-1)(jnp.stack([x, t], axis=1))
            tt = transform(t)
            return tx, ct, [primal - tx, tangent - tt, mapped[..., 0] - tx, mapped[..., 1] - tt]

        tx, ct, errors = derivatives(x, t, y)
        assert ct.dtype == x.dtype and tx.shape == y.shape, kind
        lhs, rhs = rdot(tx, y), rdot(x, jnp.conj(ct))
        assert abs(lhs - rhs) < 1e-12 * np.sqrt(rdot(tx, tx) * rdot(y, y)), (kind, lhs, rhs)
        for err in errors:
            assert float(jnp.max(jnp.abs(err))) < 1e-14 * float(jnp.max(jnp.abs(tx))), kind

        @jax.jit
        def jax_rules(x, y):
            out, vjp = jax.vjp(reference(fft, kind), x)
            return out, vjp(jnp.conj(y))[0]

        ref_out, ref_ct = jax_rules(jnp.asarray(np.asarray(x)), jnp.asarray(np.asarray(y)))
        assert float(jnp.max(jnp.abs(tx - ref_out))) < 1e-12 * float(jnp.max(jnp.abs(ref_out))), kind
        assert float(jnp.max(jnp.abs(ct - ref_ct))) < 1e-12 * float(jnp.max(jnp.abs(ref_ct))), kind


def _chain(fft, n, real):
    """A scalar through ``n`` transforms alternating forward and inverse, nonlinear in between."""
    forward, inverse = (fft.rfft, fft.irfft) if real else (fft.fft, fft.ifft)

    def f(x):
        for i in range(n):
            x = forward(jnp.sin(x)) if i % 2 == 0 else inverse(x * x)
        return jnp.sum(jnp.abs(x) ** 2)

    return f


def test_jacfwd_jacrev_and_hessian_batch_the_derivatives(devices):
    """jacfwd vmaps the tangent map, jacrev the transposed one, the Hessian both: through three slab
    transforms on 4 devices they agree with each other, with grad and with central differences."""
    fft = make("slab", None, 4, devices)
    x = input_field(fft, "rfft", seed=3)
    chain = _chain(fft, 3, real=True)

    def f(s):
        return chain(s * x)

    s, h = jnp.asarray(0.3, F64), 1e-6  # differences converge as h^2: 1e-8 relative here
    grad, jacfwd, jacrev, hess, f_plus, f_minus = jax.jit(lambda s: (
        jax.grad(f)(s), jax.jacfwd(f)(s), jax.jacrev(f)(s), jax.hessian(f)(s), f(s + h), f(s - h)))(s)
    assert float(grad) == pytest.approx((float(f_plus) - float(f_minus)) / (2 * h), rel=1e-6)
    assert float(jacfwd) == pytest.approx(float(grad), rel=1e-12)
    assert float(jacrev) == pytest.approx(float(grad), rel=1e-12)
    g_plus, g_minus = (jax.jit(jax.grad(f))(s + d) for d in (h, -h))
    assert float(hess) == pytest.approx((float(g_plus) - float(g_minus)) / (2 * h), rel=1e-6)


@pytest.mark.parametrize("real", [True, False], ids=["r2c", "c2c"])
def test_slab_backward_pass_adds_one_all_to_all_per_transform(devices, real):
    """n transforms: n all-to-alls forward, 2n for the gradient (each transpose is one more slab
    transform), 2n for a JVP (the primal and the tangent); never a gather."""
    fft = make("slab", None, 8, devices, shape=(16, 16, 32))
    x = distribute(host_field((3, 16, 16, 32), real), fft.real_sharding(1), F64 if real else jnp.complex128)
    for n in (1, 2, 3):
        f = _chain(fft, n, real)
        forward = collective_counts(jax.jit(f).lower(x).compile().as_text())
        backward = collective_counts(jax.jit(jax.grad(f)).lower(x).compile().as_text())
        tangent = collective_counts(jax.jit(lambda x: jax.jvp(f, (x,), (x,))).lower(x).compile().as_text())
        assert forward["all-to-all"] == n and forward["all-gather"] == 0, (n, forward)
        assert backward["all-to-all"] == 2 * n and backward["all-gather"] == 0, (n, backward)
        assert backward["collective-permute"] == 0, (n, backward)
        assert tangent["all-to-all"] == 2 * n and tangent["all-gather"] == 0, (n, tangent)


def test_pencil_backward_pass_adds_two_all_to_alls_per_transform(devices):
    fft = make("pencil", (2, 4), 8, devices, shape=(16, 16, 32))
    x = distribute(host_field((3, 16, 16, 32), True), fft.real_sharding(1), F64)
    f = _chain(fft, 2, True)
    backward = collective_counts(jax.jit(jax.grad(f)).lower(x).compile().as_text())
    assert backward["all-to-all"] == 2 * 2 * 2 and backward["all-gather"] == 0, backward


def test_wrong_dtype_or_shape_is_refused_before_tracing(devices):
    fft = make("slab", None, 4, devices)
    with pytest.raises(TypeError, match="rfft takes a real array"):
        fft.rfft(jnp.zeros((2, *SHAPE), jnp.complex128))
    with pytest.raises(ValueError, match=r"slab irfft takes \(\.\.\., 8, 4, 8\), got shape \(2, 8, 4, 16\)"):
        fft.irfft(jnp.zeros((2, *SHAPE), jnp.complex128))
