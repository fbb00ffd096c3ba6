"""The figures of the user-defined outputs (``output.tasks``), from ``tasks.h5`` (no JAX):
``plots/task_<name>.png`` for each task:

* a slice: its last row as an image over its two axes, each pixel centred on its grid point, on a
  diverging scale centred on 0 when the values change sign;
* a profile: its rows as an image against time and the coordinate along its axis (how the vertical
  profile of a stratified flow evolves); a single row as a curve;
* a box reduction (mean, rms, min, max, ...): a curve against time.

Groups a restart set aside (``<name>.until-<step>``) are not drawn; ``read_tasks`` returns them.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from simulator.equations.spec import EquationInfo
from simulator.output.tasks import ASIDE, FILE, TaskSeries, read_tasks
from simulator.plots.figures import MissingOutputError, figure, heading, physics_of, save, time_axis, time_label


def _extent(x: np.ndarray, y: np.ndarray) -> tuple[float, float, float, float]:
    """The imshow extent that centres pixel (i, j) on the grid point (x_i, y_j) (uniform spacing)."""
    dx, dy = x[1] - x[0], y[1] - y[0]
    return x[0] - dx / 2, x[-1] + dx / 2, y[0] - dy / 2, y[-1] + dy / 2


def _scale(values: np.ndarray) -> dict[str, Any]:
    """Colour map and limits: diverging and centred on 0 for values of both signs."""
    lo, hi = float(np.min(values)), float(np.max(values))
    if lo < 0 < hi:
        top = max(-lo, hi)
        return {"cmap": "RdBu_r", "vmin": -top, "vmax": top}
    return {"cmap": "viridis"}


def task_figure(task: TaskSeries, config: dict[str, Any], info: EquationInfo, length: str) -> Any:
    """The figure of one task (see the module docstring)."""
    fig, axes = figure()
    ax = axes[0, 0]
    label = f"{task.name} ({task.attrs.get('units', 'code units')})"
    when = time_label(config, info, float(task.time[-1]))
    if len(task.dims) == 2:
        (a, b), plane = task.dims, task.values[-1]
        image = ax.imshow(plane.T, origin="lower", extent=_extent(task.coords[a], task.coords[b]), **_scale(plane))
        ax.set_xlabel(f"{a} ({length})")
        ax.set_ylabel(f"{b} ({length})")
        fig.colorbar(image, ax=ax, label=label, shrink=0.85)
    elif len(task.dims) == 1 and len(task.time) > 1:
        (a,) = task.dims
        x, label_time = time_axis(config, info, task.time)  # t in its unit, or a cosmological run's redshift
        mesh = ax.pcolormesh(x, task.coords[a], task.values.T, shading="nearest", **_scale(task.values))
        label_time(ax)
        ax.set_ylabel(f"{a} ({length})")
        fig.colorbar(mesh, ax=ax, label=label, shrink=0.85)
        when = f"from {time_label(config, info, float(task.time[0]))} to {when}"
    elif len(task.dims) == 1:
        (a,) = task.dims
        ax.plot(task.values[-1], task.coords[a])
        ax.set_xlabel(label)
        ax.set_ylabel(f"{a} ({length})")
    else:
        x, label_time = time_axis(config, info, task.time)
        ax.plot(x, task.values, marker="." if len(task.time) < 50 else None)
        label_time(ax)
        ax.set_ylabel(label)
    ax.set_title(f"{heading(config, when)}\n{task.attrs.get('long_name', task.name)}", fontsize="medium")
    return fig


def task_figures(run_dir: Path, config: dict[str, Any], info: EquationInfo) -> dict[str, Callable[[], Any]]:
    """``task_<name>`` (the stem of its file under ``plots/``) for every task with a row in ``tasks.h5``,
    each built when called; MissingOutputError without the file."""
    path = run_dir / FILE
    if not path.is_file():
        raise MissingOutputError(f"no {path}; give output.tasks")
    length = physics_of(config, info).clock().units().get("length", "code units")
    return {f"task_{name}": partial(task_figure, task, config, info, length) for name, task in read_tasks(path).items()
            if ASIDE not in name and len(task.time)}


def plot_tasks(run_dir: Path, config: dict[str, Any], info: EquationInfo, pdf: bool) -> list[Path]:
    """``plots/task_<name>.png`` for every task with a row in ``RUN_DIR/tasks.h5``; [] without the file."""
    if not (run_dir / FILE).is_file():
        return []
    return [path for stem, build in task_figures(run_dir, config, info).items()
            for path in save(build(), run_dir / "plots" / f"{stem}.png", pdf)]
