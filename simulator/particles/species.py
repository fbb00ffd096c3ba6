"""The ``particles:`` section of the run config: a list of species (:class:`Species`), and its cross-key
checks (no JAX), beside the registry of its interpolation methods (:mod:`.interpolation`). What the particles
are and how they move: :mod:`simulator.particles`.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError
from simulator.fft.layouts import check_planes, known_devices
from simulator.fft.particle_slots import check_capacity
from simulator.particles.interpolation import INTERPOLATIONS, METHODS, doc as interpolation_doc
from simulator.schema import setting

PLACEMENTS = ("random", "lattice", "file")
#: the choices of ``particles[].distribution``
DISTRIBUTIONS = ("replicated", "owned")
#: the interpolation methods an owned species may use: those that read grid values near the particle (no
#: route of the whole spectrum: declared by the method, :mod:`.interpolation`)
OWNED_INTERPOLATIONS = tuple(m.name for m in METHODS.values() if m.route is None)
#: the keys of a species that only an owned one uses (a replicated species holds every particle on every device)
OWNED_ONLY = ("capacity", "exchange", "halo")


@dataclass(frozen=True)
class Species:
    """One species of particles: an entry of ``particles``."""

    name: str = setting("particles", "name of the species (a plain word: it names datasets in outputs)")
    count: int = setting(1000, "number of particles (for placement lattice: a cube n^3, in a plane a square n^2)",
                         min=1, max=1 << 26)
    placement: str = setting("random", "initial positions: random (uniform, from seed), lattice (cell centres "
                             "of an n^3 lattice, n^2 in a plane) or file (path: .npy, or .h5 with a dataset "
                             "position)",
                             choices=PLACEMENTS)
    seed: int = setting(0, "random seed of placement random (0 to 2^32 - 1)", min=0, max=2**32 - 1)
    path: str | None = setting(None, "file of initial positions (count, 3), in a plane (count, 2) or (count, 3) "
                               "of z 0, for placement file; null otherwise")
    tau_p: float = setting(0.0, "Stokes response time: 0 = tracers (dx/dt = u); > 0 = inertial particles, "
                           "dv/dt = (u(x) - v)/tau_p + g", min=0.0)
    gravity: tuple[float, float, float] | tuple[float, float] = setting(
        (0.0, 0.0, 0.0), "gravity g (gx, gy, gz) acting on inertial particles (tau_p > 0); in a plane (gx, gy) or "
        "(gx, gy, 0)")
    interpolation: str = setting("exact", interpolation_doc(), choices=INTERPOLATIONS)
    distribution: str = setting("replicated", "replicated (every device holds every particle; up to ~1e6) or owned "
                                "(each device holds the particles in its real-space block, handed to the neighbour "
                                "after each step; needs interpolation lagrange4; for ~1e7 and more)",
                                choices=DISTRIBUTIONS)
    capacity: float = setting(2.0, "owned: particle slots per device, times the mean count per device (on one "
                              "device exactly all of them; at least what a uniform spread over the run's devices "
                              "needs)", min=1.0)
    exchange: float = setting(0.25, "owned: rows a device may hand to each neighbour per step, as a fraction of "
                              "its slots (a step sends one plane's mean count first, the rest only when some "
                              "device has more)", gt=0.0, max=1.0)
    halo: int = setting(1, "owned: cells a particle may move outside its device's block within a step (a "
                        "Runge-Kutta stage's position; the interpolation's halo is as much wider)", min=1, max=64)

    @property
    def inertial(self) -> bool:
        return self.tau_p > 0

    @property
    def owned(self) -> bool:
        """Whether each device holds only the particles in its block (``distribution: owned``)."""
        return self.distribution == "owned"


def too_few_planes(halo: int) -> str:
    """What an owned species with ``halo`` can change where a device holds too few grid planes for it: a smaller
    halo only above 1, the least there is."""
    return f"{'a smaller halo, ' if halo > 1 else ''}fewer devices, or distribution: replicated"


def particle_list() -> Any:
    """The ``particles`` field of the run config: a list of :class:`Species`, empty by default."""
    return setting((), "Lagrangian particles, one section per species, e.g. [{name: tracers, count: 1000}] "
                   "(name, count, placement random|lattice|file, seed, path, tau_p, gravity); [] = none")


def check(cfg: Any) -> None:
    """Cross-key checks of ``cfg.particles`` against the rest of the config (one-line errors)."""
    from simulator.equations import registry

    species: Sequence[Species] = cfg.particles
    if not species:
        every = cfg.output.section("trajectories").every
        if every:
            raise ConfigError("output.trajectories.every", every, "trajectories need "
                              "particles: declare a species in particles, or set 0", "has no particle to record")
        return
    info = registry()[cfg.physics.name]
    if "velocity" not in info.fields:
        flows = [name for name, other in registry().items() if "velocity" in other.fields]
        raise ConfigError("particles", [s.name for s in species], "particles need a flow: use an equation with a "
                          f"velocity field ({', '.join(flows)})", f"is not available for physics.name = "
                          f"{cfg.physics.name}")
    plane = cfg.grid.plane
    dims = 2 if plane else 3
    seen: set[str] = set()
    for i, s in enumerate(species):
        key = f"particles[{i}]"
        if not s.name.isidentifier():
            raise ConfigError(f"{key}.name", s.name, "give a plain word (letters, digits, _; not starting with a "
                              "digit): it names datasets", "is not a name")
        if s.name in seen:
            raise ConfigError(f"{key}.name", s.name, "give each species its own name", "repeats")
        seen.add(s.name)
        if s.placement == "lattice" and round(s.count ** (1 / dims)) ** dims != s.count:
            raise ConfigError(f"{key}.count", s.count, "placement lattice needs " + ("a square n^2 in a plane (e.g. "
                              "256, 1024)" if plane else "a cube n^3 (e.g. 512, 4096)"),
                              f"is not a {'square' if plane else 'cube'}")
        if len(s.gravity) != dims and (not plane or s.gravity[2]):
            raise ConfigError(f"{key}.gravity", list(s.gravity), "two entries (gx, gy) in a plane, or (gx, gy, 0)"
                              if plane else "three entries (gx, gy, gz) in a box", "points out of the plane"
                              if plane else "has two entries")
        if s.placement == "file" and not s.path:
            raise ConfigError(f"{key}.path", s.path, "placement file needs the path of a .npy or .h5 file",
                              "is missing")
        if s.placement != "file" and s.path is not None:
            raise ConfigError(f"{key}.path", s.path, "a path is read only with placement: file", "would be ignored")
        if s.path is not None and Path(s.path).suffix not in (".npy", ".h5", ".hdf5"):
            raise ConfigError(f"{key}.path", s.path, "give a .npy file, or an .h5 file with a dataset position",
                              "has an unknown suffix")
        if not s.inertial and any(s.gravity):
            raise ConfigError(f"{key}.gravity", list(s.gravity), "gravity acts on inertial particles only: set "
                              "tau_p > 0, or leave gravity out", "would be ignored by tracers")
        if s.owned and s.interpolation not in OWNED_INTERPOLATIONS:
            raise ConfigError(f"{key}.interpolation", s.interpolation, "distribution: owned needs a local "
                              f"interpolation: {', '.join(OWNED_INTERPOLATIONS)} (or distribution: replicated)",
                              "is not available for owned particles")
        if s.owned:
            check_planes(cfg, f"{key}.halo", s.halo, METHODS[s.interpolation].planes + s.halo, too_few_planes(s.halo))
            if (devices := known_devices(cfg)) is not None:
                check_capacity(f"{key}.capacity", s.capacity, s.count, devices)
        else:
            for field in (f for f in dataclasses.fields(Species) if f.name in OWNED_ONLY):
                if getattr(s, field.name) != field.default:
                    raise ConfigError(f"{key}.{field.name}", getattr(s, field.name), f"{', '.join(OWNED_ONLY)} apply "
                                      f"to distribution: owned only: set {key}.distribution: owned, or leave "
                                      f"{field.name} out", "would be ignored by a replicated species")
            if METHODS[s.interpolation].planes:
                method = METHODS[s.interpolation]
                check_planes(cfg, f"{key}.interpolation", method.name, method.planes,
                             f"{method.instead}, or fewer devices")
        if not all(math.isfinite(g) for g in s.gravity):
            raise ConfigError(f"{key}.gravity", list(s.gravity), "every entry must be finite", "is out of range")
