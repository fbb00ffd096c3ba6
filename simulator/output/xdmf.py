"""XDMF descriptions of snapshot index files, so ParaView and VisIt open them as uniform (or, between plates,
rectilinear) grids.

Each snapshot gets ``sNNNNNNNN.xdmf`` beside its index, and the snapshot directory one temporal
collection, ``series.xdmf``, of every snapshot of the run so far (ParaView shows a time slider).

The fields must be stored in the order these readers take natively (:mod:`simulator.output.snapshots`
does): scalars ``(Nz, Ny, Nx)`` and vectors ``(Nz, Ny, Nx, 3)``. XDMF lists dimensions slowest first
and ParaView's X is the fastest-varying index, so ParaView's x, y, z and a vector's components are then
this code's x, y, z, a right-handed frame. The spacing of ``ORIGIN_DXDYDZ`` is listed in the same
slowest-first order (dz dy dx), as both ParaView readers (Xdmf3 and the legacy XDMF Reader) take it.
A vector is one 4D array with the component axis fastest: the only vector form ParaView 5.11's
default (Xdmf3) reader loads; it skips a ``JOIN`` function of three arrays. A stack of n scalar
fields, stored the same way ``(Nz, Ny, Nx, n)``, is a ``Matrix`` attribute: ParaView shows one array of
n components.

A plane, stored as a plane (scalars ``(Ny, Nx)``, vectors ``(Ny, Nx, 2)``, a walled plane's ``(Nz, Nx)``), is a grid
one point deep, ``1 Ny Nx``, each dataset read as ``1 Ny Nx [c]``: both readers then lay it in ParaView's X-Y plane,
the plane's x along X (a ``2DCoRectMesh`` lies in ParaView 5.11's Y-Z plane in the default reader, and the legacy
reader does not read a vector of two components on it). A vector of the plane's two components is read from the
index's ``padded/<name>`` (:mod:`simulator.output.storage`), a virtual dataset ``(Ny, Nx, 3)`` of the same blocks
whose third component is HDF5's fill value, zero, not stored: ParaView's vectors (glyphs, the Gradient filter's
vorticity) need three components, the default reader loads two as a plain array, and it skips an XDMF ``Function``
(a ``JOIN`` padding them) altogether.
"""

from __future__ import annotations

import os
import xml.etree.ElementTree as ET
from collections.abc import Collection, Mapping, Sequence
from pathlib import Path

import numpy as np

from simulator.output.base import Writer
from simulator.output.hdf5 import OutputWriteError, describe_os_error
from simulator.output.rows import later
from simulator.output.storage import PADDED

SERIES = "series.xdmf"
NUMBER_TYPES = {"f": "Float", "i": "Int", "u": "UInt"}


def snapshot_grid(index: str, fields: Mapping[str, tuple[tuple[int, ...], np.dtype]], box: Sequence[float],
                  time: float, step: int, stacked: Collection[str] = (),
                  points: Sequence[np.ndarray] | None = None, plane: bool = False) -> ET.Element:
    """The grid of one snapshot, its fields read from ``index`` (a path relative to the XDMF file).

    ``fields`` maps names to (stored shape, dtype): ``(Nz, Ny, Nx)`` for scalars, ``(Nz, Ny, Nx, 3)`` for
    vectors, ``(Nz, Ny, Nx, n)`` for the stacks named in ``stacked``; ``box`` is ``(Lx, Ly, Lz)``. Grid
    points sit at ``i * L / N`` from the origin (a uniform ``3DCoRectMesh``), or, where ``points`` gives each
    axis's coordinates ``(x, y, z)`` (a grid between plates, :mod:`simulator.fft.bases`), at those: a rectilinear
    ``3DRectMesh``, so that the plates are drawn where they are. ``plane``: the fields are a plane's, ``(Ny, Nx)``,
    ``(Ny, Nx, 2)`` and ``(Ny, Nx, n)``, drawn one point deep (``box`` and ``points`` have the plane's two axes and
    then its depth, one point at 0), its vectors read with their third component from ``padded/<name>``.
    """
    ahead = (1,) if plane else ()  # a plane's datasets read as one point deep
    grid_shape = (*ahead, *next(iter(fields.values()))[0][:2 if plane else 3])
    components = 2 if plane else 3
    spacing = [float(b) / n for b, n in zip(reversed(box), grid_shape, strict=True)]
    grid = ET.Element("Grid", Name=Path(index).stem, GridType="Uniform")
    ET.SubElement(grid, "Time", Value=repr(float(time)))
    ET.SubElement(grid, "Information", Name="step", Value=str(int(step)))
    if points is None:
        ET.SubElement(grid, "Topology", TopologyType="3DCoRectMesh", Dimensions=_dims(grid_shape))
        geometry = ET.SubElement(grid, "Geometry", GeometryType="ORIGIN_DXDYDZ")
        ET.SubElement(geometry, "DataItem", Dimensions="3", Format="XML").text = "0 0 0"
        ET.SubElement(geometry, "DataItem", Dimensions="3", Format="XML").text = " ".join(map(repr, spacing))
    else:
        ET.SubElement(grid, "Topology", TopologyType="3DRectMesh", Dimensions=_dims(grid_shape))
        geometry = ET.SubElement(grid, "Geometry", GeometryType="VXVYVZ")
        for axis in points:
            ET.SubElement(geometry, "DataItem", Dimensions=str(len(axis)), NumberType="Float", Precision="8",
                          Format="XML").text = " ".join(repr(float(v)) for v in axis)
    for name, (shape, dtype) in fields.items():
        dtype, shape = np.dtype(dtype), (*ahead, *shape)
        allowed = len(shape) == 4 if name in stacked else len(shape) == 3 or tuple(shape[3:]) == (components,)
        if tuple(shape[:3]) != tuple(grid_shape) or not allowed:
            raise ValueError(f"field {name!r} has stored shape {list(shape[len(ahead):])}: XDMF needs "
                             f"{list(grid_shape[len(ahead):])} or {[*grid_shape[len(ahead):], components]}, or "
                             f"{[*grid_shape[len(ahead):], 'n']} for a stack")
        kind = "Matrix" if name in stacked else "Scalar" if len(shape) == 3 else "Vector"
        padded = plane and kind == "Vector"  # ParaView's vectors have three components: the third, zero, unstored
        attribute = ET.SubElement(grid, "Attribute", Name=name, AttributeType=kind, Center="Node")
        if padded:  # what a reader of the XDMF alone needs to know of the dataset it names
            ET.SubElement(attribute, "Information", Name="padding", Value=(
                f"{PADDED}/{name} is /{name} (its two components in the plane) with a third, zero, component: a "
                "virtual dataset whose third component is the HDF5 fill value, not stored"))
        ET.SubElement(attribute, "DataItem", Dimensions=_dims((*shape[:3], 3) if padded else shape),
                      NumberType=NUMBER_TYPES[dtype.kind], Precision=str(dtype.itemsize),
                      Format="HDF").text = f"{index}:/{PADDED + '/' if padded else ''}{name}"
    return grid


