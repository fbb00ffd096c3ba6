"""What the flow equations' implementations share: the velocity of a state, the hyperviscosity switch, the
real-space fields as inverse transforms of spectra, and the initial velocity fields (Navier-Stokes's, which
Boussinesq and MHD start from too).

A builder takes ``eq``, any flow equation with ``fft``, ``box``, ``dtype`` and spectral operators ``ops``
(:class:`~simulator.equations.operators.SpectralOperators`), the real-space coordinates ``c`` and the
initial condition ``ic`` (any object with the attributes it reads), and returns real-space fields
``(3, Nx, Ny, Nz)`` in the backend's real layout.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from simulator.equations.base import Params
from simulator.equations.flow.forcing import Forcing
from simulator.equations.noise import white_noise
from simulator.equations.operators import SpectralOperators
from simulator.fft import FFTBackend


class FlowEquation:
    """Mixin of a flow equation whose state starts with the velocity spectrum ``(3, *k_shape)`` and whose
    static ``physics`` is a :class:`~simulator.equations.flow.FlowParams` (before the equation base class
    in the bases). Leaf: ``ops``, the spectral operators of this backend and box (:meth:`operators`)."""

    _LEAVES: ClassVar[tuple[str, ...]] = ("ops",)
    #: the nonlinear terms' dealiasing (:class:`~simulator.equations.operators.SpectralOperators`'): the 2/3 rule
    dealiasing = "two_thirds"

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, physics: Any = None):
        super().__init__(fft, box, dtype, physics)  # type: ignore[call-arg]
        self.ops = self.operators()

    def operators(self) -> SpectralOperators:
        """The spectral operators (wavenumbers, dealiasing, Parseval weights, projection, curl) with the constant-power
        forcing of the velocity that ``physics.forcing`` names."""
        physics = self.physics  # type: ignore[attr-defined]
        return SpectralOperators(self.fft, self.box, self.dtype,  # type: ignore[attr-defined]
                                 Forcing(physics.forcing, physics.forcing_band), self.dealiasing)

    def velocity_spectrum(self, state: jax.Array) -> jax.Array:
        """The velocity spectrum ``(3, *k_shape)`` of a state (what Lagrangian particles are advected by:
        :mod:`simulator.particles.flow`)."""
        return state[:3]

    @property
    def hyperviscous(self) -> bool:
        """Whether the program has the hyperviscous terms (``physics.hyperviscosity_order`` set: structure)."""
        return self.physics.hyperviscous  # type: ignore[attr-defined]

    def spectral_fields(self) -> dict[str, Callable[[jax.Array], jax.Array]]:
        """Each real-space field by name as the function of a state that gives its spectrum (``(n, *k_shape)``,
        or ``k_shape`` for a field without components), in the order :meth:`fields` transforms them: what
        :meth:`fields` and :meth:`field` both transform."""
        raise NotImplementedError

    def fields(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Real space: the inverse transform of each of :meth:`spectral_fields` (``(n, Nx, Ny, Nz)`` or
        ``(Nx, Ny, Nz)``), one at a time on GPUs (:meth:`~simulator.fft.base.FFTBackend.in_turn`)."""
        made = list(self.spectral_fields().items())
        fft = self.fft  # type: ignore[attr-defined]
        out = fft.in_turn(fft.irfft, state, len(made), lambda j, s: made[j][1](s), step=False)
        return {name: f for (name, _), f in zip(made, out, strict=True)}

    def field(self, state: jax.Array, params: Params, name: str, component: jax.Array) -> jax.Array:
        """Component ``component`` of field ``name`` (:meth:`~simulator.equations.base.Equation.field`): the
        inverse transform of that component's spectrum alone, bit for bit that component of :meth:`fields`."""
        spectrum = self.spectral_fields()[name](state)
        if spectrum.ndim > 3:
            spectrum = jax.lax.dynamic_index_in_dim(spectrum, component, keepdims=False)
        return self.fft.irfft(spectrum)  # type: ignore[attr-defined]


def peaked(eq: Any, noise_hat: jax.Array, k_peak: Any) -> jax.Array:
    """``noise_hat`` times k exp(-(k/k_peak)^2), k the mode number |k| L_x/2pi: white noise so shaped has
    the spectrum k^4 exp(-2 (k/k_peak)^2) (|f_hat|^2 ~ k^2 e^..., and shells add k^2)."""
    kmag = jnp.sqrt(eq.ops.k2) * (eq.box[0] / (2 * jnp.pi))
    return noise_hat * kmag * jnp.exp(-((kmag / k_peak) ** 2))


def abc(eq: Any, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """Arnold-Beltrami-Childress flow, A = B = C = amplitude, at mode ``wavenumber`` (curl u = k u)."""
    m = ic.wavenumber
    x, y, z = (2 * jnp.pi * m / L * ci for ci, L in zip(c, eq.box, strict=True))
    a = ic.amplitude
    u = jnp.stack(jnp.broadcast_arrays(a * (jnp.sin(z) + jnp.cos(y)), a * (jnp.sin(x) + jnp.cos(z)),
                                       a * (jnp.sin(y) + jnp.cos(x))))
    return {"velocity": u}


def random_velocity(eq: Any, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """Solenoidal random field with E(k) ~ k^4 exp(-2 (k/k_peak)^2) (:func:`peaked`), rms velocity =
    amplitude, from ``seed``.

    The noise is drawn in real space from ``seed`` with JAX's sharding-invariant counter-based
    generator (:func:`~simulator.equations.noise.white_noise`), so the field is the same on any platform,
    backend, device or process count, and in float32 and float64 runs up to float32 round-off.
    """
    u_hat = eq.ops.project(eq.ops.dealias * eq.fft.rfft(white_noise(eq.fft, jax.random.key(ic.seed), eq.dtype, 3)))
    u = eq.fft.irfft(peaked(eq, u_hat, ic.k_peak))
    return {"velocity": u * (ic.amplitude / jnp.sqrt(jnp.mean(jnp.sum(u**2, axis=0))))}
