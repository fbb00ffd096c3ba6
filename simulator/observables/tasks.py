"""User-defined outputs (``output.tasks``, :mod:`simulator.output.task_entries`): reductions of the equation's
real-space fields, computed distributed at output cadence (JAX); ``tasks.h5`` is
:mod:`simulator.output.tasks`.

Each task takes one field of ``eq.fields`` (velocity, vorticity, scalar, buoyancy, density, ...), one
component of it (or the magnitude |v| of a vector), and reduces it:

* ``slice``: the plane normal to ``axis`` at grid index ``index``: ``(N_a, N_b)`` over the other two axes
  in order (normal to z: ``(Nx, Ny)``; normal to y: ``(Nx, Nz)``);
* ``profile``: the mean over the other two axes, ``(N_axis,)`` (the vertical profile of a stratified flow);
* ``mean``, ``mean_square``, ``rms``, ``min``, ``max``: over the box, one number.

Layout: the fields are real-space arrays in the FFT backend's real layout, sharded along one or two of
x, y, z (slab: y; pencil and jaxdecomp: x and y); vectors and stacks ``(n, Nx, Ny, Nz)`` with the
leading axis whole on every device. Every reduction is a jnp reduction of the sharded field inside one
jit, which XLA completes with an all-reduce of what each device reduced. A slice is the sum along its
normal of the field masked to its plane (exact: every other term is zero), so a plane normal to a
sharded axis costs an all-reduce of one plane where indexing it would move the field; the results are
constrained replicated: small (a plane, a line or a number), a plane sharded over its own axes gathered
as that plane alone. No 3D array is gathered (tests/test_tasks.py checks the compiled HLO).

All tasks of a run are one program, evaluated whenever any of them is due (the writers of one chunk end
share it through :meth:`simulator.output.base.Moment.shared`): the fields the tasks read (XLA drops the
others, e.g. the vorticity when only the velocity is asked for) and their reductions, a few inverse
FFTs, small beside a chunk of steps. One compilation per run, which the planner counts.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp


@dataclass(frozen=True)
class Task:
    """The static structure of one task (hashable: part of the compiled program). ``component``: the
    index along a vector's or stack's leading axis, None for a scalar field or the magnitude;
    ``axis``: 0, 1, 2 for a slice or profile, else None; ``index``: a slice's plane."""

    name: str
    field: str
    component: int | None
    magnitude: bool
    reduce: str
    axis: int | None
    index: int | None

    @classmethod
    def of(cls, entry: Any, cells: tuple[int, int, int], walled: bool = False) -> Task:
        """A resolved ``output.tasks`` entry (:class:`simulator.output.task_entries.TaskOutput`: axis and index
        filled in by the config) on the box ``cells`` (a plane's ``(1, Nx, Ny)``, whose x and y are its axes 1 and
        2; between plates, ``walled``, its x and z)."""
        component, axis = entry.indices(cells, walled)
        return cls(entry.name, entry.field, component, entry.component == "magnitude", entry.reduce, axis,
                   entry.index)


def layout_of(cfg: Any) -> tuple[Task, ...]:
    """The tasks of a run of ``cfg`` (its resolved ``output.tasks``)."""
    return tuple(Task.of(entry, cfg.grid.cells, cfg.grid.walls.on) for entry in cfg.output.section("tasks"))


def reduce(f: jax.Array, task: Task) -> jax.Array:
    """``task``'s reduction of the real-space scalar field ``f`` ``(Nx, Ny, Nz)`` (sharded as the
    backend's real layout): a plane, a profile or a number (see the module docstring)."""
    if task.reduce == "slice":
        plane = jax.lax.broadcasted_iota(jnp.int32, f.shape, task.axis) == task.index
        return jnp.sum(jnp.where(plane, f, jnp.zeros((), f.dtype)), axis=task.axis)
    if task.reduce == "profile":
        return jnp.mean(f, axis=tuple(a for a in range(3) if a != task.axis))
    if task.reduce == "mean":
        return jnp.mean(f)
    if task.reduce == "mean_square":
        return jnp.mean(f * f)
    if task.reduce == "rms":
        return jnp.sqrt(jnp.mean(f * f))
    if task.reduce == "min":
        return jnp.min(f)
    if task.reduce == "max":
        return jnp.max(f)
    raise ValueError(f"unknown reduction {task.reduce!r}")


def evaluate(eq: Any, state: Any, params: Mapping[str, Any], tasks: tuple[Task, ...]) -> dict[str, jax.Array]:
    """Every task's values by name, replicated on the mesh (inside jit: only the fields named are computed)."""
    fields = eq.fields(state, params)
    replicated = eq.fft.replicated_sharding()
    out = {}
    for task in tasks:
        f = fields[task.field]
        if task.magnitude:
            f = jnp.sqrt(jnp.sum(f * f, axis=0))
        elif task.component is not None:
            f = f[task.component]
        out[task.name] = jax.lax.with_sharding_constraint(reduce(f, task), replicated)
    return out


def program(sim: Any, eq: Any, state: Any, params: Mapping[str, Any], t: Any, dt: Any) -> dict[str, jax.Array]:
    """The ``tasks`` output kind's device program (:mod:`simulator.output.tasks`): :func:`evaluate` of the
    equation at run time t (see :meth:`simulator.equations.base.Equation.at`) for the run's tasks."""
    return evaluate(eq.at(t), state, params, layout_of(sim.cfg))
