"""The slice figures of a run's snapshots (no JAX): ``slice.png`` (:func:`plot_slice`, from the last complete
snapshot) and the movie frames (:func:`frame_builders`; :func:`plot_frames` writes them as PNGs,
:mod:`simulator.plots.movie` as a movie), each a mid-plane of one field beside, for a vector field,
its component normal to the plane, for a scalar field its mean along that normal, for a stacked field (passive
scalars) its first members (:func:`slice_panels`). Particles near the plane are drawn over the first panel
(:mod:`simulator.plots.particle_overlay`).

On a log colour scale a cell holding nothing (a particle density's empty cell) has no logarithm: the colour
limits are the filled cells' and an empty cell is drawn in the colour bar's lowest colour, below its range (the
bar's triangle at that end), not left blank, so that it never reads as a white hole in the image.

Snapshots are read one plane at a time (:meth:`simulator.output.hdf5.Snapshot.read` with one integer index), so
a figure of a 2048^3 run needs memory for a plane, not for a field.
"""

from __future__ import annotations

import textwrap
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np
from matplotlib.colors import Colormap
from matplotlib.figure import Figure

from simulator.equations.spec import EquationInfo, FieldInfo
from simulator.errors import reading
from simulator.fft import plane as planes
from simulator.fft.bases import Fourier
from simulator.output.hdf5 import IncompleteOutputError, Snapshot
from simulator.output.snapshots import lengths, names, snapshot_files
from simulator.output.timeseries import FILE as TIMESERIES_FILE, read_timeseries
from simulator.plots.figures import MissingOutputError, figure, note, save, snapshot_heading, unit
from simulator.plots.particle_overlay import overlay

#: the axes by index
AXES = "xyz"
#: members of a stacked field shown in a slice figure
STACKED_PANELS = 3
#: a panel's values take both signs when the smaller side reaches this fraction of the larger
SIGNED = 1e-6


@dataclass(frozen=True)
class Panel:
    """One image of a slice figure: ``data[i, j]`` with i along the horizontal axis, and its labels;
    ``symmetric``: colour limits symmetric about 0 where the values take both signs (a signed component on a
    diverging map; a field of one sign, a temperature in [0, 1], keeps its own range); ``log``: ``data`` is
    log10 of the values, NaN where a cell held nothing (drawn in the lowest colour: :func:`floored`)."""

    title: str
    label: str
    cmap: str
    data: np.ndarray
    symmetric: bool = False
    log: bool = False


def _shown(style: FieldInfo, values: np.ndarray, vector: bool) -> np.ndarray:
    """What a panel shows of some values: the magnitude of a vector field, log10 where the field asks. There a
    cell holding nothing (a particle density's empty cell) has no value (NaN), drawn in the lowest colour
    (:func:`floored`): floored at the log of the smallest double, -308, it set the colour bar's lower end and
    drew every filled cell in one colour."""
    values = values.astype(np.float64)
    if vector:
        values = np.sqrt(np.sum(values**2, axis=0))
    if style.log:
        with np.errstate(divide="ignore", invalid="ignore"):
            values = np.where(values > 0, np.log10(values), np.nan)
    return values


def project(snap: Snapshot, field: str, axis: int) -> np.ndarray:
    """The mean of scalar ``field`` along ``axis``, read one plane at a time.

    Planes normal to the axis stored slowest (z in snapshots, x in those of schema 1), not to ``axis``:
    such a plane is contiguous in each shard file, so the field is read sequentially, whichever axis is
    averaged.
    """
    shape = snap.shape(field)
    outer = snap.slowest_axis(field)
    kept = [a for a in range(3) if a != axis]  # the axes of the result
    in_plane = [a for a in range(3) if a != outer]  # the axes of a plane
    out = np.zeros([shape[a] for a in kept])
    for i in range(shape[outer]):
        index: list[Any] = [slice(None)] * 3
        index[outer] = i
        plane = snap.read(field, tuple(index))
        if outer == axis:
            out += plane / shape[axis]
        else:
            at: list[Any] = [slice(None)] * 2
            at[kept.index(outer)] = i
            out[tuple(at)] = plane.mean(axis=in_plane.index(axis))
    return out


def axis_names(snap: Snapshot) -> str:
    """The names of a snapshot's three axes: x, y, z, or a plane's z, x, y (its box ``(1, Nx, Ny)``), a walled
    plane's y, x, z (its box ``(1, Nx, Nz)``), as the file names them."""
    return names(snap)


