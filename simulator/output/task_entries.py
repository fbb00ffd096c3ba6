"""User-defined outputs: the ``output.tasks`` entries, their checks and the defaults they resolve (no JAX):
the config section of the ``tasks`` output kind (:mod:`simulator.output.tasks`), beside it.

A task (as in Dedalus's ``add_task`` or FluidSim's outputs) names one of the equation's real-space
output fields, a component of it, a reduction and a schedule::

    output:
      tasks:
        - {name: b_profile, field: buoyancy, reduce: profile, axis: z, every: 20}
        - {name: w_mid, field: velocity, component: z, reduce: slice, axis: z, dt: 0.5}
        - {name: ke_max, field: velocity, component: magnitude, reduce: max, every: 10}

The fields are those of the equation's ``fields`` declaration this run has (complex ones, such as
Schrodinger-Poisson's psi, are left out; ``scalar`` exists with passive scalars only). The
computation is :mod:`simulator.observables.tasks`, the file :mod:`simulator.output.tasks`. Every problem is a
one-line :class:`~simulator.errors.ConfigError` naming ``output.tasks[i].<key>``, before a run starts.

On a plane (``grid.shape: [Nx, Ny]``, run as the box ``(1, Nx, Ny)``: :mod:`simulator.fft.plane`) the axes are the
plane's own, as in every other output: ``x`` and ``y`` in the plane and ``z`` normal to it (the box's one-cell axis,
named by :func:`simulator.fft.plane.axis_names`): a slice normal to z is the whole plane, normal to x or y a line
of it, and a profile along x or y is the mean over the plane's other axis. Between plates (``grid.walls``) a plane is
an x-z plane, as its snapshots name it: ``x`` along the plates, ``z`` across them and ``y`` its normal
(:data:`simulator.fft.plane.WALLED_AXES`), its velocity's components ``x`` and ``z``: a profile along z is the
profile across the plates, a slice normal to y the plane.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulator.equations.spec import FieldInfo
from simulator.errors import ConfigError
from simulator.fft.plane import FILE_ORDER, axis_names, holds_plane
from simulator.output.base import Scheduled
from simulator.schema import setting

AXES = ("x", "y", "z")
#: the reductions: a plane, a line along an axis, or one number over the box
REDUCTIONS = ("slice", "profile", "mean", "mean_square", "rms", "min", "max")
#: reductions that take ``axis`` (and, for a slice, ``index``)
ALONG_AXIS = ("slice", "profile")
#: a vector field's components, by name; ``magnitude`` is |v|
COMPONENTS = ("x", "y", "z", "magnitude")
#: names a task may not take: they name the coordinates of its group in tasks.h5
RESERVED = ("time", "step", *AXES)


@dataclass(frozen=True)
class TaskDefinition:
    """What a user-defined output computes (:func:`definition`): the keys of an ``output.tasks`` entry before
    its schedule."""

    name: str = setting("", "name of the task: a plain word (letters, digits, _), unique; it names the task's group "
                        "and dataset in tasks.h5")
    field: str = setting("", "one of the equation's real-space fields, those its snapshots hold (e.g. velocity, "
                         "vorticity, scalar, buoyancy, magnetic, current, density, potential); a wrong one is refused "
                         "with the list")
    component: str | int | None = setting(None, "x, y, z or magnitude (|v|) of a vector field; an index 0..n-1 of a "
                                          "stacked field (scalar: one per physics.scalars entry); null for a scalar "
                                          "field")
    reduce: str = setting("slice", "slice (the plane normal to axis at index), profile (the mean over the other two "
                          "axes against the coordinate along axis), mean, mean_square, rms, min or max (over the box)",
                          choices=REDUCTIONS)
    axis: str | None = setting(None, "the normal of a slice, the coordinate of a profile; null = z. On a plane x "
                               "and y are the plane's and z its normal: a slice normal to z is the plane, one normal "
                               "to x or y a line of it; between plates a plane is x-z, y its normal", choices=AXES)
    index: int | None = setting(None, "grid index of a slice's plane along axis (0..N-1); null = the middle plane "
                                "N/2 (on a plane, normal to z: 0)", min=0)

    def indices(self, cells: tuple[int, int, int], walled: bool = False) -> tuple[int | None, int | None]:
        """What the device program takes (:class:`simulator.observables.tasks.Task`) on the box ``cells`` (the
        grid's, a plane's ``(1, Nx, Ny)``; ``walled``: between plates): the component as an index along a vector's
        or stack's leading axis (None: a scalar field or the magnitude; :func:`component_index`), the axis as the
        box's 0, 1 or 2 (:func:`box_axis`; None: a reduction over the box)."""
        c = self.component
        component = component_index(c, cells, walled) if c in AXES else c if isinstance(c, int) else None
        return component, None if self.axis is None else box_axis(self.axis, cells, walled)


