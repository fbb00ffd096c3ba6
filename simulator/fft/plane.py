"""A plane as the box it runs as (no JAX).

``grid.shape: [Nx, Ny]`` (two entries) is a periodic plane. Every layer below the config runs it as the
three-dimensional box ``(1, Nx, Ny)``: one cell deep along the first axis, the plane's x along the box's
second axis and its y along the third. That embedding is what lets one FFT serve both: the real-to-complex
transform halves the plane's y (the box's last axis), the slab splits the plane's x over the devices in real
space and its ky in k-space (one all-to-all per transform each way), and the single axis of one mode
(``k = 0``) adds nothing to any product, sum or shell. Arrays of a plane are so ``(*batch, 1, Nx, Ny)``
(``field[..., 0, :, :]`` is the plane, indexed ``[i_x, i_y]``), and its wavenumbers ``(0, kx, ky)``.

The box's depth along its first axis is the plane's larger side: no wavenumber depends on it (its axis holds
``k = 0`` only) and the shells' spacing 2 pi / max(L) stays the plane's.
"""

from __future__ import annotations

from collections.abc import Sequence


def is_plane(shape: Sequence[int]) -> bool:
    """Whether ``grid.shape`` (as the config gives it) is a plane: two entries."""
    return len(shape) == 2


def cells(shape: Sequence[int]) -> tuple[int, int, int]:
    """The box a ``grid.shape`` runs as: ``(1, Nx, Ny)`` for a plane, the shape itself for a box."""
    sizes = tuple(int(n) for n in shape)
    return (1, *sizes) if len(sizes) == 2 else sizes  # type: ignore[return-value]


def lengths(shape: Sequence[int], box: Sequence[float]) -> tuple[float, float, float]:
    """The box lengths of :func:`cells`: ``(max(Lx, Ly), Lx, Ly)`` for a plane, the lengths for a box."""
    sides = tuple(float(b) for b in box)
    return (max(sides), *sides) if len(shape) == 2 else sides  # type: ignore[return-value]


#: the names of a plane's box axes in files and figures: its one-cell axis is z, then the plane's x and y
AXES = ("z", "x", "y")
#: a plane between plates (``grid.walls``): its one-cell axis is y, then x along the plates and z across them, as a
#: box's (the plane is an x-z plane, gravity along -z)
WALLED_AXES = ("y", "x", "z")


def holds_plane(box_shape: Sequence[int]) -> bool:
    """Whether a box's spatial shape (the last three entries of an array's) is a plane's, ``(1, Nx, Ny)``: a box of
    three entries has none of one cell (the config refuses it)."""
    return int(box_shape[-3]) == 1


def axis_names(box_shape: Sequence[int], walled: bool = False) -> str:
    """The names of the three axes of a box's spatial shape (the last three entries of an array's) in messages,
    files and figures: ``xyz``, or a plane's ``zxy`` (:data:`AXES`), a plane's between plates (``walled``) ``yxz``
    (:data:`WALLED_AXES`)."""
    return "".join(WALLED_AXES if walled else AXES) if holds_plane(box_shape) else "xyz"


#: the columns of a plane's box coordinates ``(z, x, y)`` in the order its files and figures give a point or a
#: vector: ``(x, y, z)``, the one-cell axis last (a particle's position ``(x, y, 0)``, as a field's vector
#: ``(u, v, 0)``)
FILE_ORDER = (1, 2, 0)


def file_lengths(shape: Sequence[int], box: Sequence[float]) -> tuple[float, float, float]:
    """The box lengths in the order of a file's coordinates: a box's own, a plane's ``(Lx, Ly, max(Lx, Ly))``
    (:func:`lengths` in :data:`FILE_ORDER`)."""
    sides = lengths(shape, box)
    return tuple(sides[i] for i in FILE_ORDER) if is_plane(shape) else sides  # type: ignore[return-value]


def stored_lengths(box: Sequence[float], box_axes: Sequence[str] | None, box_shape: Sequence[int]
                   ) -> tuple[float, float, float]:
    """A snapshot's ``box`` attribute, its lengths along the axes ``box_axes`` names (a plane's in
    :data:`FILE_ORDER`: x, then y or, between plates, z; in files stored one cell deep then that cell), as the lengths
    of the box's axes (a plane's ``(cell, x, y or z)``, the cell as deep as the plane's longer side: :func:`lengths`)
    of the fields' spatial shape ``box_shape``. ``box_axes`` None: a file written before snapshots named them, whose
    ``box`` was in the box's axis order already."""
    if box_axes is None or not holds_plane(box_shape):
        return tuple(float(b) for b in box)  # type: ignore[return-value]
    if len(box) == 2:  # a plane stored as a plane: its two sides
        return lengths((1, 1), box)
    return tuple(float(box[FILE_ORDER.index(i)]) for i in range(3))  # type: ignore[return-value]


def stored_names(box_axes: Sequence[str] | None, box_shape: Sequence[int]) -> str:
    """The names of the box's axes (:func:`axis_names`) of a snapshot whose ``box_axes`` attribute is ``box_axes``
    (None: a file written before it was, whose plane is named :data:`AXES`; a plane stored as a plane names its two
    axes, and its cell is the third of x, y, z)."""
    if box_axes is None or not holds_plane(box_shape):
        return axis_names(box_shape)
    if len(box_axes) == 2:
        return "".join(sorted(set("xyz") - set(box_axes))) + "".join(box_axes)
    return "".join(box_axes[FILE_ORDER.index(i)] for i in range(3))


def box_vector(vector: Sequence[float], plane: bool) -> tuple[float, float, float]:
    """A vector as a config gives it, ``(x, y, z)`` (a plane's ``(x, y)`` or ``(x, y, 0)``), as the box's components:
    a plane's ``(0, x, y)`` (the inverse of :data:`FILE_ORDER`), a box's as they are."""
    values = tuple(float(v) for v in vector)
    return (0.0, values[0], values[1]) if plane else values  # type: ignore[return-value]
