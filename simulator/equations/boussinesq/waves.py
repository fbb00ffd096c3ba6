"""The exact propagator of the Boussinesq equations' linear part, mode by mode.

Per wavevector k the linear terms act on x = (u_hat, b_hat) (u_hat solenoidal, k . u_hat = 0) as

    dx/dt = A x - D x,   A x = (P[b z - f z x u], -N^2 w),   D = diag(d_u, d_u, d_u, d_b),
    d_u = nu k^2 + nu_p k^(2p),   d_b = kappa k^2 + kappa_p k^(2p)

with P = I - k k^T/k^2 the Leray projection. On the solenoidal subspace A has the eigenvalues 0 and
+-i omega, omega^2 = (N^2 k_h^2 + f^2 k_z^2)/k^2 (gravity-inertia waves and the vortical mode), so by
Cayley-Hamilton A^3 = -omega^2 A and

    exp(A t) = I + sin(omega t)/omega A + (1 - cos(omega t))/omega^2 A^2

exactly, the coefficients being entire functions of omega evaluated through sinc, so that omega = 0
(k along z without rotation: then A^3 = 0 and the formula is its Taylor polynomial) is regular. A is
skew-adjoint in the energy norm |u|^2 + |b|^2/N^2, so exp(A t) conserves E_K + E_P per mode: the
waves are integrated exactly and set no time-step limit for any N dt or f dt.

Dissipation: with d_u = d_b (nu = kappa and nu_p = kappa_p; the hyperviscous terms only when the
order p is set), D = d_u I commutes with A and exp((A - D) t) = exp(-d_u t) exp(A t) exactly. With
d_u != d_b (nu != kappa) they do not commute; the propagator is the symmetric (Strang) product
exp(-D t/2) exp(A t) exp(-D t/2), which is exact in either limit (waves alone, diffusion alone),
unconditionally stable (each factor is a contraction in the energy norm), and carries an error
O((d_b - d_u) omega^2 t^3) per application: the time scheme is then second order in the part of
the linear operator that couples the unequal diffusion to the waves (fourth order in everything else).
The configuration requires kappa_p = nu_p (:meth:`~simulator.equations.boussinesq.BoussinesqParams.check`):
the hyperviscous rate times dt is of order 1 at the grid scale, where an unequal pair would be split
with an O(1) error.

The box-mean mode (k = 0) is not propagated: the state carries no mean flow or mean buoyancy (see
:meth:`Boussinesq.from_fields`).

Arrays: spectral, ``(4, *k_shape)`` stacks (u_hat_x, u_hat_y, u_hat_z, b_hat) in the FFT backend's
k-space layout; ``k`` its three broadcasting wavenumber vectors.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

import jax
import jax.numpy as jnp

from simulator.equations.operators import inverse_k2


def frequency(k: Sequence[jax.Array], n2: jax.Array, f: jax.Array, inv_k2: jax.Array | None = None) -> jax.Array:
    """omega = ((N^2 k_h^2 + f^2 k_z^2)/k^2)^(1/2) per mode (0 at k = 0; differentiable there too)."""
    kx, ky, kz = k
    inv_k2 = inverse_k2(k) if inv_k2 is None else inv_k2
    omega2 = (n2 * (kx**2 + ky**2) + f**2 * kz**2) * inv_k2
    return jnp.where(omega2 > 0, jnp.sqrt(jnp.where(omega2 > 0, omega2, 1.0)), 0.0)


def propagate(x: jax.Array, tau: jax.Array, k: Sequence[jax.Array], nu: jax.Array, kappa: jax.Array,
              n2: jax.Array, f: jax.Array, stack: Callable[[list[jax.Array]], jax.Array] = jnp.stack,
              hyper: tuple[jax.Array, jax.Array, int] | None = None) -> jax.Array:
    """exp(L tau) x for the linear operator L = A - D of the module docstring (exact for d_u = d_b);
    ``x`` is the ``(4, *k_shape)`` stack, u_hat solenoidal; ``stack`` assembles the four components (the
    equation passes :meth:`~simulator.equations.operators.SpectralOperators.stack`); ``hyper`` = (nu_p,
    kappa_p, p) adds the hyperviscous rates to D, as factors exp(-nu_p k^(2p) tau/2) formed per mode
    inside this kernel (None: no such factor in the program).

    With y = (u, v, w, b) = exp(-D tau/2) x, zeta = k_x v - k_y u, d1 = (f zeta + k_z b)/k^2 and
    d2 = (f^2 - N^2) k_z w/k^2 (using k_x u + k_y v = -k_z w):

        A y   = (f v - k_x d1, -f u - k_y d1, b - k_z d1, -N^2 w)
        A^2 y = (-f^2 u - f k_y d1 - k_x d2, -f^2 v + f k_x d1 - k_y d2, -N^2 w - k_z d2, N^2 (k_z d1 - b))

    written out per component (a small expression per mode, which the compiler fuses into one pass).
    """
    kx, ky, kz = k
    k2 = kx**2 + ky**2 + kz**2
    inv_k2 = inverse_k2(k)
    half_angle = 0.5 * tau * frequency(k, n2, f, inv_k2)
    sinc = jnp.sinc(half_angle / jnp.pi)  # sin(omega tau/2)/(omega tau/2)
    moving = (k2 > 0).astype(inv_k2.dtype)  # the box mean is not propagated
    sine = moving * tau * sinc * jnp.cos(half_angle)  # sin(omega tau)/omega
    versine = moving * 0.5 * tau**2 * sinc**2  # (1 - cos(omega tau))/omega^2
    hu, hb = jnp.exp(-0.5 * tau * nu * k2), jnp.exp(-0.5 * tau * kappa * k2)
    if hyper is not None:
        nu_p, kappa_p, order = hyper
        k2p = k2**order
        hu, hb = hu * jnp.exp(-0.5 * tau * nu_p * k2p), hb * jnp.exp(-0.5 * tau * kappa_p * k2p)
    u, v, w, b = hu * x[0], hu * x[1], hu * x[2], hb * x[3]
    d1 = (f * (kx * v - ky * u) + kz * b) * inv_k2
    d2 = (f**2 - n2) * kz * w * inv_k2
    return stack([
        hu * (u + sine * (f * v - kx * d1) - versine * (f**2 * u + f * ky * d1 + kx * d2)),
        hu * (v - sine * (f * u + ky * d1) + versine * (f * kx * d1 - f**2 * v - ky * d2)),
        hu * (w + sine * (b - kz * d1) - versine * (n2 * w + kz * d2)),
        hb * (b - sine * n2 * w + versine * n2 * (kz * d1 - b)),
    ])


def wave_fields(k: Sequence[float], phase: jax.Array, amplitude: jax.Array, n2: jax.Array, f: jax.Array
                ) -> tuple[jax.Array, jax.Array]:
    """The real fields of one gravity-inertia wave of wavevector ``k`` (numbers, k_h > 0) at phase
    ``phase`` = k.x - omega t: u = A (e2 cos phi + (f c/omega) e1 sin phi), b = A (N^2 s/omega) sin phi,
    with c = k_z/k, s = k_h/k, e1 = k x z/k_h, e2 = e1 x k/k (so w = A s cos phi).

    Derivation: in the basis (e1, e2) of the plane normal to k, A (module docstring) reads
    d(a1, a2, b)/dt = (-f c a2, f c a1 + s b, -N^2 s a2); its eigenvector of eigenvalue -i omega
    (a wave exp(i(k.x - omega t)) whose phase runs along +k) is a2 = A, a1 = -i f c A/omega,
    b = -i N^2 s A/omega. Returns velocity ``(3, ...)`` and buoyancy, shaped like ``phase``.
    """
    kx, ky, kz = (float(v) for v in k)
    kh = (kx**2 + ky**2) ** 0.5
    kk = (kh**2 + kz**2) ** 0.5
    e1 = (ky / kh, -kx / kh, 0.0)
    e2 = (-kx * kz / (kk * kh), -ky * kz / (kk * kh), kh / kk)
    c, s = kz / kk, kh / kk
    omega = jnp.sqrt(n2 * s**2 + f**2 * c**2)
    cos, sin = jnp.cos(phase), jnp.sin(phase)
    u = jnp.stack([amplitude * (e2[i] * cos + f * c / omega * e1[i] * sin) for i in range(3)])
    return u, amplitude * n2 * s / omega * sin
