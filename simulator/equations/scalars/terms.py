"""Passive scalars: the terms, diagnostics, spectra and initial fields (JAX), for an equation composing them.

The host equation keeps the scalars' spectra ``theta_hat``, shape ``(n, *k_shape)`` in the FFT
backend's k-space layout, beside its velocity spectrum ``u_hat`` ``(3, *k_shape)`` (Navier-Stokes stacks
them into one state array, so one batched inverse and one batched forward transform serve both). A
host is a :class:`ScalarHost` (the mixin :class:`CarriesScalars` and an ``ops`` attribute); the terms
below take its ``ops`` (:class:`~simulator.equations.operators.SpectralOperators`). ``scalars`` below
is the traced ``params["scalars"]``: a list of ``{"diffusivity": (), "mean_gradient": (3,)}`` arrays.

Advection is taken in conservative form, -div(u theta) (equal to -u . grad theta for div u = 0):
per scalar the inverse transform needs theta only and the forward the three products u_j theta. The
2/3 rule then conserves each <theta^2> to round-off: <theta div(u theta)> = <u . grad(theta^2/2)> on
the grid, a product whose modes all lie below N and so average exactly to 0 (the Hou-Li filter, which
keeps the highest modes, changes it there).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

from simulator.equations import resolution
from simulator.equations.base import Builder
from simulator.equations.noise import white_noise
from simulator.equations.operators import SpectralOperators
from simulator.equations.scalars import field_info
from simulator.equations.spec import FieldInfo

Scalars = Sequence[dict[str, jax.Array]]


class CarriesScalars:
    """Mixin of a host equation whose static ``physics`` has a ``scalars`` list (before the equation
    base class in the bases): their count, and the field table holding ``scalar`` with n components
    (absent without any)."""

    @property
    def n_scalars(self) -> int:
        """Number of passive scalars (structure: part of the static physics)."""
        return len(self.physics.scalars)

    @property
    def field_info(self) -> Mapping[str, FieldInfo]:
        """``info.fields``, with ``scalar`` holding this run's n scalars, or absent without any."""
        return field_info(self.info.fields, self.n_scalars)


@runtime_checkable
class ScalarHost(Protocol):
    """What an equation composing passive scalars provides (checked for every registered equation whose
    parameters have ``scalars`` by ``tests/test_architecture.py``): a static ``physics`` with the
    ``scalars`` list, their count and field table (:class:`CarriesScalars`), and its spectral operators."""

    physics: Any
    ops: SpectralOperators

    @property
    def n_scalars(self) -> int: ...

    @property
    def field_info(self) -> Mapping[str, FieldInfo]: ...


def diffusivities(scalars: Scalars) -> jax.Array:
    """kappa_i, shape ``(n,)``."""
    return jnp.stack([s["diffusivity"] for s in scalars])


def products(u: jax.Array, theta: jax.Array) -> jax.Array:
    """Real-space fluxes u_j theta_i, ``(3 n, Nx, Ny, Nz)`` ordered (i, j), of velocity ``u`` ``(3, ...)`` and
    scalars ``theta`` ``(n, ...)``."""
    return jnp.concatenate([u * theta[i] for i in range(theta.shape[0])])


def advection(ops: SpectralOperators, flux_hat: jax.Array) -> jax.Array:
    """-div(u theta_i), dealiased, ``(n, *k_shape)``, from the spectra of :func:`products`."""
    kx, ky, kz = ops.k
    n = flux_hat.shape[0] // 3
    div = [kx * flux_hat[3 * i] + ky * flux_hat[3 * i + 1] + kz * flux_hat[3 * i + 2] for i in range(n)]
    return -1j * ops.dealias * ops.stack(div)


def mean_gradient_source(ops: SpectralOperators, u_hat: jax.Array, scalars: Scalars) -> jax.Array:
    """-u . G_i in k-space, ``(n, *k_shape)`` (linear in u: no transform)."""
    return -ops.stack([sum(s["mean_gradient"][j] * u_hat[j] for j in range(3)) for s in scalars])


def _direction(g: jax.Array) -> jax.Array:
    """G/|G|, and 0 for G = 0."""
    norm = jnp.sqrt(jnp.sum(g**2))
    return jnp.where(norm > 0, g / jnp.where(norm > 0, norm, 1.0), 0.0)


