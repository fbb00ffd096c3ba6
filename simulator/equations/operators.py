"""Spectral operators of the periodic box on one FFT backend: what every flow equation differentiates with.

One object per equation instance (as FluidSim's ``oper`` or jax-cfd's ``grid``): the wavenumbers, the
dealiasing (the 2/3 rule, the Hou-Li filter or a phase-shifted truncation), Parseval weights, 1/k^2,
the Leray projection, the curl and the constant-power forcing, so that an equation composes them
instead of borrowing another equation's. :func:`inverse_k2` is the one place 1/k^2 (0 at k = 0) is
written; the Poisson solve (:mod:`.gravity`) and the wave propagator (:mod:`.boussinesq.waves`) use it
too.

Dealiasing (``dealiasing``, static): ``two_thirds`` zeroes the modes with |m_i| >= N_i/3 on any axis
(Orszag 1971); ``hou_li`` multiplies by the smooth filter sigma = prod_i exp(-36 (|m_i| / (N_i/2))^36)
instead (Hou & Li 2007, J. Comput. Phys. 226, 379), which changes the modes below 0.8 of the Nyquist
wavenumber by less than 1.2% and damps those above smoothly, to round-off at the Nyquist mode.
``phase_shift_cubic`` and ``phase_shift_spherical`` evaluate the products on a shifted grid
(:meth:`SpectralOperators.shift`, :mod:`.phase_shift`: Patterson & Orszag 1971, Rogallo 1981) and then
truncate to the 2/3 rule's cube or to the sphere sum_i (m_i/N_i)^2 < 2/9 (|m| < sqrt(2) N/3 on a cubic
grid), outside which no double or triple alias lands.

Arrays: ``k`` and ``modes`` are three broadcasting vectors in the backend's real-to-complex k-space
layout and sharding, ``keep`` three per-axis vectors (0/1 under the 2/3 rule and its phase-shifted
form, the filter's factors under Hou-Li, m_i^2 (N_x/N_i)^2 under the spherical truncation), ``theta``
None or the phase shift's three angles per mode number (:mod:`.phase_shift`), ``weight`` the Parseval
weights; spectra are ``(3, *k_shape)`` vectors or
``(*k_shape)`` scalars. The 3D products (the dealiasing mask, k^2, 1/k^2, the
forcing mask) are formed inside the fused elementwise kernels of the step, never stored: at 1024^3 each
would cost GBs.
"""

from __future__ import annotations

import copy
import functools
import math
from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from simulator.equations import assembly
from simulator.fft import FFTBackend
from simulator.fft.base import complex_dtype


def inverse_k2(k: Sequence[jax.Array]) -> jax.Array:
    """1/k^2 per mode of the wavenumbers ``k`` (three broadcasting vectors), and 0 at k = 0 (the mean is
    left alone; differentiable there too)."""
    k2 = k[0] ** 2 + k[1] ** 2 + k[2] ** 2
    return jnp.where(k2 > 0, 1.0 / jnp.where(k2 > 0, k2, 1.0), 0.0)


def cross(a: Sequence[jax.Array], b: Sequence[jax.Array]) -> list[jax.Array]:
    """a x b of two three-component fields (in real space: a pointwise product)."""
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def computed_once(factor: jax.Array) -> jax.Array:
    """``factor`` (a small array that multiplies a large one), written so that XLA computes it once.

    XLA's CPU compiler counts a real sine or cosine as cheap and fuses it, through the broadcast, into the
    kernel of the product: a complex exponential of one axis's mode numbers is then evaluated for every
    element of the 3D spectrum, a C-library call each (the phase-shifted Navier-Stokes step ran 5-6x
    slower than the unshifted one at 32^3). It does not duplicate a reduction into its consumers, and it
    drops an optimisation barrier before fusing, so the factor is written as a sum over an axis of two
    that only it fills: the same numbers, one small kernel."""
    return jnp.stack([factor, jnp.zeros_like(factor)]).sum(axis=0)


def hou_li(m: jax.Array, n: int) -> jax.Array:
    """The Hou-Li filter exp(-36 (|m| / (n/2))^36) of mode numbers ``m`` along an axis of ``n`` points: the
    factor 36 damps the Nyquist mode to exp(-36) ~ 2e-16, double-precision round-off."""
    return jnp.exp(-36.0 * (jnp.abs(m) / (n / 2)) ** 36)


def two_thirds(m: jax.Array, n: int) -> jax.Array:
    """1 where |m| < n/3 (the 2/3 rule), else 0."""
    return (jnp.abs(m) < n / 3).astype(m.dtype)


