"""Random phase shifts of the pseudo-spectral products (Patterson & Orszag 1971, Phys. Fluids 14, 2538;
Rogallo 1981, NASA TM-81315): the shift of each evaluation of a nonlinear term, drawn from a counter.

Method. A product uv formed on the grid x_j shifted by Delta (every spectrum multiplied by exp(i k.Delta)
before the inverse transforms, the product's spectrum by exp(-i k.Delta) after the forward one) is the
exact product plus its aliases p_hat(k + N m) exp(i 2 pi m.delta), delta_i = Delta_i N_i / L_i the shift
in cells: a shift leaves the exact part alone and turns each alias by a phase. Under a truncation to the
sphere sum_i (m_i/N_i)^2 < 2/9 (|m| < sqrt(2) N/3 on a cubic grid) no alias with two or three nonzero
m_i reaches a kept mode; the single ones (one m_i = +-1) that do are multiplied by exp(+-i 2 pi delta_i),
zero in the mean over a uniform delta_i, and change sign when delta moves by half a cell on every axis.
So each step draws delta uniform in [0, 1)^3, and stage i adds its scheme's offset o_i cells on every
axis (:func:`simulator.time.integrators.stage_equation`): offsets with sum_i b_i exp(2 pi i o_i) = 0 over
the stage weights b_i cancel the single aliases of the step but for the change of the state between the
stages. Heun's rk2 (b = 1/2, 1/2) takes Rogallo's pairing, o = (0, 1/2); classical rk4 (b = 1, 2, 2, 1 /6)
takes o = (0, -1/3, 1/6, -1/2) (FluidSim 26.10's offsets, after Sinhababu & Ayyalasomayajula 2021), which
measured more accurate than the pairing (0, 1/2, 0, 1/2) at 48^3 and 64^3 (docs/PERFORMANCE.md); rk3 and
lsrk4 take the pairing too, and for Williamson's rk3 no offsets can cancel the sum (its weights 1/6,
3/10, 8/15: the largest exceeds the other two together). Under the 2/3
rule's cube no alias reaches a kept mode at all, so the shifted and unshifted terms agree to round-off.

Counter. delta is a function of the step's number n and the stage's offset alone: the top 24 of three
32-bit words ``jax.random.bits(fold_in(key(SEED), n))``, times 2^-24, so a run draws the same shifts on
every FFT backend, device and process count (a replicated draw of three numbers), after a restart,
whatever came before, and in float32 and float64 alike (24 bits are exact in both; ``jax.random.uniform``
fills the mantissa of its dtype, so the two precisions would draw different shifts).
The integrators derive n = round(t/dt) from the step's start time and size
(:func:`simulator.time.integrators.stage_equation`): the step count of a fixed-dt run (one that starts at
t0 counts from round(t0/dt)), and a deterministic function of (t, dt) under an adaptive dt. The shift
is not differentiated (the draw is a constant of the step), so gradients of the state pass through the
phases as through any diagonal factor.

Arrays: ``theta`` is ``(3,)``, radians per mode number along x, y, z (theta_i = 2 pi delta_i / N_i),
replicated.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

#: the fixed key of the shifts (a run's shifts differ only by its steps' numbers)
SEED = 0x5EED5


def angles(step: jax.Array, shift: jax.Array, shape: Sequence[int], dtype: Any) -> jax.Array:
    """theta ``(3,)`` of the stage of step ``step`` (an unsigned or int counter, traced) with offset
    ``shift`` cells on a grid of ``shape``: delta uniform in [0, 1) cells per axis, on a 2^-24 lattice,
    from ``fold_in(key(SEED), step)``, the same in every precision, plus ``shift`` on every axis."""
    words = jax.random.bits(jax.random.fold_in(jax.random.key(SEED), step), (3,), jnp.uint32)
    delta = (words >> 8).astype(dtype) * (2.0 ** -24) + jnp.asarray(shift).astype(dtype)
    return jax.lax.stop_gradient(2 * jnp.pi * delta / jnp.asarray(shape, dtype))
