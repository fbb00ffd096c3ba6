"""``grid.modes``: the modes to keep, from which the grid's points are chosen per axis at config load (no JAX).

A user coming from Dedalus thinks in modes: Dedalus keeps ``M`` modes of a basis on a grid 3/2 as large; this code
keeps what the 2/3 rule leaves of its grid (:meth:`simulator.fft.bases.Axis.keep`). ``grid.modes`` gives the modes, and
each axis takes the fewest points whose own rule keeps them, raised to the first count whose transform is fast
(:meth:`simulator.fft.bases.Axis.points_for`). The shape is static structure, chosen on the raw config before its
sections are built (:func:`resolve_modes`), and written to the resolved config beside the modes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from simulator.config.grid import MIN_ACROSS, GridConfig, WallsConfig
from simulator.errors import ConfigError
from simulator.fft import bases


def _axis_bases(count: int, bounded: str | None) -> list[tuple[str, type[bases.Basis], int]]:
    """(axis name, basis class, fewest points it runs with) of each axis of a grid of ``count`` entries, the last
    ``bounded`` (a key of :data:`simulator.fft.bases.BOUNDED`, or None: periodic)."""
    names = "xz" if count == 2 else "xyz"
    out: list[tuple[str, type[bases.Basis], int]] = [(name, bases.Fourier, 2) for name in names]
    if bounded is not None:
        out[-1] = (names[-1], bases.BOUNDED[bounded], MIN_ACROSS[bounded])
    return out


def modes_shape(modes: tuple[int, ...], bounded: str | None) -> tuple[int, ...]:
    """``grid.shape`` for ``grid.modes``: per axis the fewest points whose 2/3 rule keeps the modes and whose
    transform is fast (:meth:`simulator.fft.bases.Axis.points_for`), the last axis's basis ``bounded``."""
    return tuple(basis.points_for(m, least) for m, (_, basis, least) in zip(modes, _axis_bases(len(modes), bounded),
                                                                            strict=True))


def resolve_modes(data: Mapping[str, Any], name: Any, stored: bool = False) -> Mapping[str, Any]:
    """``data`` with ``grid.shape`` chosen from ``grid.modes`` (:func:`modes_shape`) where it gives the modes: static
    structure, decided here, before the sections are built, and written out with the resolved config beside the modes
    asked. Both keys given is refused, except in a resolved config (``stored``), whose shape is the run's own.
    ``name``: the equation, whose dimensions the modes' entries must be."""
    from simulator.equations import registry
    from simulator.schema import type_hints
    from simulator.schema.build import build, check, coerce

    grid = data.get("grid")
    if not isinstance(grid, Mapping) or grid.get("modes") is None:
        return data
    if "shape" in grid:
        if stored:
            return data
        raise ConfigError("grid.modes", grid["modes"], "grid.modes (the modes to keep: the points are chosen) or "
                          "grid.shape (the points), not both", f"is given with grid.shape = {grid['shape']}")
    modes = coerce("grid.modes", grid["modes"], type_hints(GridConfig)["modes"])
    check("grid.modes", modes, next(f.metadata for f in dataclasses.fields(GridConfig) if f.name == "modes"))
    info = registry().get(name) if isinstance(name, str) else None
    if info is not None and len(modes) != info.dimensions:
        want = "two, [Mx, Mz], for a plane" if info.dimensions == 2 else "three, [Mx, My, Mz], for a box"
        raise ConfigError("grid.modes", list(modes), f"{want} (physics.name = {name})", f"has {len(modes)} entries")
    walls = build(WallsConfig, grid.get("walls"), "grid.walls.")
    return {**data, "grid": {**grid, "modes": list(modes), "shape": list(modes_shape(modes, walls.bounded))}}


def stored_grid(raw: Mapping[str, Any], given: set[str]) -> Mapping[str, Any]:
    """A resolved config's ``raw`` mapping (it holds ``grid.modes`` and the ``grid.shape`` chosen from them) for
    overrides that set the dotted keys ``given``: the shape dropped where they set the modes (chosen again from
    them), the modes where they set the shape (the points given)."""
    grid = raw.get("grid")
    if not isinstance(grid, Mapping) or grid.get("modes") is None:
        return raw
    drop = "shape" if "grid.modes" in given else "modes" if "grid.shape" in given else None
    return raw if drop is None else {**raw, "grid": {k: v for k, v in grid.items() if k != drop}}


def modes_line(grid: GridConfig) -> str | None:
    """The one line ``simulator validate`` and ``plan`` print for a grid chosen from ``grid.modes``: the modes asked,
    the points chosen, and per axis why (the fewest points its 2/3 rule needs, and the transform's length); None
    where ``grid.shape`` gave the points."""
    if grid.modes is None:
        return None
    why = []
    for m, n, (axis, basis, least) in zip(grid.modes, grid.shape, _axis_bases(len(grid.modes), grid.walls.bounded),
                                          strict=True):
        kind = basis.__name__ if basis is not bases.SinCos else "sine and cosine"
        kept = f"|m| <= {basis.top_mode(m)}" if basis is bases.Fourier else f"degrees <= {basis.top_mode(m)}"
        length = basis.transform_length(n)
        fast = ("a dense transform, any size" if length is None
                else f"FFT of {length}{bases.factored(length)}{'' if basis.fast(n) else ', slow'}")
        why.append(f"{axis}: {kind} {kept} needs {max(basis.fewest(m), least)}, {n} points: {fast}")
    return (f"grid.modes {list(grid.modes)} -> grid.shape {list(grid.shape)}: the fewest points whose 2/3 rule keeps "
            f"the modes, with a fast transform ({'; '.join(why)})")