def scaled_square(m: jax.Array, n: int, n_x: int) -> jax.Array:
    """m^2 (n_x/n)^2: squared mode numbers in units of the x axis's (their sum over the axes is < 2 n_x^2/9
    inside the spherical truncation; exact integers on a cubic grid, so that the boundary is exact there)."""
    return m**2 * (n_x / n) ** 2


#: dealiasing scheme -> its per-axis factor of the mode numbers (keys: ``resolution.RESOLVED``)
#: (mode numbers m, points n of their axis, points n_x of the x axis)
_FACTORS = {"two_thirds": lambda m, n, _: two_thirds(m, n), "hou_li": lambda m, n, _: hou_li(m, n),
            "phase_shift_cubic": lambda m, n, _: two_thirds(m, n), "phase_shift_spherical": scaled_square}


#: the schemes whose factor per axis is the domain's own 2/3 rule
#: (:meth:`simulator.fft.domain.DomainSpectra.domain_keep`)
_DOMAIN_RULE = ("two_thirds", "phase_shift_cubic")


@functools.partial(jax.jit, static_argnums=(1, 2, 3))
def _keep(modes: tuple[jax.Array, ...], shape: tuple[int, ...], dealiasing: str, dtype: Any) -> tuple[jax.Array, ...]:
    """The dealiasing scheme's factor per axis of the sharded mode numbers ``modes``: one program (op by op,
    each of its few operations on a sharded array would be a program of its own to compile or load)."""
    return tuple(_FACTORS[dealiasing](m, n, shape[0]).astype(dtype) for m, n in zip(modes, shape, strict=True))