def box_axis(axis: str, cells: tuple[int, int, int], walled: bool = False) -> int:
    """The box axis of the box ``cells`` that a task's ``axis`` (x, y or z) names: a box's x, y, z are its 0, 1, 2;
    a plane's (``(1, Nx, Ny)``) x and y its 1 and 2, z its one-cell 0; a plane's between plates (``walled``) x and
    z its 1 and 2, y its one-cell 0."""
    return axis_names(cells, walled).index(axis)


def component_index(component: str, cells: tuple[int, int, int], walled: bool = False) -> int:
    """The index along a vector's leading axis of its ``component`` (x, y or z) on the box ``cells``: a box's and
    a plane's vectors are (x, y, z), a plane's ``(u, v, 0)``; a plane's between plates (``walled``) ``(u, w, 0)``,
    (x, z, y)."""
    names = axis_names(cells, walled)
    return [names[i] for i in FILE_ORDER].index(component) if holds_plane(cells) else names.index(component)


@dataclass(frozen=True)
class TaskOutput(Scheduled, TaskDefinition):
    """One user-defined output: an entry of ``output.tasks``, what it computes and then when (the schedule keys)."""


def task_list() -> Any:
    """The ``output.tasks`` field of the run config: a list of :class:`TaskOutput`, empty by default."""
    return setting((), "user-defined outputs written to tasks.h5, one section each, e.g. [{name: w_mid, field: "
                   "velocity, component: z, reduce: slice, dt: 0.5}]; [] = none")


def fields_of(cfg: Any) -> dict[str, FieldInfo]:
    """The real-space fields a run of ``cfg`` has, by name: the equation's declaration that its parameters keep
    (a run without a wave has no density of it), without complex fields, a stacked field holding one
    component per configured entry (the passive scalars' ``scalar``, the only stacked field, one per
    ``physics.scalars`` entry; absent without any)."""
    from simulator.equations import registry, scalars

    fields = {n: f for n, f in cfg.physics.present_fields(registry()[cfg.physics.name].fields).items()
              if not f.complex}
    if any(f.stacked for f in fields.values()):
        fields = scalars.field_info(fields, len(getattr(cfg.physics, "scalars", ())))
    return fields


def check(cfg: Any) -> None:
    """Each entry of ``cfg.output.tasks`` against the equation, the grid and the chunk (one-line errors)."""
    fields = fields_of(cfg)
    seen: set[str] = set()
    for i, task in enumerate(cfg.output.section("tasks")):
        key = f"output.tasks[{i}]"
        if not task.name.isidentifier():
            raise ConfigError(f"{key}.name", task.name, "give a plain word (letters, digits, _; not starting with a "
                              "digit): it names the task's group in tasks.h5", "is not a name")
        if task.name in RESERVED:
            raise ConfigError(f"{key}.name", task.name, f"give another name: {', '.join(RESERVED)} name the "
                              "coordinates in tasks.h5", "is reserved")
        if task.name in seen:
            raise ConfigError(f"{key}.name", task.name, "give each task its own name", "repeats")
        seen.add(task.name)
        if task.field not in fields:
            raise ConfigError(f"{key}.field", task.field, f"for physics.name = {cfg.physics.name} use one of: "
                              f"{', '.join(fields)}", "is not a field of this run")
        _check_component(f"{key}.component", task, fields[task.field])
        _check_axis(key, task, cfg.grid)
        if not task.on:
            raise ConfigError(key, task.name, "give it a schedule: every, dt, wall, times or at_end",
                              "is never written")
        if task.every % cfg.output.chunk:
            raise ConfigError(f"{key}.every", task.every, f"must be a multiple of output.chunk = {cfg.output.chunk} "
                              "(0 = none)", "does not fall on a chunk boundary")


