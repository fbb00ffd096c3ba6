"""What the extrema output runs on the devices: one pure function of the state, which the simulator's output
wall jits, compiles ahead of the run, lowers for the planner and evaluates once per moment (reductions over
the sharded field, replicated results)."""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp


def extrema(sim: Any, eq: Any, state: Any, params: Any, t: Any, dt: Any) -> dict[str, jax.Array]:
    """``{min, max, mean}`` of each component of the configured field, each (components,), replicated."""
    f = eq.at(t).fields(state, params)[sim.cfg.output.section("extrema").field]
    f = f if f.ndim == 4 else f[None]  # a scalar field has one component
    out = {"min": jnp.min(f, axis=(1, 2, 3)), "max": jnp.max(f, axis=(1, 2, 3)), "mean": jnp.mean(f, axis=(1, 2, 3))}
    return {k: jax.lax.with_sharding_constraint(v, eq.fft.replicated_sharding()) for k, v in out.items()}
