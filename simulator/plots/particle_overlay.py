"""Particles on a slice: the particles of a run's particle snapshot near the plane a slice figure shows,
drawn over its first panel (no JAX).

A slice shows the mid-plane normal to one axis (:func:`simulator.plots.slices.slice_panels`); the particles
drawn are those of the particle snapshot of the same step whose distance to that plane, across the
periodic box, is at most one grid cell, each species in its own colour, at their positions in the plane
(periodically wrapped into the picture). Small dots, and at most :data:`MARKERS` of a species, every k-th by
identity where more are near the plane (the legend says how many are there and which are drawn): a 64^3 cold
run has about 10^4 particles within a cell of its mid-plane, whose markers covered the image. A species whose
own density the slice shows (``cdm_density`` for ``cdm``) is not drawn: the image is those particles already.
A plane's one slice is the plane itself, and all its particles are on it.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np
from matplotlib.figure import Figure

from simulator.errors import reading
from simulator.fft import plane
from simulator.output import hdf5, segments
from simulator.output.particles import DIR

#: how far from the plane a particle is drawn, in grid cells
CELLS = 1.0
#: the most particles of one species drawn on a slice: beyond it every k-th, so the image stays readable
MARKERS = 500


def near_plane(position: np.ndarray, axis: int, where: float, length: float, width: float) -> np.ndarray:
    """Which of the ``position`` (N, 3) lie within ``width`` of the plane at ``where`` normal to ``axis``,
    periodically in a box of ``length`` along it."""
    distance = np.abs((position[:, axis] - where + length / 2) % length - length / 2)
    return distance <= width


def overlay(fig: Figure, run_dir: Path, step: int, axis: int, box: Sequence[float], shape: Sequence[int],
            field: str | None = None) -> int:
    """Draw on ``fig``'s first panel the particles of ``particles/s<step>.h5`` within :data:`CELLS` cells of
    the mid-plane normal to ``axis`` of a grid of ``shape`` in ``box`` (at most :data:`MARKERS` of a species; none
    of the species whose density ``field`` is, ``<species>_density``); returns how many were drawn (0 when
    the run wrote no particle snapshot at that step, or a later segment superseded the one there: a restart that
    dropped the particles leaves the earlier trajectory's, which are not of this field). DamagedFileError naming
    a damaged particle snapshot."""
    index = run_dir / DIR / f"s{step:08d}.h5"
    if not index.is_file() or segments.superseded(run_dir, [index]):
        return 0
    with reading(index), hdf5.IndexedFile(index) as f:  # damaged: the slice is skipped naming this file, not its own
        names, position, species, ids = f.attrs["species_names"], f.read("position"), f.read("species"), f.read("id")
    flat = plane.holds_plane(shape)
    if flat:  # a plane's files give (x, y, 0) (plane.FILE_ORDER): its box's (z, x, y) here
        position = position[:, np.argsort(plane.FILE_ORDER)]
    length = float(box[axis])
    dx = length / shape[axis]
    near = near_plane(position, axis, (shape[axis] // 2) * dx, length, CELLS * dx)
    across, up = (a for a in range(3) if a != axis)
    ax = fig.axes[0]
    limits = ax.get_xlim(), ax.get_ylim()  # the image's: a scatter would widen them past the box
    # the image spans [-d/2, L - d/2) along each axis (cells centred on grid points): a particle within the
    # last half cell is drawn at its periodic image near 0, inside the picture
    cell = [box[a] / shape[a] for a in (across, up)]
    shown = [(position[:, a] + d / 2) % box[a] - d / 2 for a, d in zip((across, up), cell, strict=True)]
    drawn = 0
    for s, name in enumerate(names):
        if field == f"{name}_density":
            continue
        mine = np.flatnonzero(near & (species == s))
        mine = mine[np.argsort(ids[mine], kind="stable")]  # by identity: the same ones whichever process wrote them
        every = -(-len(mine) // MARKERS)  # ceil: at most MARKERS of them
        what = f"{name}: {len(mine)}" + ("" if flat else f" within {CELLS:g} cell of the plane")
        if every > 1:
            mine, what = mine[::every], f"{what}, 1 in {every} drawn"
        ax.scatter(shown[0][mine], shown[1][mine], s=3, marker="o", linewidths=0, label=what)
        drawn += len(mine)
    ax.set(xlim=limits[0], ylim=limits[1])
    if drawn:
        ax.legend(loc="upper right", fontsize="x-small", framealpha=0.7, markerscale=2)
    return drawn