def _dims(shape: Sequence[int]) -> str:
    return " ".join(str(int(n)) for n in shape)


def _document(grid: ET.Element) -> ET.ElementTree:
    root = ET.Element("Xdmf", Version="3.0")
    ET.SubElement(root, "Domain").append(grid)
    ET.indent(root, space=" ")
    return ET.ElementTree(root)


def _write(path: Path, tree: ET.ElementTree) -> Path:
    """Write under a temporary name, then rename: a reader never sees half a file."""
    tmp = path.with_name(path.name + ".tmp")
    try:
        tree.write(tmp, encoding="utf-8", xml_declaration=True)
        os.replace(tmp, path)
    except OSError as err:
        tmp.unlink(missing_ok=True)
        raise OutputWriteError(f"writing {path} failed: {describe_os_error(err)}") from err
    return path


def write_xdmf(index: Path, grid: ET.Element) -> Path:
    """``index`` with suffix ``.xdmf``: the one snapshot ``grid`` (from :func:`snapshot_grid`)."""
    return _write(index.with_suffix(".xdmf"), _document(grid))


def _step(grid: ET.Element) -> int | None:
    info = grid.find("Information[@Name='step']")
    return None if info is None else int(info.get("Value"))


def series_grids(directory: Path) -> list[ET.Element]:
    """The snapshot grids of ``directory/series.xdmf``; when it is missing or unreadable, those of the
    per-snapshot XDMF files of this format (written with a step), ordered by step."""
    try:
        return [g for g in ET.parse(directory / SERIES).getroot().findall("Domain/Grid/Grid") if _step(g) is not None]
    except (OSError, ET.ParseError):
        pass
    grids = []
    for path in sorted(directory.glob("s*.xdmf")):
        try:
            grid = ET.parse(path).getroot().find("Domain/Grid")
        except (OSError, ET.ParseError):
            continue
        if path.name != SERIES and grid is not None and _step(grid) is not None:
            grids.append(grid)
    return sorted(grids, key=_step)


def write_series(directory: Path, grids: list[ET.Element]) -> Path:
    """``directory/series.xdmf``: the temporal collection of ``grids`` (from :func:`snapshot_grid`), in order."""
    collection = ET.Element("Grid", Name="snapshots", GridType="Collection", CollectionType="Temporal")
    collection.extend(grids)
    return _write(directory / SERIES, _document(collection))


def update_series(directory: Path, grid: ET.Element) -> Path:
    """Add a snapshot's ``grid`` to ``directory/series.xdmf``, the temporal collection of the run's snapshots.

    Grids of the same or later steps are dropped first: those are left from a run that went further
    before it was restarted from an earlier checkpoint.
    """
    step = _step(grid)
    return write_series(directory, [g for g in series_grids(directory) if _step(g) < step] + [grid])


def truncate_series(directory: Path, keep_through: int) -> None:
    """Drop the snapshots after step ``keep_through`` from the series (a restart from that step)."""
    if (directory / SERIES).exists():
        write_series(directory, [g for g in series_grids(directory) if _step(g) <= keep_through])


class SeriesWriter(Writer):
    """A writer of one file set per output time under ``<run>/<directory>/``, listed in that directory's
    ``series.xdmf``: on a restart, process 0 drops the entries past the resumed step once every file of the
    segment is open (field and particle snapshots)."""

    directory: str

    def __init__(self, rank0: bool):
        super().__init__()
        self.rank0 = rank0
        self.run_dir: Path | None = None

    def open(self, run_dir: Path, resumed_step: int | None) -> None:
        self.run_dir = run_dir
        if resumed_step is not None and self.rank0 and (run_dir / self.directory).is_dir():
            later(lambda: truncate_series(run_dir / self.directory, resumed_step))  # once every file is open
