"""Differentiable runs: a fixed number of time steps as a pure function of (parameters, initial state)
that ``jax.grad``, ``jax.vjp``, ``jax.jvp`` and ``jax.jacfwd`` go through, with bounded memory.

:func:`rollout` runs ``steps`` steps of the equation's scheme and records the diagnostics every
``every`` steps. Every transform it calls is the FFT backends' linear primitive
(:mod:`simulator.fft.linear`), so reverse mode costs what the forward pass costs in communication,
on any backend and any number of devices or processes. Public as ``Simulation.rollout``; this
module's function takes the equation as an argument, for your own ``jax.jit`` (a multi-process
program may not close over arrays that span other processes' devices).

Memory: reverse mode needs the forward states back in reverse order. Storing every step's
intermediates costs ``steps x`` (a step's temporaries, about ten states for RK4). Here the run is
cut into segments of ``checkpoint_every`` steps; the scan over segments keeps only each segment's
input state, and during the backward pass one segment at a time is recomputed, keeping each of its
steps' input state (the step itself is checkpointed too, so its temporaries exist for one step at a
time). The peak is then about ``steps / c + c`` states plus one step's temporaries, minimal at
``c ~ sqrt(steps)`` (the default): the two-level checkpointing of Griewank & Walther, "Evaluating
Derivatives" (2008), ch. 12, at the price of one extra forward pass. Measured figures are in the
tutorial docs/tutorials/gradients.ipynb.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax import lax


class Rollout(NamedTuple):
    """What :func:`rollout` returns: the final state (the equation's state pytree, layouts as
    :meth:`Simulation.advance` returns them) and ``history``, each recorded diagnostic by name as a
    ``(steps // every,)`` array: its value after ``every``, ``2 every``, ... ``steps`` steps."""

    state: Any
    history: dict[str, jax.Array]


def segment_length(steps: int, every: int, checkpoint_every: int | None) -> int:
    """Steps per checkpointed segment: ``checkpoint_every`` (a multiple of ``every``) or, by default,
    the multiple of ``every`` nearest ``sqrt(steps)``, which minimises ``steps / c + c``."""
    if steps < 1 or every < 1 or steps % every:
        raise ValueError(f"steps = {steps} must be a positive multiple of every = {every}")
    if checkpoint_every is None:
        return every * max(1, round(math.sqrt(steps) / every))
    if checkpoint_every < every or checkpoint_every % every:
        raise ValueError(f"checkpoint_every = {checkpoint_every} must be a positive multiple of every = {every}")
    return checkpoint_every


def rollout(eq: Any, make_step: Callable[[Any], Callable], params: dict[str, jax.Array], state: Any, t: jax.Array,
            dt: jax.Array, *, steps: int, every: int = 1, checkpoint_every: int | None = None,
            diagnostics: Sequence[str] | None = None) -> Rollout:
    """``steps`` steps of ``make_step(eq)`` from ``state`` at time ``t`` with step ``dt``, recording
    ``eq.diagnostics`` (those named in ``diagnostics``, default all) every ``every`` steps.

    Pure and differentiable in ``params``, ``state``, ``t`` and ``dt``; ``steps``, ``every`` and
    ``checkpoint_every`` shape the program (static). Memory of a gradient: see the module docstring.
    """
    per_segment = segment_length(steps, every, checkpoint_every) // every
    records = steps // every
    # prevent_cse=False: inside a scan the checkpointed bodies cannot be merged with the forward pass
    step = jax.checkpoint(make_step(eq), prevent_cse=False)

    def interval(carry: tuple[Any, jax.Array], _: Any) -> tuple[tuple[Any, jax.Array], dict[str, jax.Array]]:
        def one(c: tuple[Any, jax.Array], _: Any) -> tuple[tuple[Any, jax.Array], None]:
            s, time = c
            return (step(s, time, dt, params), time + dt), None

        carry = lax.scan(one, carry, None, length=every)[0]
        values = eq.at(carry[1]).diagnostics(carry[0], dt, params)  # at the run time (Equation.at)
        return carry, {k: values[k] for k in (values if diagnostics is None else diagnostics)}

    def segment(length: int) -> Callable:
        return jax.checkpoint(lambda carry: lax.scan(interval, carry, None, length=length), prevent_cse=False)

    full, rest = divmod(records, per_segment)
    carry = (state, jnp.asarray(t, jnp.result_type(dt)))
    pieces = []
    if full:
        carry, hist = lax.scan(lambda c, _: segment(per_segment)(c), carry, None, length=full)
        pieces.append(jax.tree.map(lambda h: h.reshape(full * per_segment), hist))
    if rest:
        carry, hist = segment(rest)(carry)
        pieces.append(hist)
    history = pieces[0] if len(pieces) == 1 else jax.tree.map(lambda *h: jnp.concatenate(h), *pieces)
    return Rollout(carry[0], history)