def _check_component(key: str, task: TaskOutput, info: FieldInfo) -> None:
    c = task.component
    if info.components == 0:
        if c is not None:
            raise ConfigError(key, c, f"{task.field} is a scalar field: leave component out (null)",
                              "is given for a field without components")
    elif info.stacked:
        if not (isinstance(c, int) and 0 <= c < info.components):
            raise ConfigError(key, c, f"{task.field} is a stack of {info.components} field(s): give an index 0.."
                              f"{info.components - 1}", "is missing" if c is None else "is out of range")
    elif c not in COMPONENTS:
        raise ConfigError(key, c, f"{task.field} is a vector field: use one of: {', '.join(COMPONENTS)}",
                          "is missing" if c is None else "is unknown")


def _check_axis(key: str, task: TaskOutput, grid: Any) -> None:
    if task.reduce not in ALONG_AXIS:
        for name in ("axis", "index"):
            if getattr(task, name) is not None:
                raise ConfigError(f"{key}.{name}", getattr(task, name), f"only a slice or a profile takes {name}: "
                                  "leave it out (null)", f"would be ignored by reduce = {task.reduce}")
        return
    if task.reduce == "profile" and task.index is not None:
        raise ConfigError(f"{key}.index", task.index, "a profile averages every plane: leave index out (null)",
                          "would be ignored by reduce = profile")
    n = grid.cells[box_axis(task.axis or "z", grid.cells, grid.walls.on)]
    if task.index is not None and task.index >= n:
        along = f"along {task.axis or 'z'}" + (", normal to the plane" if grid.plane and n == 1 else "")
        raise ConfigError(f"{key}.index", task.index, f"give a grid index 0..{n - 1} {along} (grid.shape "
                          f"{list(grid.shape)})", "is out of range")


def resolve(cfg: Any) -> tuple[TaskOutput, ...]:
    """The entries with their defaults filled in (a slice's or profile's axis z, a slice's index N/2),
    after checking their times against ``time.t_end`` (the resolved config records what is computed)."""
    out = []
    for i, task in enumerate(cfg.output.section("tasks")):
        late = [t for t in task.times or () if t > cfg.time.t_end * (1 + 1e-12)]
        if late:
            raise ConfigError(f"output.tasks[{i}].times", list(task.times), f"every time must be <= time.t_end = "
                              f"{cfg.time.t_end:.12g}", f"holds {late[0]:.12g}, which the run never reaches")
        if task.reduce in ALONG_AXIS:
            axis = task.axis or "z"
            index = task.index if task.reduce == "slice" and task.index is not None else None
            if task.reduce == "slice" and index is None:
                index = cfg.grid.cells[box_axis(axis, cfg.grid.cells, cfg.grid.walls.on)] // 2
            task = dataclasses.replace(task, axis=axis, index=index)
        out.append(task)
    return tuple(out)


def definition(task: TaskOutput, shape: tuple[int, ...]) -> dict[str, Any]:
    """What a resolved task computes (not when): a restart whose task of the same name computes
    something else starts a new table for it (:mod:`simulator.output.tasks`)."""
    return {"field": task.field, "component": task.component, "reduce": task.reduce, "axis": task.axis,
            "index": task.index, "shape": [int(n) for n in shape]}


def units_of(task: TaskOutput, units: Mapping[str, str]) -> str:
    """The units of a task's values: its field's in the run's unit system (``units``: the clock's), code
    units when it names none; a mean square's squared."""
    unit = units.get(task.field, "code units")
    return f"({unit})^2" if task.reduce == "mean_square" and unit != "code units" else unit