def slice_panels(snap: Snapshot, field: str, axis: int, info: EquationInfo, length: str = "code units") -> list[Panel]:
    """The two images of one snapshot, side by side on the canvas: the mid-plane normal to ``axis`` of
    ``field`` (one plane read, all components of a vector field), then for a vector field the signed
    component normal to that plane (from the same plane), for a scalar field its mean along ``axis``.
    Colour bars carry the field's declared units (``FieldInfo.units``); the plane's position is in
    ``length`` units (so a spatial z never reads as a redshift z)."""
    shape = snap.shape(field)
    vector = len(shape) == 4
    middle = shape[-3 + axis] // 2
    index: list[Any] = [slice(None)] * len(shape)
    index[len(shape) - 3 + axis] = middle
    style = info.fields.get(field, FieldInfo(3 if vector else 0, field, field))
    symbol = style.symbol or field
    label = rf"$\log_{{10}} {symbol}$" if style.log else f"${symbol}$"
    unit = f" [${style.units}$]" if style.units else ""
    where = middle * float(lengths(snap)[axis]) / shape[-3 + axis]
    plane = snap.read(field, tuple(index))
    if planes.holds_plane(shape):  # a plane: the field itself (a vector's magnitude), each member of a stack
        members = range(min(shape[0], STACKED_PANELS)) if vector and style.stacked else [None]
        return [Panel(field if i is None else f"{field} {i}",
                      (label if i is None else label.replace(symbol, f"{symbol}_{i}")) + unit, style.cmap,
                      _shown(style, plane if i is None else plane[i], vector and i is None),
                      symmetric=style.cmap == "RdBu_r", log=style.log) for i in members]
    if vector and style.stacked:  # n scalar fields: the first few, each its own panel
        return [Panel(f"{field} {i}, mid-plane at {AXES[axis]}-coordinate {where:.3g} {length}",
                      label.replace(symbol, f"{symbol}_{i}") + unit,
                      style.cmap, _shown(style, plane[i], False), symmetric=True, log=style.log)
                for i in range(min(shape[0], STACKED_PANELS))]
    panels = [Panel(f"{field}, mid-plane at {AXES[axis]}-coordinate {where:.3g} {length}", label + unit, style.cmap,
                    _shown(style, plane, vector), log=style.log)]
    if vector:
        name = symbol.strip("|").strip() if symbol.startswith("|") else symbol
        panels.append(Panel(f"{field} {AXES[axis]} component, same plane", f"${name}_{AXES[axis]}$" + unit, "RdBu_r",
                            plane[axis].astype(np.float64), symmetric=True))
    else:
        mean = rf"\langle {symbol}\rangle_{AXES[axis]}"
        shown = rf"$\log_{{10}} {mean}$" if style.log else f"${mean}$"
        panels.append(Panel(f"{field} averaged along {AXES[axis]}", shown + unit, style.cmap,
                            _shown(style, project(snap, field, axis), False), log=style.log))
    return panels


