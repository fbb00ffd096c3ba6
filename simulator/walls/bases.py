"""The polynomial bases across no-slip (or mixed) plates, what the no-slip family asks of its bounded basis.

A basis is a module of functions on coefficients ``(..., N)`` along the last axis (every leading axis batched over)
and its Helmholtz solver, gathered here as one :class:`Basis` under the name ``grid.walls.basis`` gives it (the
same name as the domain's axis in :data:`simulator.fft.bases.BOUNDED` and its series in :mod:`simulator.fft.walls`).
The no-slip equations (:mod:`simulator.equations.noslip_flow` and those on it) and the flow core
(:mod:`simulator.walls.flow`, :mod:`simulator.walls.wall_normal`) hold a :class:`Basis` and call nothing
basis-specific besides it.

Adding a basis: a module beside :mod:`simulator.walls.chebyshev` with the functions below and a Helmholtz class
(:class:`simulator.walls.helmholtz.Helmholtz` with its ``_bands``, ``_slopes`` and ``_solve`` of the basis), one
entry in :data:`BASES`, its axis in :mod:`simulator.fft.bases` (points, the transform's matrices) and the name in
``grid.walls.basis``'s choices.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from simulator.walls import chebyshev, helmholtz, legendre


@dataclass(frozen=True)
class Basis:
    """A basis across the plates: its name and its functions (each documented in :mod:`simulator.walls.chebyshev`,
    whose signatures every basis keeps). Static structure: hashable, compared by its functions."""

    name: str
    #: ``points(n, interval)``: the basis's ``n`` points of ``interval``, ascending, both plates among them
    points: Callable[..., Any]
    #: ``forward(values)``: the coefficients of the values at the points (last axis), real or complex
    forward: Callable[..., Any]
    #: ``backward(coefficients)``: the values at the points
    backward: Callable[..., Any]
    #: ``derivative(coefficients, length, order)``: the coefficients of d^order/dz^order on an interval of ``length``
    derivative: Callable[..., Any]
    #: ``padded_size(n)``: the points a product of two series of ``n`` coefficients is formed on, exactly
    padded_size: Callable[[int], int]
    #: ``product(a, b)``: the first n coefficients of a product of two series of n coefficients, exactly
    product: Callable[..., Any]
    #: ``integrals(n)``: the integral over [-1, 1] of each basis polynomial, ``(n,)``
    integrals: Callable[[int], Any]
    #: ``weights(n, length)``: quadrature weights at the ``n`` points of an interval of ``length``, ``(n,)``
    weights: Callable[..., Any]
    #: ``boundary_values(coefficients)``: the series' values at the lower and the upper plate
    boundary_values: Callable[..., Any]
    #: ``slopes(coefficients, length)``: d/dz at the lower and the upper plate
    slopes: Callable[..., Any]
    #: the Helmholtz problems (alpha - d^2/dz^2) u = f with a value or a slope at each plate: ``build``,
    #: ``with_conditions``, ``solve`` (:class:`simulator.walls.helmholtz.Helmholtz`'s)
    helmholtz: type


def _of(module: Any, solver: type) -> Basis:
    return Basis(module.NAME, module.points, module.forward, module.backward, module.derivative, module.padded_size,
                 module.product, module.integrals, module.weights, module.boundary_values, module.slopes, solver)


#: the bases by the name ``grid.walls.basis`` gives them
BASES = {"chebyshev": _of(chebyshev, helmholtz.Helmholtz), "legendre": _of(legendre, legendre.Helmholtz)}
CHEBYSHEV = BASES["chebyshev"]


def of(name: str) -> Basis:
    """The basis named ``name`` (a key of :data:`BASES`)."""
    if name not in BASES:
        raise ValueError(f"basis {name!r}: one of {', '.join(BASES)}")
    return BASES[name]