@jax.tree_util.register_pytree_node_class
class DomainOperators:
    """The operators of one backend's domain (:mod:`simulator.fft.domain`) over ``box``, periodic or walled: the
    wavenumbers ``k`` of each axis's basis, its 2/3 rule ``keep`` (three 0/1 vectors) and Parseval's ``weight``, in
    the backend's spectral layout, as (sharded) leaves; the backend, box and dtype static. The bases give every
    number (no kind of wall is asked here): a periodic box's spectra are real-to-complex ones, a walled box's hold
    the full spectrum along the plates and the sine or cosine entries across them."""

    _LEAVES: tuple[str, ...] = ("k", "keep", "weight")
    _STATIC: tuple[str, ...] = ("fft", "box", "dtype")

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any):
        self.fft, self.box, self.dtype = fft, tuple(float(b) for b in box), jnp.dtype(dtype)
        self.k = tuple(fft.domain_wavenumbers(self.box, self.dtype))
        self.keep = fft.domain_keep(self.box, self.dtype)
        self.weight = fft.domain_weight(self.box, self.dtype)

    def tree_flatten(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return tuple(getattr(self, n) for n in self._LEAVES), tuple(getattr(self, n) for n in self._STATIC)

    @classmethod
    def tree_unflatten(cls, static: tuple[Any, ...], leaves: tuple[Any, ...]) -> Any:
        obj = object.__new__(cls)
        for name, value in (*zip(cls._STATIC, static, strict=True), *zip(cls._LEAVES, leaves, strict=True)):
            setattr(obj, name, value)
        return obj

    @property
    def dealias(self) -> jax.Array:
        """What the nonlinear terms are multiplied by: 1 on the modes the 2/3 rule of every axis keeps, else 0."""
        return self.keep[0] * self.keep[1] * self.keep[2]

    @property
    def k2(self) -> jax.Array:
        return self.k[0] ** 2 + self.k[1] ** 2 + self.k[2] ** 2

    @property
    def inv_k2(self) -> jax.Array:
        """1/k^2, and 0 at k = 0 (the mean is left alone: by the projection, by a Poisson solve)."""
        return inverse_k2(self.k)

    def mean(self, density: jax.Array) -> jax.Array:
        """Mean over the domain of a quantity given as a per-mode spectral density (Parseval-weighted sum / N^2)."""
        return jnp.sum(self.weight * density) / float(self.fft.size) ** 2


@jax.tree_util.register_pytree_node_class
class SpectralOperators(DomainOperators):
    """The operators on real-to-complex spectra of one backend and box (see the module docstring): the domain's
    (:class:`DomainOperators`), the dealiasing schemes of a periodic box and what a flow composes of them.

    A pytree: ``k``, ``modes``, ``keep`` and ``weight`` are its (sharded) leaves, and ``theta`` (replicated,
    ``(3,)``) when a phase shift is set; the backend, box, dtype, dealiasing and the forcing are static
    structure. ``forcing``: the flow's, injected by its equation (``forcer(ops, u_hat, params) -> f_hat | None``,
    hashable: :class:`simulator.equations.flow.forcing.Forcing`); None: unforced.
    """

    _LEAVES = ("k", "modes", "keep", "weight", "theta")
    _STATIC = ("fft", "box", "dtype", "forcer", "dealiasing", "devices", "select")

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, forcing: Any = None,
                 dealiasing: str = "two_thirds"):
        super().__init__(fft, box, dtype)
        self.forcer, self.dealiasing = forcing, dealiasing
        self.modes = tuple(fft.wavenumbers((2 * jnp.pi,) * 3, real=True, dtype=self.dtype))  # integer mode numbers
        if dealiasing not in _DOMAIN_RULE:  # the filter's or the sphere's factors, of the mode numbers
            self.keep = _keep(self.modes, tuple(fft.shape), dealiasing, self.dtype)
        self.theta: jax.Array | None = None  # no phase shift until :meth:`shifted` sets one
        self.devices = fft.devices
        #: stack spectra by selection (:mod:`.assembly`): a velocity spectrum on one device is past the limit
        self.select = assembly.is_large(3 * math.prod(fft.spectral_shape(real=True)) / self.devices,
                                        complex_dtype(self.dtype))

    @property
    def dealias(self) -> jax.Array:
        """What the nonlinear terms are multiplied by: 1 on the modes the 2/3 rule keeps (|m_i| < N_i/3 on
        every axis), else 0; or the Hou-Li filter's value per mode; or 1 inside the sphere
        sum_i (m_i/N_i)^2 < 2/9, else 0 (``phase_shift_spherical``)."""
        if self.dealiasing == "phase_shift_spherical":
            radius2 = 2.0 * self.fft.shape[0] ** 2 / 9.0
            return (self.keep[0] + self.keep[1] + self.keep[2] < radius2).astype(self.dtype)
        return self.keep[0] * self.keep[1] * self.keep[2]

    @property
    def held(self) -> jax.Array:
        """1 on the modes a state may hold, else 0: those of the truncation (the 2/3 rule's cube, or the
        sphere); every mode under the smooth filter (forcing masks are built on it: a 0/1 set, so that the
        injected power is exact)."""
        return jnp.ones((), self.dtype) if self.dealiasing == "hou_li" else self.dealias

    def shifted(self, theta: jax.Array) -> SpectralOperators:
        """A copy whose :meth:`shift` moves fields by ``theta`` (``(3,)``: radians per mode number along each
        axis, the grid shifted by theta_i N_i / (2 pi) cells; :func:`.phase_shift.angles`)."""
        out = copy.copy(self)
        out.theta = theta
        return out

    def shift(self, f_hat: jax.Array, sign: int = 1) -> jax.Array:
        """f_hat exp(i sign m . theta) (``sign`` 1: the spectrum of f(x + Delta), read on the grid shifted by
        Delta; -1: back), the phase the product of three 1D factors formed in the kernel that applies it;
        ``f_hat`` unchanged when no shift is set (:meth:`shifted`)."""
        if self.theta is None:
            return f_hat
        for i, m in enumerate(self.modes):
            f_hat = f_hat * computed_once(jnp.exp((1j * sign) * (m * self.theta[i]).astype(self.dtype)))
        return f_hat

    def project(self, f_hat: jax.Array) -> jax.Array:
        """Leray projection onto divergence-free fields: f - k (k.f) / k^2 (k = 0 left unchanged)."""
        kx, ky, kz = self.k
        div = (kx * f_hat[0] + ky * f_hat[1] + kz * f_hat[2]) * self.inv_k2
        return self.stack([f_hat[0] - kx * div, f_hat[1] - ky * div, f_hat[2] - kz * div])

    def curl(self, u_hat: jax.Array) -> jax.Array:
        return 1j * self.stack(cross(self.k, u_hat))

    def stack(self, parts: Sequence[jax.Array]) -> jax.Array:
        """``jnp.stack`` of spectra (k-space components), correct on GPUs at every size (:mod:`.assembly`)."""
        return assembly.stack(parts, self.select, self.devices)

    def concatenate(self, blocks: Sequence[jax.Array]) -> jax.Array:
        """``jnp.concatenate`` of spectra along the component axis (:mod:`.assembly`)."""
        return assembly.concatenate(blocks, self.select, self.devices)

    def forcing(self, u_hat: jax.Array, params: dict[str, jax.Array]) -> jax.Array | None:
        """The forcing of ``u_hat`` the flow's equation injected (:mod:`.flow.forcing`: constant power at the
        traced ``params["forcing_power"]``), or None when unforced."""
        return None if self.forcer is None else self.forcer(self, u_hat, params)
