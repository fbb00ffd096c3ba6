"""An ensemble's batched programs (:mod:`simulator.run.ensemble`): the shardings of the stacked state and
the jitted programs over members, which the batch's memory fit check compiles with abstract arrays before
any member's directory is written (:func:`simulator.planning.admission.check_ensemble`).
"""

from __future__ import annotations

import functools
from typing import Any

import jax

from simulator.output import kinds
from simulator.run.simulation import Simulation


def stacked_shardings(sim: Simulation, state: Any) -> Any:
    """The shardings of ``state``'s leaves stacked along a leading member axis (unsharded: every device
    holds its blocks of every member; particle arrays ``(K, Np, 3)`` whole on every device)."""
    fft = sim.fft
    leaves, treedef = jax.tree.flatten(state)
    stacked = [fft.replicated_sharding() if s == "particles"
               else (fft.spectral_sharding if s == "spectral" else fft.real_sharding)(a.ndim - 2)
               for a, s in zip(leaves, sim.equation.leaf_spaces(state), strict=True)]
    return jax.tree.unflatten(treedef, stacked)


def batched_programs(sim: Simulation, shardings: Any, adaptive: bool) -> dict[str, Any]:
    """The ensemble's programs, jitted (compiled on first call, or lowered by the fit check): ``chunk``
    (``jax.vmap`` over members of :meth:`Simulation.chunk`, or of :meth:`Simulation.adaptive_chunk` when a
    member adapts its dt; the stacked state donated), and the device programs of the ``records`` output kinds
    the run writes (:func:`simulator.output.kinds.computed`: the diagnostics, the spectra), ``jax.vmap``
    over members of each, ``(equation, states, params, t, dt)`` (each member at its own run time and step)."""
    if adaptive:
        r = sim.fft.replicated_sharding()
        chunk = jax.jit(jax.vmap(sim.adaptive_chunk, in_axes=(None, 0, 0, 0, 0, 0, 0, 0)),
                        out_shardings=(shardings, r, r, r, r), donate_argnums=(1,), compiler_options=sim.chunk_options)
    else:
        chunk = jax.jit(jax.vmap(sim.chunk, in_axes=(None, 0, 0, 0, 0, 0)), out_shardings=shardings,
                        donate_argnums=(1,), compiler_options=sim.chunk_options)
    batched = {p.name: jax.jit(jax.vmap(functools.partial(p.load(), sim), in_axes=(None, 0, 0, 0, 0)),
                               compiler_options=sim.compiler_options) for p in kinds.computed(sim.cfg, "records")}
    return {"chunk": chunk, **batched}
