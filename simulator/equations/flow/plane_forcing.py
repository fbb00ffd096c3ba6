"""The forcing of the planar flows (:class:`~.plane.PlanarFlow`): the steady Kolmogorov forcing and the random kick
of a fixed injection rate. :func:`band` and :func:`pattern` are any planar flow's; :func:`kick`, :func:`steady` and
:func:`injection` act on the vorticity, the state's row 0 of a :class:`~.plane.VorticityFlow`.

``kolmogorov``: f_x = F sin(k_f y) (k_f = 2 pi forcing_wavenumber / Ly), whose curl is the vorticity forcing
f_omega = -F k_f cos(k_f y): a constant term of the right-hand side, on the two modes (0, +-k_f). It drives the
steady Kolmogorov flow omega = f_omega / (nu k_f^2 + alpha), an exact solution (the nonlinear term of a single
shear mode is zero), unstable above a critical Reynolds number (Meshalkin & Sinai 1961).

``random``: after each whole step the vorticity gets the kick omega -> omega + a r, r a field of unit-modulus
modes with random phases on the band |m - k_f| <= width/2 (m = |k| max(L)/2pi), drawn anew each step from the
step's number and ``forcing_seed`` by a counter-based hash of the mode numbers (the same on every backend,
device count and restart), and a the root of smaller modulus of

    E(omega + a r) - E(omega) = a <psi r> + a^2 <|r|^2/k^2>/2 = epsilon dt,

so that each kick injects exactly the energy epsilon dt whatever the flow (FluidSim's ``normalized`` forcing
solving the same second-degree equation; Alvelius 1999 for forcing uncorrelated with the flow). The random
phases make the kick's cross term average to zero, so over many steps the injection is the forcing-forcing
correlation alone, as white-in-time forcing's is.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

#: the mixing constants of the hash (MurmurHash3's finaliser and four odd multipliers)
_MIX = (0x9E3779B1, 0x85EBCA77, 0xC2B2AE3D, 0x27D4EB2F)


def _hash(*words: jax.Array) -> jax.Array:
    """A well-mixed uint32 of uint32 ``words`` (MurmurHash3's finaliser over their weighted sum)."""
    x = jnp.zeros((), jnp.uint32)
    for w, m in zip(words, _MIX, strict=False):
        x = x ^ (w.astype(jnp.uint32) * jnp.uint32(m))
        x = x ^ (x >> 16)
        x = x * jnp.uint32(0x85EBCA6B)
        x = x ^ (x >> 13)
        x = x * jnp.uint32(0xC2B2AE35)
        x = x ^ (x >> 16)
    return x


def band(eq: Any) -> jax.Array:
    """1 on the random forcing's modes (within the 2/3 rule's), else 0."""
    m = jnp.sqrt(eq.ops.k2) * (max(eq.box) / (2 * jnp.pi))
    inside = jnp.abs(m - eq.physics.forcing_wavenumber) <= eq.physics.forcing_width / 2
    return (inside & (m > 0)).astype(eq.dtype) * eq.ops.dealias


def pattern(eq: Any, step: jax.Array, seed: jax.Array) -> jax.Array:
    """r: unit-modulus random phases on :func:`band`, the same on the half spectrum's line ky = 0 as a real field's
    (r(-mx, 0) = conj r(mx, 0)), scaled by the grid's size (a real field of O(1))."""
    mx, my = eq.mode_numbers
    offset = jnp.asarray(1 << 20, eq.dtype)
    phase = _hash(seed, step, jnp.abs(mx) + offset, my + offset).astype(eq.dtype) * (2 * jnp.pi / 2.0**32)
    phase = jnp.where((my == 0) & (mx < 0), -phase, phase)
    return band(eq) * jnp.exp(1j * phase) * float(eq.fft.size)


def kick(eq: Any, state: jax.Array, t: jax.Array, dt: jax.Array, params: Any) -> jax.Array:
    """``state`` with the vorticity kicked by exactly the energy ``forcing_power`` dt (see the module docstring)."""
    step = jax.lax.stop_gradient(jnp.mod(jnp.round(t / dt), 2.0**31)).astype(jnp.uint32)
    r = pattern(eq, step, jnp.uint32(eq.physics.forcing_seed))
    ops = eq.ops
    b = ops.mean(jnp.real(jnp.conj(state[0]) * r) * ops.inv_k2)
    c = ops.mean(jnp.abs(r) ** 2 * ops.inv_k2)
    target = params["forcing_power"] * dt
    sign = jnp.where(b < 0, -1.0, 1.0).astype(b.dtype)
    a = 2 * target / (b + sign * jnp.sqrt(b**2 + 2 * c * target))
    return state.at[0].add(a * r)


def steady(eq: Any, params: Any) -> jax.Array | None:
    """The Kolmogorov forcing's vorticity spectrum f_omega_hat (None unless ``forcing: kolmogorov``)."""
    if eq.physics.forcing != "kolmogorov":
        return None
    mx, my = eq.mode_numbers
    k_f = 2 * jnp.pi * eq.physics.forcing_wavenumber / eq.lengths[1]
    on = ((mx == 0) & (my == eq.physics.forcing_wavenumber)).astype(eq.dtype)
    # cos(k y) has the coefficient N/2 at +k in the unnormalised half spectrum (its -k twin is implied)
    return on * (-params["forcing_amplitude"] * k_f * float(eq.fft.size) / 2)


def injection(eq: Any, omega_hat: jax.Array, params: Any) -> dict[str, jax.Array]:
    """The injected power (and enstrophy, Kolmogorov forcing) of a forced run; {} unforced."""
    if eq.physics.forcing == "random":
        return {"injection": params["forcing_power"]}
    f_hat = steady(eq, params)
    if f_hat is None:
        return {}
    cross = jnp.real(jnp.conj(omega_hat) * f_hat)
    return {"injection": eq.ops.mean(cross * eq.ops.inv_k2), "injection_enstrophy": eq.ops.mean(cross)}
