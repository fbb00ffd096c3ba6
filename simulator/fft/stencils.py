"""The windows of grid nodes around points, declared once without JAX: which nodes each takes, its order and its
number in the native kernels, read by the config's checks, the particles' interpolation methods and the JAX
weights alike.

A window takes the nodes floor(s) - below .. floor(s) + above of a point at s = x / dx along each axis (their
tensor product in 3D). Its weight functions (JAX) are :data:`simulator.fft.window.WINDOWS`, keyed by these
names; the native kernels (simulator/fft/native/particles_ffi.cc) know each by its ``code``. Who reads it:

* the flow particles' grid interpolation (:data:`simulator.particles.interpolation.METHODS`, ``lagrange4``): the
  halo planes a device takes from its neighbours;
* the cold particles' particle-mesh window (``physics.cdm_window``, :mod:`simulator.equations.cold`): its
  choices (:data:`ASSIGNMENTS`), their doc, the least grid and the planes per device.

A new window is an entry here, its weight function in :mod:`simulator.fft.window`, and its weights in the native
kernels (``code``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Stencil:
    """One window: ``below`` and ``above`` the nodes it takes on each side of a point's cell along an axis;
    ``order`` the power p of its transform, prod_i sinc(k_i dx_i / 2)^p (0: an interpolant, not a particle-mesh
    assignment function); ``code`` its number in the native kernels; ``doc`` what a config's doc says of it."""

    name: str
    below: int
    above: int
    doc: str
    order: int = 0
    code: int = 0

    @property
    def width(self) -> int:
        """Nodes per axis."""
        return self.below + self.above + 1

    @property
    def planes(self) -> int:
        """The grid planes a device must hold along every sharded axis: its halo from a neighbour on either
        side is at most this many planes."""
        return max(self.below, self.above)

    @property
    def least_grid(self) -> int:
        """The fewest nodes along an axis that a window's nodes on both sides of a cell fit in without
        meeting themselves across the periodic wrap."""
        return 2 * (self.below + self.above)


#: the windows by name: an interpolant (lagrange4) and the particle-mesh assignment functions (cic, tsc)
STENCILS: dict[str, Stencil] = {s.name: s for s in (
    Stencil("lagrange4", 1, 2, "tricubic Lagrange interpolant, 4 x 4 x 4 nodes", code=0),
    Stencil("cic", 0, 1, "cloud in cell, 2 x 2 x 2 nodes", order=2, code=1),
    Stencil("tsc", 1, 2, "triangular-shaped cloud, 3 x 3 x 3", order=3, code=2),
)}
#: the particle-mesh assignment functions (an order), the choices of ``physics.cdm_window``
ASSIGNMENTS = tuple(name for name, s in STENCILS.items() if s.order)
