"""Every figure of a run directory (:func:`plot_run`, ``simulator plot RUN_DIR``), and its slices and movie frames.

:func:`plot_run` draws the figures of every output kind through one loop over the output registry
(:mod:`simulator.output.kinds`), in its order, each kind's figure family called with one
:class:`FigureContext`; under ``RUN_DIR/plots/`` it writes:

* ``timeseries`` (the ``timeseries`` kind): ``timeseries.png`` and ``budget.png`` from ``timeseries.csv``
  (:mod:`simulator.plots.timeseries`; with a window, the running means of the equation's averaged columns and their
  means ± standard errors);
* ``spectra``: ``spectra.png``, ``spectra_<name>.png`` and ``flux.png`` from ``spectra.h5``
  (:mod:`simulator.plots.spectra`);
* ``snapshots``: ``slice.png`` from the last snapshot: a mid-plane of the equation's slice field beside, for a
  vector field, its component normal to the plane, for a scalar field its mean along the plane's normal, for
  a stacked field (passive scalars) its first members; ``slice_<field>.png`` for a field asked for by
  name, so that slices of several fields stand side by side, and for each of the equation's ``more_slices``
  the snapshots hold when none is asked for (:mod:`simulator.plots.slices`);
* ``statistics``: ``structure_functions.png``, ``pdfs.png`` and ``derivative_moments.png`` from
  ``statistics.h5`` when the run wrote one (:mod:`simulator.plots.statistics`);
* ``tasks``: ``task_<name>.png`` from ``tasks.h5`` for each user-defined output (``output.tasks``,
  :mod:`simulator.plots.tasks`);
* ``trajectories``: ``lagrangian.png`` from ``particles/trajectories.h5`` when the run wrote one
  (:mod:`simulator.plots.lagrangian`);
* ``profiles``: from ``profiles.h5`` of a run between plates, ``profiles.png`` for convection (the horizontally
  averaged temperature, rms velocity and heat flux against the wall-normal coordinate, the thermal boundary layers
  marked, :mod:`simulator.plots.profiles`)
  or ``channel_profiles.png`` for a channel (U+(y+) against the law of the wall and the Reynolds stresses in wall
  units, averaged over the window, :mod:`simulator.plots.channel`);
* a registered kind's own figures (its ``figures(run_dir, config, pdf)``) when its files are there;
* with ``frames``: ``frames/slice_NNNN.png`` (``frames/slice_<field>_NNNN.png``), that slice for every
  snapshot, with common colour limits.

The shipped kinds' figure families are declared here (:data:`FAMILIES`, by kind name), not on the kinds:
drawing sits above ``output/`` and reads the kinds' files through their readers, so a kind naming its figure
module would be an arrow back up (an import cycle in tests/test_architecture.py). A plug-in's module sits
above both and names its own (``OutputKind.figures``).

With a window asked for (``--window T0 [T1]``, :func:`~simulator.plots.when.run_window`), the time-averaged figures
state their numbers, one line each (:attr:`~simulator.plots.figures.Figures.numbers`), which ``simulator plot``
prints after the files.

A damaged file (not HDF5, cut short, not as the run writes it) skips only the figures drawn from it, in one
line naming it (:attr:`~simulator.plots.figures.Figures.skipped`); the others are drawn all the same.

Snapshots are read one plane at a time (:meth:`simulator.output.hdf5.Snapshot.read` with one integer
index), so a figure of a 2048^3 run needs memory for a plane, not for a field. Nothing here imports
JAX; an equation is known by its declaration only (times are labelled by its ``time_label``, e.g. as
redshifts, and axes carry the units it declares).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

from simulator import equations
from simulator.equations.spec import EquationInfo
from simulator.equations.stored import parameters_of
from simulator.errors import ConfigError
from simulator.output import kinds as output_kinds
from simulator.output.base import OutputKind
from simulator.output.hdf5 import IncompleteOutputError, Snapshot
from simulator.output.runconfig import CONFIG_FILE, load_run_config
from simulator.output.snapshots import snapshot_files
from simulator.plots.channel import plot_wall_units
from simulator.plots.figures import Figures, default_style, drawn_or_skipped, note
from simulator.plots.lagrangian import plot_lagrangian
from simulator.plots.profiles import plot_profiles
from simulator.plots.slices import AXES, plot_frames, plot_slice
from simulator.plots.spectra import plot_spectra
from simulator.plots.statistics import plot_statistics
from simulator.plots.tasks import plot_tasks
from simulator.plots.timeseries import plot_timeseries
from simulator.plots.when import requested_times, run_window

# ---- the slice asked for ---------------------------------------------------------------------------------


def slice_choice(run_dir: Path, info: EquationInfo, field: str | None, axis: str) -> tuple[str, int, str]:
    """(field, axis index, file stem) of the slice asked for: ``field`` (default: the equation's
    ``slice_field``, or the first of its ``slice_fallback`` the snapshots hold when they lack it, stem ``slice``;
    a field asked for by name gets its own stem ``slice_<field>``, so that the default field's ``slice.png`` is
    not overwritten) and ``axis`` (x, y or z). Raises ConfigError for an unknown axis, or a field the last
    readable snapshot does not hold (checked before anything is drawn)."""
    if axis not in AXES:
        raise ConfigError("--axis", axis, "choose x, y or z", "is not an axis")
    if info.dimensions == 2 and axis != "z":  # a plane's box (1, Nx, Ny): its one slice is normal to the one cell
        raise ConfigError("--axis", axis, "z (a plane has one slice, the plane itself)", "is not a plane's")
    stem = f"slice_{field}" if field else "slice"
    asked = field
    field = field or info.plot.slice_field
    fields = snapshot_fields(run_dir)
    if fields is not None:
        if asked is None and field not in fields:  # the run's structure left the default out
            field = next((f for f in info.plot.slice_fallback if f in fields), field)
        if field not in fields:
            raise ConfigError("--field", field, f"choose one of {', '.join(fields)}", "is not a field of the snapshots")
    return field, 0 if info.dimensions == 2 else AXES.index(axis), stem


def snapshot_fields(run_dir: Path) -> Sequence[str] | None:
    """The fields of the last readable snapshot (None: no snapshot can be read)."""
    for path in reversed(snapshot_files(run_dir)):
        try:
            with Snapshot(path) as snap:
                return list(snap.fields)
        except IncompleteOutputError:
            continue
    return None


def plot_slices(ctx: FigureContext) -> list[Path]:
    """The slice asked for and, where none was asked for by name, the equation's ``more_slices`` the snapshots hold,
    each in ``slice_<field>.png``."""
    out = plot_slice(ctx.run_dir, ctx.config, ctx.info, ctx.field, ctx.axis, ctx.pdf, ctx.stem)
    if ctx.stem == "slice":
        held = snapshot_fields(ctx.run_dir) or ()
        for name in ctx.info.plot.more_slices:
            if name in held and name != ctx.field:
                out += plot_slice(ctx.run_dir, ctx.config, ctx.info, name, ctx.axis, ctx.pdf, f"slice_{name}")
    return out


# ---- every output kind's figures -------------------------------------------------------------------------


@dataclass(frozen=True)
class FigureContext:
    """What every output kind's figures are drawn with, the same for each: the run directory, its
    ``config.yaml`` (a dict) and equation, the slice asked for (``field``, ``axis`` 0, 1 or 2, and the file
    ``stem``: :func:`slice_choice`), ``pdf`` (a PDF beside each PNG), ``times`` (the spectra's rows) and
    ``window`` = (t0, t1) (the time-averaged figures' window, :func:`~simulator.plots.when.run_window`; None: the
    second half of the run, and no line of numbers)."""

    run_dir: Path
    config: dict[str, Any]
    info: EquationInfo
    field: str
    axis: int
    stem: str
    pdf: bool = False
    times: Sequence[float] | None = None
    window: tuple[float, float] | None = None


@dataclass(frozen=True)
class Family:
    """The figures of one output kind: ``what`` names them in the line of a damaged file (formatted with
    ``ctx``, the :class:`FigureContext`), ``draw(ctx)`` writes them and returns their files (nothing, and a
    note where the run should have some, without them), as :class:`~simulator.plots.figures.Figures` where they
    state numbers (``numbers``: a time-averaged figure's, with a window)."""

    what: str
    draw: Callable[[FigureContext], list[Path]]


def both(first: Figures, second: Figures) -> Figures:
    """The files and lines of two figure groups in one."""
    return Figures([*first, *second], numbers=[*first.numbers, *second.numbers])


#: the figure families of the shipped output kinds, by kind name (see the module docstring for why here)
FAMILIES = {
    "timeseries": Family("the time series figures",
                         lambda c: plot_timeseries(c.run_dir, c.config, c.info, c.pdf, c.window)),
    "spectra": Family("the spectra figures",
                      lambda c: plot_spectra(c.run_dir, c.config, c.info, c.times, c.pdf, c.window)),
    "snapshots": Family("{ctx.stem}.png", plot_slices),
    "statistics": Family("the statistics figures",
                         lambda c: plot_statistics(c.run_dir, c.config, c.info, c.pdf, c.window)),
    "tasks": Family("the task figures", lambda c: plot_tasks(c.run_dir, c.config, c.info, c.pdf)),
    "trajectories": Family("the Lagrangian figure", lambda c: plot_lagrangian(c.run_dir, c.config, c.info, c.pdf)),
    "profiles": Family("the profiles figures",
                       lambda c: both(plot_profiles(c.run_dir, c.config, c.info, c.pdf, c.window),
                                      plot_wall_units(c.run_dir, c.config, c.info, c.pdf, c.window))),
}


def family(kind: OutputKind) -> Family | None:
    """How ``simulator plot`` draws ``kind``: by the ``figures(run_dir, config, pdf)`` it declares (a plug-in's),
    called when its files are in the run directory; else by :data:`FAMILIES`; None: it draws nothing."""
    if kind.figures is None:
        return FAMILIES.get(kind.name)

    def draw(ctx: FigureContext) -> list[Path]:
        return kind.call("figures", ctx.run_dir, ctx.config, ctx.pdf) if kind.wrote(ctx.run_dir) else []

    return Family(f"the {kind.name} figures", draw)


@default_style
def plot_run(run_dir: Path, *, times: Sequence[float] | None = None, field: str | None = None, axis: str = "z",
             frames: bool = False, pdf: bool = False, window: Sequence[float] | None = None,
             redshifts: Sequence[float] | None = None) -> Figures:
    """Every figure of a run directory (see the module docstring); returns the files written, with the
    lines of the figures skipped because a file is damaged (:class:`~simulator.plots.figures.Figures`).

    Reads ``config.yaml`` and the files of every output kind that draws figures. ``field`` (default: the
    equation's) and ``axis`` choose the slice; ``times`` (or a cosmological run's ``redshifts``) the spectra's rows,
    within them (:func:`~simulator.plots.when.requested_times`); ``window`` = (t0, t1) or (t0,) (t1 the run's end)
    the time window of the time-averaged figures: the compensated spectrum's mean, the structure functions and the
    PDFs, the profiles' mean (default: the second half of the run), and the time series' running means from t0 with
    their means ± standard errors (none by default); the result's ``numbers`` then holds one line per time-averaged
    figure stating them. The kinds are drawn in the registry's order, each with the same :class:`FigureContext`,
    then the frames.
    Raises ConfigError for a missing or foreign directory, an unknown axis or field, a window not within the run's
    times (:func:`~simulator.plots.when.run_window`), or a stored physics section that no longer validates
    (:func:`~simulator.equations.stored.parameters_of`).
    """
    config = load_run_config(run_dir, sweeps=True)
    info = equations.get(config["physics"]["name"])
    parameters_of(info, config, str(run_dir / CONFIG_FILE))  # its physics labels every figure: before any is written
    field, index, stem = slice_choice(run_dir, info, field, axis)
    window = run_window(run_dir, config, info, window)
    times = requested_times(run_dir, config, info, times, redshifts)
    ctx = FigureContext(run_dir, config, info, field, index, stem, pdf, times, window)
    families = [(drawn.what.format(ctx=ctx), run_dir / kind.files[0], partial(drawn.draw, ctx))
                for kind in output_kinds.registry().values() if kind.files and (drawn := family(kind)) is not None]
    if frames:
        families.append(("the frames", run_dir / "snapshots",
                         partial(plot_frames, run_dir, config, info, field, index, stem)))
    skipped: list[str] = []
    drawn = [drawn_or_skipped(what, source, draw, skipped) for what, source, draw in families]
    written = Figures([path for paths in drawn for path in paths], skipped,
                      [line for paths in drawn if isinstance(paths, Figures) for line in paths.numbers])
    if not written and not skipped:
        note(f"nothing to plot in {run_dir} yet")
    return written

