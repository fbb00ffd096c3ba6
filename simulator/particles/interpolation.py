"""How u is evaluated at the particles: the interpolation methods, one registry entry each (no JAX here).

A method (:class:`Interpolation`) declares everything the config checks, the start-up checks, the
planner and the right-hand side ask of it, so that adding a method is one entry in :data:`METHODS` (a grid
method on a new window also declares that window, :mod:`simulator.fft.stencils`):

* ``route``: the spectrally exact sum of the velocity spectrum at the points
  (:meth:`simulator.fft.base.FFTBackend.evaluate_at`, ``"direct"`` or by a type-2 ``"nufft"``), or None
  for an interpolant of the grid values (:meth:`~simulator.fft.base.FFTBackend.interpolate_local`, one
  more inverse FFT of u per stage and a halo exchange);
* ``window``: that interpolant's window of grid nodes, a name of :data:`simulator.fft.stencils.STENCILS`
  (None for a route), whose nodes give ``planes``, the grid planes a device must hold along every sharded
  axis (the halo taken from a neighbour; 0: no condition);
* ``platforms`` and ``platform_note``: where it runs, when not everywhere, and why;
* ``unavailable``: a check at start-up, on the run's FFT backend (why not, or None);
* ``work``: what one evaluation costs per device, for ``simulator plan``;
* ``instead``: the methods a run refused this one is told to use.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simulator.fft.stencils import STENCILS


def _nufft_unavailable(fft: Any) -> str | None:
    """Why the NUFFT route cannot serve this backend (jax-finufft missing, or a layout it cannot take)."""
    from simulator.fft.points import check_nufft, nufft_available

    return nufft_available() or check_nufft(fft)


@dataclass(frozen=True)
class Interpolation:
    """One interpolation method of ``particles[].interpolation`` (see the module docstring)."""

    name: str
    doc: str
    route: str | None
    work: Callable[[int], str]
    instead: str = ""
    window: str | None = None
    platforms: tuple[str, ...] | None = None
    platform_note: str = ""
    unavailable: Callable[[Any], str | None] | None = None

    @property
    def planes(self) -> int:
        """The grid planes a device must hold along every sharded axis: its window's (0 for a route)."""
        return STENCILS[self.window].planes if self.window is not None else 0

    def evaluate(self, fft: Any, u_hat: Any, points: Any, ops: Any, box: Any) -> Any:
        """u at ``points`` ``(Np, 3)`` from the velocity spectrum ``u_hat`` on ``fft`` (``ops``: the flow's
        spectral operators), ``(3, Np)``."""
        if self.route is not None:
            return fft.evaluate_at(u_hat, points, ops.k, ops.weight, self.route, box)
        return self.interpolate(fft, fft.irfft(u_hat), points, box)

    def interpolate(self, fft: Any, grid: Any, points: Any, box: Any, owned: bool = False, reach: int = 0,
                    live: Any = None) -> Any:
        """The real-space ``grid`` ``(*batch, Nx, Ny, Nz)`` on ``fft`` at ``points`` ``(Np, 3)`` by this method's
        window: ``(*batch, Np)`` (``owned``, ``reach``, ``live``:
        :meth:`~simulator.fft.base.FFTBackend.interpolate_local`'s)."""
        return fft.interpolate_local(grid, points, box, self.window, owned=owned, reach=reach, live=live)


#: the methods, by name, in the order the config's doc lists them
METHODS: dict[str, Interpolation] = {m.name: m for m in (
    Interpolation("exact", "the spectral sum over every mode, cost ~ N^3 per particle", "direct",
                  lambda modes: f"{3 * modes:.3g} complex multiply-adds per particle (3 components x {modes} "
                                "modes per device)"),
    Interpolation("nufft", "the same sum by a type-2 NUFFT per device, to 1e-14 in float64; needs jax-finufft, CPU",
                  "nufft", lambda modes: f"a type-2 NUFFT of {modes} modes per device, then ~16^3 x 3 per particle",
                  instead="exact or lagrange4", platforms=("cpu",),
                  platform_note="the installed jax-finufft runs on CPU only", unavailable=_nufft_unavailable),
    Interpolation("lagrange4", "tricubic on the grid, 4th order in dx, cost 64 per particle, one more inverse FFT "
                  "of u per stage", None, lambda modes: "64 x 3 multiply-adds per particle, and one more inverse "
                  "FFT of u", instead="exact", window="lagrange4"),
)}
#: the names, the choices of ``particles[].interpolation``
INTERPOLATIONS = tuple(METHODS)


def doc() -> str:
    """The doc of the ``particles[].interpolation`` key: every method with its own doc."""
    parts = [f"{m.name} ({m.doc})" for m in METHODS.values()]
    return f"u at the particles: {', '.join(parts[:-1])} or {parts[-1]}"
