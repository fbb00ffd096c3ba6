"""The differentiated objective of the gradient tests, shared by tests/test_gradients.py and the
two-process worker tests/mp_grad_worker.py, for any registered equation.

Per equation: its default config on an 8^3 float64 grid, the first traced parameter of its params
dataclass (NS viscosity, SP hbar_over_m, ...), and a smooth scalar that does not depend on the FFT
backend's layouts: the sum over the recorded history of its first diagnostic, plus a fixed weighting
of the real-space fields of its final state (so that an equation whose first diagnostic is conserved,
like the mass of Schrodinger-Poisson, still has a gradient to check).
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from simulator import gradients
from simulator.equations import get

STEPS, EVERY = 4, 2
GRID = 8


#: starts of their own for the equations whose default start is a steady state in which the differentiated
#: parameter plays no part: a channel's laminar profile is the same at every Reynolds number (its drive scales with
#: it), so the objective's derivative in it would be round-off; noise on it makes the flow depend on the viscosity
STARTS = {"channel": {"initial.amplitude": 0.1}, "channel2d": {"initial.amplitude": 0.1}}


def overrides(equation: str) -> dict[str, Any]:
    return {"physics.name": equation, "grid.shape": GRID, "precision": "float64", **STARTS.get(equation, {})}


def parameter(equation: str) -> str:
    """The parameter differentiated: the first traced number of the equation's params dataclass."""
    return next(iter(get(equation).params().traced()))


def weight(sim: Any) -> jax.Array:
    """A smooth real weight ``(Nx, Ny, Nz)`` in the real-space layout, the same on every backend, with
    modes along each axis alone and oblique ones (a field varying along one axis still projects on it)."""
    box = sim.cfg.grid.lengths  # a plane's box (1, Nx, Ny) too

    def formula(c):
        x, y, z = (2 * jnp.pi / L * ci for ci, L in zip(c, box, strict=True))
        return (jnp.cos(x + 0.3) + jnp.sin(y + 0.7) + jnp.cos(z - 0.2) + jnp.cos(x + y + z + 0.5)
                + 0.5 * jnp.cos(2 * x - y + 3 * z))

    return jax.jit(formula)(sim.fft.coordinates(box, sim.dtype))  # one program, not one per operation


def make_objective(sim: Any):
    """``J(eq, params, a, state, w)``: the objective of the run from ``a * state``, a pure function (the
    equation is an argument: see simulator.gradients). Its derivative in ``a`` at ``a = 1`` is the
    derivative along the initial state itself, contracted inside the compiled program."""
    info, make_step, state_fields = sim.info, sim.scheme.load(), sim.equation.state_fields
    first = next(iter(info.diagnostics))
    dt = float(sim.cfg.time.dt)

    def J(eq, params, a, state, w):
        state = jax.tree.map(lambda x: a * x, state)
        run = gradients.rollout(eq, make_step, params, state, jnp.zeros((), w.dtype), jnp.asarray(dt, w.dtype),
                                steps=STEPS, every=EVERY, diagnostics=(first,))
        fields = eq.at(jnp.asarray(STEPS * dt, w.dtype)).fields(run.state, params)
        total = jnp.sum(run.history[first])
        for name in state_fields:  # this run's (Navier-Stokes without scalars has no field "scalar")
            f = fields[name]
            total = total + jnp.mean(w * jnp.real(f)) + (jnp.mean(w * jnp.imag(f)) if jnp.iscomplexobj(f) else 0.0)
        return total

    return J


def gradient(sim: Any, compiler_options: dict[str, Any] | None = None) -> tuple[float, float]:
    """The reverse-mode derivatives of the objective at ``a = 1``: in :func:`parameter` and along the initial
    state (one compiled program, the equation an argument: a multi-process program closes over no array)."""
    J, one = make_objective(sim), jnp.ones((), sim.dtype)
    grad = jax.jit(jax.grad(J, argnums=(1, 2)), compiler_options=compiler_options)
    grad = grad(sim.equation, sim.params, one, sim.initial_state(), weight(sim))
    return float(grad[0][parameter(sim.cfg.physics.name)]), float(grad[1])