def diagnostics(ops: SpectralOperators, u_hat: jax.Array, theta_hat: jax.Array,
                scalars: Scalars) -> dict[str, jax.Array]:
    """Per scalar i: ``scalar{i}_variance`` <theta'^2>, ``scalar{i}_dissipation`` 2 kappa <|grad theta|^2>,
    ``scalar{i}_flux`` <u' theta'> . G/|G| (spectral sums: Parseval, the k = 0 mode left out)."""
    k2 = ops.k2
    fluctuation = ops.weight * (k2 > 0) / float(ops.fft.size) ** 2
    out = {}
    for i, s in enumerate(scalars):
        power = jnp.abs(theta_hat[i]) ** 2
        along = sum(d * u_hat[j] for j, d in enumerate(_direction(s["mean_gradient"])))
        out[f"scalar{i}_variance"] = jnp.sum(fluctuation * power)
        out[f"scalar{i}_dissipation"] = 2 * s["diffusivity"] * jnp.sum(fluctuation * k2 * power)
        out[f"scalar{i}_flux"] = jnp.sum(fluctuation * jnp.real(jnp.conj(along) * theta_hat[i]))
    return out


def resolution_diagnostics(kmax: float, eta: jax.Array, nu: jax.Array, scalars: Scalars) -> dict[str, jax.Array]:
    """Per scalar i, ``scalar{i}_kmax_eta``: k_max times its smallest scale in a flow of Kolmogorov scale
    ``eta`` (:func:`simulator.equations.resolution.smallest_scale`)."""
    return {f"scalar{i}_kmax_eta": kmax * resolution.smallest_scale(eta, nu, s["diffusivity"], jnp)
            for i, s in enumerate(scalars)}


def spectra(ops: SpectralOperators, u_hat: jax.Array, theta_hat: jax.Array, advected: jax.Array, scalars: Scalars,
            shell: Callable[[jax.Array], jax.Array]) -> dict[str, jax.Array]:
    """Per scalar i, shell sums (``shell``) of the variance spectrum, its transfer by advection
    (``advected`` = :func:`advection`) and its production by the mean gradient (see the package
    docstring for the normalisation)."""
    norm = ops.weight / float(ops.fft.size) ** 2
    source = mean_gradient_source(ops, u_hat, scalars)
    out = {}
    for i in range(len(scalars)):
        conj = jnp.conj(theta_hat[i])
        out[f"scalar{i}_variance"] = shell(norm * jnp.abs(theta_hat[i]) ** 2)
        out[f"transfer_scalar{i}_variance"] = shell(2 * norm * jnp.real(conj * advected[i]))
        out[f"production_scalar{i}_variance"] = shell(2 * norm * jnp.real(conj * source[i]))
    return out


def with_scalars(flow: Builder) -> Builder:
    """An initial-condition builder of the flow that also makes the scalars of ``ic.scalars`` (field
    ``scalar``, :func:`initial_fields`) when the host (a :class:`ScalarHost`) has any."""

    def build(eq: ScalarHost, c: Sequence[jax.Array], ic: Any, params: Any) -> dict[str, jax.Array]:
        fields = flow(eq, c, ic, params)
        if eq.n_scalars:
            fields["scalar"] = initial_fields(eq.ops, ic.scalars, eq.n_scalars)
        return fields

    return build


def initial_fields(ops: SpectralOperators, ic: Any, count: int) -> jax.Array:
    """The real-space scalars ``(count, Nx, Ny, Nz)`` of initial condition ``ic``
    (:class:`~simulator.equations.scalars.ScalarInitial`).

    ``random``: white noise drawn in real space, scalar i from ``fold_in(key(seed), i)`` with JAX's
    sharding-invariant generator (:func:`~simulator.equations.noise.white_noise`: the same field on any
    platform, layout and precision up to round-off, and
    scalar i the same whatever the number of scalars), shaped in k-space to |theta_hat| ~ k
    exp(-(k/k_peak)^2) (so E_theta(k) ~ k^4 exp(-2 (k/k_peak)^2)), dealiased, zero mean, rms = amplitude.
    """
    shape = (count, *ops.fft.shape)
    if ic.name == "zero":
        return jnp.zeros(shape, ops.dtype)
    noise = jnp.stack([white_noise(ops.fft, jax.random.fold_in(jax.random.key(ic.seed), i), ops.dtype)
                       for i in range(count)])
    kmag = jnp.sqrt(ops.k2) * (ops.box[0] / (2 * jnp.pi))
    theta = ops.fft.irfft(ops.dealias * ops.fft.rfft(noise) * kmag * jnp.exp(-((kmag / ic.k_peak) ** 2)))
    rms = jnp.sqrt(jnp.mean(theta**2, axis=(1, 2, 3), keepdims=True))
    return theta * (ic.amplitude / rms)
