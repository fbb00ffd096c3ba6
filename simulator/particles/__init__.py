"""Lagrangian particles carried by a flow: their placement and what they cost (no JAX here); the
``particles:`` section of the config is declared by :mod:`.species`.

The optional top-level ``particles:`` section is a list of species, one section each::

    particles:
      - {name: tracers, count: 4096, placement: random, seed: 1}
      - {name: drops, count: 512, placement: lattice, tau_p: 0.05, gravity: [0, 0, -9.81]}
      - {name: seeded, count: 100, placement: file, path: start.npy}

A species with ``tau_p = 0`` is made of tracers, dx/dt = u(x, t); with ``tau_p > 0`` of small heavy
(inertial) particles under Stokes drag and gravity (Maxey & Riley 1983, Phys. Fluids 26, 883, keeping
drag and gravity only, the limit of heavy point particles),

    dx/dt = v,   dv/dt = (u(x, t) - v) / tau_p + g,

released with the fluid's velocity at their positions. u at a particle is the spectrally exact
interpolant (``interpolation: exact``, :func:`simulator.fft.points.evaluate_at`; ``nufft`` the same by a
type-2 NUFFT of each device's modes) or the tricubic
Lagrange interpolant of the grid values (``lagrange4``, :func:`simulator.fft.points.interpolate_local`), each
method an entry of :data:`.interpolation.METHODS`. Placement: ``random`` (uniform in the box,
NumPy's PCG64 from ``seed``: the same on every process), ``lattice`` (``count`` = n^3 points at the
cell centres of an n x n x n lattice of the box) or ``file`` (an ``.npy`` array or an ``.h5`` file
with a dataset ``position``, shape ``(count, 3)``, physical coordinates; they are wrapped into the box).

Particles need a flow: an equation with a ``velocity`` field (Navier-Stokes with or without passive scalars,
Boussinesq, MHD; in a plane ``ns2d``, ``boussinesq2d``, ``mhd2d``). A plane runs as the box ``(1, Nx, Ny)``
(:mod:`simulator.fft.plane`) and its particles as the box's, at z = 0 with w = 0 (its velocity has no z
component, so they never leave the plane): placed in x and y (a lattice of n^2, a file of ``(count, 2)``),
written as ``(x, y, 0)`` (:data:`simulator.fft.plane.FILE_ORDER`). The JAX side: :mod:`.flow` (the state and the
right-hand side), interpolation by :mod:`simulator.fft.points`; outputs :mod:`simulator.output.particles`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from simulator.errors import ConfigError
from simulator.particles.interpolation import METHODS
from simulator.time.schemes import SCHEMES

if TYPE_CHECKING:
    from simulator.particles.species import Species

#: the largest error, as a fraction of a grid cell, that wrapping a file's position into the box may make:
#: x mod L is exact only to the spacing of floats at |x| (about |x| eps), so a coordinate beyond
#: WRAP_CELLS * dx / eps (dx = 2 pi/8: 3.5e12 in float64, 6.6e3 in float32) would land where its digits
#: no longer say (1e300 mod 2 pi is 0): it is refused instead of placed
WRAP_CELLS = 1e-3


def wrap_bound(box: Sequence[float], shape: Sequence[int], precision: str, cells: float = WRAP_CELLS) -> float:
    """The largest |coordinate| a position may have to be located within ``cells`` of the smallest grid cell
    (default :data:`WRAP_CELLS`: a file's positions wrapped into the box exactly enough): where the spacing
    of floats of ``precision`` reaches that."""
    eps = float(np.finfo(np.float64 if precision == "float64" else np.float32).eps)
    return cells * min(float(b) / n for b, n in zip(box, shape, strict=True)) / eps


def initial_positions(species: Species, box: Sequence[float], key: str = "particles",
                      bound: float = math.inf, plane: bool = False) -> tuple[np.ndarray, int]:
    """The initial positions of ``species`` in the box ``[0, L)``, float64 ``(count, 3)``, on the host (the
    same on every process), and how many of them a file placed outside the box (wrapped into it; a
    coordinate beyond ``bound``, see :func:`wrap_bound`, cannot be wrapped exactly and is refused).

    In a ``plane`` (the box ``(1, Nx, Ny)``, :mod:`simulator.fft.plane`) the points are ``(0, x, y)``: a random
    placement draws x and y, a lattice is square (``count`` = n^2), a file gives ``(x, y)`` or ``(x, y, 0)``."""
    box_arr = np.asarray(box, np.float64)
    sides = box_arr[1:] if plane else box_arr
    if species.placement == "random":
        points = np.random.default_rng(species.seed).uniform(0.0, 1.0, (species.count, sides.size)) * sides
        return _in_box(points, plane), 0
    if species.placement == "lattice":
        n = round(species.count ** (1 / sides.size))
        centres = (np.arange(n) + 0.5) / n
        grid = np.stack(np.meshgrid(*[centres] * sides.size, indexing="ij"), axis=-1).reshape(-1, sides.size)
        return _in_box(grid * sides, plane), 0
    data = _in_box(read_positions(species, key, plane), plane)
    far = float(np.abs(data).max(initial=0.0))
    if far > bound:
        raise ConfigError(f"{key}.path", str(species.path), f"give coordinates within {bound:.3g} of the origin "
                          f"(beyond it, wrapping into the box loses more than {WRAP_CELLS:g} of a grid cell to "
                          "rounding)", f"holds a position coordinate of magnitude {far:.3g}")
    outside = int(np.count_nonzero(np.any((data < 0) | (data >= box_arr), axis=1)))
    return np.mod(data, box_arr), outside


def _in_box(points: np.ndarray, plane: bool) -> np.ndarray:
    """Points of a plane ``(count, 2)`` (x, y) as the box's ``(count, 3)`` (0, x, y); a box's as they are."""
    return np.concatenate([np.zeros((len(points), 1)), points], axis=1) if plane else points


def read_positions(species: Species, key: str = "particles", plane: bool = False) -> np.ndarray:
    """The ``(count, 3)`` array of a ``placement: file`` species, checked (one-line errors); in a ``plane`` its
    ``(count, 2)`` x and y, from a file of ``(count, 2)`` or of ``(count, 3)`` whose z are all 0."""
    path = Path(str(species.path))
    try:
        if path.suffix == ".npy":
            data = np.load(path, allow_pickle=False)
        else:
            import h5py

            with h5py.File(path, "r") as f:
                if "position" not in f:
                    raise ConfigError(f"{key}.path", str(path), "an .h5 file needs a dataset named position, "
                                      "shape (count, 3)", "has no dataset named position")
                if not isinstance(f["position"], h5py.Dataset):  # a group of that name: no array to read
                    raise ConfigError(f"{key}.path", str(path), "an .h5 file needs a dataset named position, "
                                      "shape (count, 3)", "holds position as a group, not a dataset")
                data = f["position"][()]
    except (OSError, ValueError) as err:
        if isinstance(err, ConfigError):
            raise
        raise ConfigError(f"{key}.path", str(path), "give a readable .npy or .h5 file of positions (count, 3)",
                          f"cannot be read ({type(err).__name__})") from None
    data = np.asarray(data)
    # real numbers only: a complex array would lose its imaginary part to astype without a word
    real = np.issubdtype(data.dtype, np.floating) or np.issubdtype(data.dtype, np.integer)
    shapes = [(species.count, 2), (species.count, 3)] if plane else [(species.count, 3)]
    if data.shape not in shapes or not real:
        raise ConfigError(f"{key}.path", str(path), f"it must hold {species.count} positions: shape "
                          f"{' or '.join(map(str, shapes))}, real numbers", f"holds shape {data.shape}, dtype "
                          f"{data.dtype}")
    if plane and data.shape[1] == 3:
        if np.any(data[:, 2]):
            raise ConfigError(f"{key}.path", str(path), "a plane's positions are (x, y) or (x, y, 0): every z 0",
                              "holds a z other than 0")
        data = data[:, :2]
    data = data.astype(np.float64)
    if not np.all(np.isfinite(data)):
        raise ConfigError(f"{key}.path", str(path), "every position must be finite", "holds NaN or Inf")
    return data


def state_bytes(cfg: Any, devices: int = 1) -> int:
    """Bytes of the particles' state on each of ``devices`` devices: positions, and velocities of inertial
    species, of every particle of a replicated species (each device holds all of them), and of an owned
    species' slots per device with their identities and occupancy (:func:`.owned.state_bytes`: its capacity,
    not its count)."""
    from simulator.particles.owned import state_bytes as owned_bytes

    itemsize = 8 if cfg.precision == "float64" else 4
    return sum(owned_bytes(s, devices, itemsize) if s.owned else s.count * 3 * itemsize * (2 if s.inertial else 1)
               for s in cfg.particles)


def describe(cfg: Any, devices: int) -> str:
    """One line for ``simulator plan``: the particles' bytes per device and, per interpolation, the work
    of one evaluation per device (a replicated species' every particle on every device, :mod:`simulator.fft.
    points`; an owned species' slots, ``capacity`` times its mean count per device)."""
    from simulator.fft.layouts import LAYOUTS

    count = sum(s.count for s in cfg.particles)
    nx, ny, nz = cfg.grid.cells
    modes = nx * ny * (nz // 2 if LAYOUTS[cfg.fft.backend].has_real_transform else nz) // devices
    # each of the scheme's right-hand-side evaluations interpolates u at every particle once
    stages = SCHEMES[cfg.time.integrator].stages
    by_method = {m: sum(s.count for s in cfg.particles if s.interpolation == m.name) for m in METHODS.values()}
    parts = "; ".join(f"{m.name} ({n}): {m.work(modes)}" for m, n in by_method.items() if n)
    owned = [s.name for s in cfg.particles if s.owned]
    held = f"replicated, owned by block: {', '.join(owned)}" if owned else "replicated"
    return (f"particles: {count} in {len(cfg.particles)} species, {state_bytes(cfg, devices) / 2**20:.3g} MiB of "
            f"state on every device ({held}; the scheme's registers of it are in the chunk's memory above); "
            f"{stages} evaluations per step, each {parts}")


def check_start(cfg: Any) -> None:
    """Checks that matter only when a run places its particles (a new run; a restart takes them from its
    checkpoint): every ``placement: file`` read and checked before JAX starts, one-line errors naming
    ``particles[i].path``."""
    bound = wrap_bound(cfg.grid.lengths, cfg.grid.cells, cfg.precision)
    for i, s in enumerate(cfg.particles):
        if s.placement == "file":
            initial_positions(s, cfg.grid.lengths, f"particles[{i}]", bound, cfg.grid.plane)