def _limits(panels: Sequence[Panel]) -> list[tuple[float, float]]:
    """Colour limits of each panel: its finite range (symmetric about 0 where the panel asks and its values take
    both signs: a temperature between 0 and 1 drawn on -1..1 left half the colour bar unused), widened when the
    panel is uniform."""
    out = []
    for panel in panels:
        finite = panel.data[np.isfinite(panel.data)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
        # both signs beyond round-off (a temperature's -1e-19 at a plate is 0): a plate's value is exact, not signed
        if panel.symmetric and min(-lo, hi) > SIGNED * max(-lo, hi):
            lo, hi = -max(abs(lo), abs(hi)), max(abs(lo), abs(hi))
        out.append((lo, hi) if hi > lo else (lo - 0.5, hi + 0.5))
    return out


def cell_extent(box: Sequence[float], shape: Sequence[int], across: int, up: int) -> tuple[float, float, float, float]:
    """The imshow extent that centres pixel (i, j) on its grid point (i dx, j dy): each pixel covers
    [i dx - dx/2, i dx + dx/2], so the image spans [-dx/2, L - dx/2] along each axis."""
    dx, dy = box[across] / shape[0], box[up] / shape[1]
    return (-dx / 2, box[across] - dx / 2, -dy / 2, box[up] - dy / 2)


def plate_edges(heights: np.ndarray, length: float) -> np.ndarray:
    """The cell edges of the points ``heights`` ``(N,)`` between plates at 0 and ``length``: the plates, and the
    midpoints between neighbours, ``(N + 1,)``, so each pixel is drawn around its own point (a free-slip grid's
    cells are its cells; a Gauss-Lobatto grid's crowd at the plates)."""
    return np.concatenate([[0.0], 0.5 * (heights[1:] + heights[:-1]), [length]])


def plate_heights(snap: Snapshot) -> np.ndarray | None:
    """The points a snapshot holds along the box's last axis where its basis's points are not a periodic grid's
    ``i L / N`` (:class:`simulator.fft.bases.Fourier`): the heights across plates (cell centres of the sine and cosine
    series, Gauss-Lobatto points of the Chebyshev basis), ``(N,)``; None where they are."""
    name = axis_names(snap)[2]
    if name not in snap.file:  # the first format stored no coordinates, and held periodic boxes only
        return None
    points, length = np.asarray(snap.file[name][...], float), lengths(snap)[2]
    regular = Fourier(points.size, length).points()
    return None if np.allclose(points, regular, rtol=0.0, atol=1e-12 * length) else points


def floored(name: str) -> Colormap:
    """The colour map ``name`` with the cells that have no value (NaN: a particle density's empty cell on a log
    scale) and those below its range in its lowest colour: empty is below the least filled cell, and a blank
    (white) cell read as a hole in the image."""
    cmap = matplotlib.colormaps[name]
    return cmap.with_extremes(bad=cmap(0.0), under=cmap(0.0))


def slice_figure(panels: Sequence[Panel], limits: Sequence[tuple[float, float]], box: Sequence[float],
                 axis: int, heading: str, length: str = "code units", names: str = AXES,
                 heights: np.ndarray | None = None) -> Figure:
    """The slice figure: panels side by side, axes in ``length`` units (named by ``names``: :func:`axis_names`), a
    colour bar under each; ``heights``: the points across the plates of a walled run (:func:`plate_heights`), each
    pixel drawn around its own point there."""
    fig, axes = figure(1, len(panels), layout="compressed")  # compressed: colour bars as wide as the images
    # with the images filling the height, the default pad (3 pt) let a panel title touch the heading
    fig.get_layout_engine().set(h_pad=0.06)
    across, up = (a for a in range(3) if a != axis)
    for ax, panel, (lo, hi) in zip(axes[0], panels, limits, strict=True):
        empty = panel.log and bool(np.isnan(panel.data).any())  # elsewhere NaN is a value not finite: left blank
        cmap = floored(panel.cmap) if panel.log else panel.cmap
        if heights is not None and 2 in (across, up):  # points not uniform from 0: a mesh at their own edges
            edges = [plate_edges(heights, box[2]) if a == 2 else (np.arange(n + 1) - 0.5) * (box[a] / n)
                     for a, n in zip((across, up), panel.data.shape, strict=True)]
            image = ax.pcolormesh(*edges, panel.data.T, cmap=cmap, vmin=lo, vmax=hi)
            ax.set_aspect("equal")  # a mesh fills its axes: a 4:1 layer was drawn square (imshow keeps the shape)
        else:
            image = ax.imshow(panel.data.T, origin="lower", extent=cell_extent(box, panel.data.shape, across, up),
                              cmap=cmap, vmin=lo, vmax=hi, interpolation="nearest")
        ax.set_xlabel(f"{names[across]} ({length})")
        ax.set_ylabel(f"{names[up]} ({length})")
        ax.set_title(panel.title, fontsize="small")
        # under the image: square images side by side on the 8:5 canvas leave its height to fill, not its width
        label = f"{panel.label}; empty cells: the triangle" if empty else panel.label
        fig.colorbar(image, ax=ax, label=label, location="bottom" if len(panels) > 1 else "right", shrink=0.85,
                     extend="min" if empty else "neither")
    fig.suptitle(heading, fontsize="medium" if "\n" in heading else "large")  # a second line, a note, fits the width
    fig.canvas.draw()  # a title wider than its panel (a tall box's narrow image) ran across the next: wrapped
    for ax in axes[0]:
        width, room = (b.get_window_extent(fig.canvas.get_renderer()).width for b in (ax.title, ax))
        if width > room:
            wrapped = textwrap.fill(ax.get_title(), max(12, int(len(ax.get_title()) * room / width)))
            ax.set_title(wrapped, fontsize="small")
    return fig


def last_slice_figure(run_dir: Path, config: dict[str, Any], info: EquationInfo, field: str, axis: int,
                      tell: Callable[[str], None] = note) -> Figure:
    """The slice figure (:func:`slice_panels`, :func:`slice_figure`) of the last complete snapshot, particles
    near its plane drawn (:mod:`.particle_overlay`); an incomplete newer one passed over, a line to ``tell``. Its
    title says when the run went on past it (:func:`~.figures.snapshot_heading`, the end from ``timeseries.csv``).
    Raises MissingOutputError without a complete snapshot."""
    times = read_timeseries(run_dir / TIMESERIES_FILE).get("time", []) if (run_dir / TIMESERIES_FILE).is_file() else []
    length = unit(config, info, "length")
    for path in reversed(snapshot_files(run_dir)):
        try:
            snap = Snapshot(path)
        except IncompleteOutputError as err:  # the newest may be being written now
            tell(f"passed over {path}: {err}")
            continue
        with snap, reading(path):  # what its fields or attributes raise: the file named, not snapshots/
            panels = slice_panels(snap, field, axis, info, length)
            title = snapshot_heading(config, info, float(snap.attrs["time"]), float(times[-1]) if len(times) else None)
            fig = slice_figure(panels, _limits(panels), lengths(snap), axis, title, length,
                               axis_names(snap), plate_heights(snap))
            overlay(fig, run_dir, int(snap.attrs["step"]), axis, lengths(snap), snap.shape(field)[-3:], field)
            return fig
    raise MissingOutputError(f"no snapshots in {run_dir / 'snapshots'}; set output.snapshots.every or "
                             "output.snapshots.dt")


def plot_slice(run_dir: Path, config: dict[str, Any], info: EquationInfo, field: str, axis: int,
               pdf: bool = False, stem: str = "slice") -> list[Path]:
    """``plots/<stem>.png`` from the last complete snapshot; nothing (and a note) without snapshots."""
    try:
        fig = last_slice_figure(run_dir, config, info, field, axis)
    except MissingOutputError as err:
        note(f"skipped {stem}.png: {err}")
        return []
    return save(fig, run_dir / "plots" / f"{stem}.png", pdf)


def frame_builders(run_dir: Path, config: dict[str, Any], info: EquationInfo, field: str, axis: int,
                   tell: Callable[[str], None] = note) -> list[Callable[[], Figure]]:
    """The movie's frames, one per complete snapshot in time order, each built when called: the slice figure of
    that snapshot (:func:`slice_panels`, :func:`slice_figure`) with the colour limits of the whole series, so a
    colour means one value through the movie. An incomplete snapshot is passed over (a line to ``tell``).

    Two passes over the snapshots (limits now, images when called) so that only one snapshot's planes are held.
    Raises MissingOutputError without a complete snapshot."""
    readable: list[Path] = []
    limits: list[tuple[float, float]] = []
    length = unit(config, info, "length")
    for path in snapshot_files(run_dir):
        try:
            with Snapshot(path) as snap:
                these = _limits(slice_panels(snap, field, axis, info, length))
        except IncompleteOutputError as err:
            tell(f"passed over {path}: {err}")
            continue
        readable.append(path)
        limits = [(min(a[0], b[0]), max(a[1], b[1])) for a, b in zip(limits, these, strict=True)] if limits else these
    if not readable:
        raise MissingOutputError(f"no snapshots in {run_dir / 'snapshots'}; set output.snapshots.every or "
                                 "output.snapshots.dt")

    def frame(path: Path) -> Figure:
        with Snapshot(path) as snap, reading(path):
            return slice_figure(slice_panels(snap, field, axis, info, length), limits, lengths(snap), axis,
                                snapshot_heading(config, info, float(snap.attrs["time"])), length,
                                axis_names(snap), plate_heights(snap))

    return [partial(frame, path) for path in readable]


def plot_frames(run_dir: Path, config: dict[str, Any], info: EquationInfo, field: str, axis: int,
                stem: str = "slice") -> list[Path]:
    """``plots/frames/<stem>_NNNN.png``: the slice of every complete snapshot (:func:`frame_builders`), numbered
    from 0, with the colour limits of the whole series, at one pixel size; nothing (and a note) without snapshots.
    ``simulator animate`` makes the movie itself."""
    try:
        frames = frame_builders(run_dir, config, info, field, axis)
    except MissingOutputError as err:
        note(f"skipped frames: {err}")
        return []
    out = run_dir / "plots" / "frames"
    out.mkdir(parents=True, exist_ok=True)
    # frames left by an earlier, longer series would join the movie
    for old in out.glob(f"{stem}_[0-9][0-9][0-9][0-9].png"):
        old.unlink()
    written = []
    for number, build in enumerate(frames):
        written += save(build(), out / f"{stem}_{number:04d}.png", pdf=False)
    note(f"movie: simulator animate {run_dir}{'' if stem == 'slice' else ' --field ' + stem[len('slice_'):]}, or "
         f"ffmpeg -framerate 10 -i {out}/{stem}_%04d.png -pix_fmt yuv420p {run_dir / 'plots' / f'{stem}.mp4'}")
    return written
