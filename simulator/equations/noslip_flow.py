"""What every equation between no-slip plates shares, convection (:mod:`simulator.equations.noslip`) and the channel
(:mod:`simulator.equations.channel_flow`) alike: the layout of their walled spectra, the velocity rebuilt
from the state of :mod:`simulator.walls.flow`, the explicit terms of the velocity-vorticity formulation (the
products in rotational form), the step on the flow core, the volume means. An equation of the family says its flow
core's plates and parameters (:meth:`NoSlipEquation.core`), the sources it adds to the products (buoyancy:
:meth:`NoSlipEquation._sources`), its state from fields and its outputs; one whose products need the advective form
gives its own :meth:`NoSlipEquation._advected` (the channel's mean shear: :mod:`simulator.equations.channel_flow`).

Layout: the state is a :class:`simulator.walls.flow.State` of walled spectra (``forward_walls(x, basis.name)``: NumPy's
FFT along the periodic axes, unnormalised, by the coefficients across the plates of the run's basis, Chebyshev or
Legendre: :mod:`simulator.walls.bases`, which is all the family asks of the basis)
on the backend's grid ``(Nx, Ny, Nz)`` (a plane's ``(1, Nx, Nz)``: its x the grid's second axis, no y); z is the
direction across the plates, whatever a config calls it. The arrays are held in the real layout (split along the
grid's first or second axis, whole along z), so each device solves its modes' columns whole; the transforms' own
layout is restored around each transform. Velocity components are listed along the plates first, the wall-normal
one last: (u, w) in a plane, (u, v, w) in a box. On one device the steps run on another layout
(:meth:`NoSlipEquation.stepping`, :class:`simulator.fft.walls.KeptHalf`): the columns the 2/3 rule keeps of the half
k_y >= 0 alone, which a chunk gathers from the state at its start and spreads back at its end.

The explicit terms, per stage: (u, v) from continuity and zeta (:func:`simulator.walls.wall_normal.
horizontal_velocity`; in a plane u = i dw/dz / k_x), (U, V) at k_x = k_y = 0; the products on the grid, H = u x omega
(rotational form: :meth:`NoSlipEquation._advected` says why the gradient of |u|^2/2 may be dropped) and -(u .
grad) s for each scalar, transformed back and dealiased by the 2/3 rule along the periodic axes (|m| < N/3) and
along the coefficients across the plates (degrees k < 2 Nz/3), the equation's linear sources added to those spectra
(truncated alike: :meth:`NoSlipEquation._sources`), then h_w = -k^2 H_z
- d/dz (i k_x H_x + i k_y H_y) (the curl of the curl: the pressure eliminated), h_zeta = i k_x H_y - i k_y H_x,
h_(U, V) the k = 0 entries of (H_x, H_y), h_s.
"""

from __future__ import annotations

import abc
import copy
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from simulator.equations.base import ImexEquation, Params
from simulator.equations.scalars import field_info
from simulator.equations.spec import FieldInfo
from simulator.fft import FFTBackend
from simulator.fft.bases import BOUNDED
from simulator.fft.walls import KeptHalf
from simulator.walls import bases, flow
from simulator.walls.wall_normal import horizontal_velocity

#: where each of a state's spectra lives (:attr:`NoSlipEquation.space`)
_SPACES = {"w": "real", "zeta": "real", "mean": "particles", "scalars": "real"}


class NoSlipEquation(ImexEquation):
    """The skeleton of an equation between no-slip plates on a plane or a box (module docstring); a subclass gives
    :meth:`core` and its state's fields and outputs."""

    # the spectra are held in the real layout (module docstring); the mean flow, a profile across the plates, whole
    # on every device, as the replicated leaves are kept; a multistep scheme's history (flow.State.history: M X and F
    # of the step before, laid out as the state, and that step's dt, replicated) is checkpointed with them
    space: ClassVar[dict[str, str]] = {**_SPACES, "history.dt": "particles", **{
        f"history.{part}.{name}": where for part in ("mass", "explicit") for name, where in _SPACES.items()}}
    _LEAVES: ClassVar[tuple[str, ...]] = ("kx", "ky", "keep")
    _STATIC: ClassVar[tuple[str, ...]] = (*ImexEquation._STATIC, "half")

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, physics: Any = None):
        super().__init__(fft, box, dtype, physics)
        k = fft.wall_wavenumbers(tuple(self.box), self.dtype)
        # a plane's x is the grid's second axis; a box's x and y its first two
        self.kx, self.ky = (k[1], jnp.zeros_like(k[1])) if self.plane else (k[0], k[1])
        #: each axis's 2/3 rule, its basis's own (the domain's: |m| < N/3 along the plates, degree < 2N/3 across)
        self.keep = fft.domain_keep(self.box, self.dtype)
        #: the layout of the spectra the methods take: None, the state's (full along the plates); a
        #: :class:`~simulator.fft.walls.KeptHalf`, the kept columns of the half spectrum the steps run on, on one
        #: device (:meth:`stepping`)
        self.half: KeptHalf | None = None

    def stepping(self) -> NoSlipEquation:
        """This equation on the layout its steps run on: on one device the kept columns of the half spectrum
        (:class:`~simulator.fft.walls.KeptHalf`: its wavenumbers and 2/3 rules on those columns, its transforms to and
        from them), elsewhere itself. A step there touches no column the 2/3 rule drops (a third of a plane's
        columns, 2/9 of a box's, are all it transforms, differentiates and solves, and all a chunk carries): a chunk
        gathers the state's columns at its start (:meth:`to_stepping`) and spreads them at its end
        (:meth:`from_stepping`)."""
        if self.fft.devices != 1 or self.half is not None:
            return self
        out = copy.copy(self)
        out.half = KeptHalf(self.fft.shape[0], self.fft.shape[1])
        out.kx, out.ky = out.half.select(self.kx), out.half.select(self.ky)
        out.keep = tuple(out.half.select(k) for k in self.keep)
        return out

    def to_stepping(self, state: flow.State) -> flow.State:
        """``state`` (this equation's layout) on :meth:`stepping`'s."""
        on = self.stepping()
        return state if on is self else on._relaid(state, on.half.gather)

    def from_stepping(self, state: flow.State) -> flow.State:
        """Inverse of :meth:`to_stepping`: the whole spectra, zero outside the kept columns, in this layout's
        sharding."""
        on = self.stepping()
        return state if on is self else self._relaid(state, lambda k: self._columns(on.half.spread(k)))

    def _relaid(self, state: flow.State, move: Callable[[jax.Array], jax.Array]) -> flow.State:
        """``state`` with ``move`` applied to each of its spectra (w, zeta, the scalars, and those of the history a
        multistep scheme carries), the mean flow and the history's dt as they are."""
        def one(x: flow.State) -> flow.State:
            return replace(x, w=move(x.w), zeta=None if x.zeta is None else move(x.zeta),
                           scalars=None if x.scalars is None else move(x.scalars))

        history = state.history
        if history is not None:
            history = replace(history, mass=one(history.mass), explicit=one(history.explicit))
        return replace(one(state), history=history)

    @property
    def hermitian(self) -> bool:
        """Whether the flow core's modes are the whole spectrum of real fields (one device, the state's layout):
        its solves then hold the half k_y >= 0 and make the rest their conjugates."""
        return self.fft.devices == 1 and self.half is None

    @property
    def basis(self) -> bases.Basis:
        """The polynomials across the plates, the bounded axis's (``grid.walls.basis``): all that is basis-specific
        (:mod:`simulator.walls.bases`)."""
        return bases.of(self.fft.basis)

    @property
    def kept_columns(self) -> tuple[tuple[tuple[int, int], ...] | None, ...]:
        """The columns (k_x, k_y) the stage solves hold: the runs the 2/3 rule keeps along each grid axis of the
        plates that is whole on a device (:meth:`simulator.fft.domain.DomainSpectra.kept_columns`); every one on
        the kept half's layout (it holds those alone)."""
        return (None, None) if self.half is not None else self.fft.kept_columns(self.box)

    @property
    def plane(self) -> bool:
        """Whether the grid is a plane (1, Nx, Nz), not a box: the declaration's dimensions."""
        return self.info.dimensions == 2

    @property
    def field_info(self) -> Mapping[str, FieldInfo]:
        """``info.fields``, with ``scalar`` holding this run's passive scalars, or absent without any."""
        return field_info(self.info.fields, len(self.physics.scalars))

    @abc.abstractmethod
    def core(self, params: Params) -> flow.NoSlipFlow:
        """The flow core of this grid's modes: viscosity, diffusivities and the plates' conditions."""

    # ---- layout --------------------------------------------------------------------------------------------

    @property
    def _axes(self) -> tuple[int, ...]:
        """The grid axes of the periodic directions, x (and y)."""
        return (1,) if self.plane else (0, 1)

    @property
    def _cells(self) -> int:
        """The number of points along the plates, Nx (Nx Ny): the spectra's normalisation."""
        return self.fft.shape[0] * self.fft.shape[1]

    def _columns(self, x: jax.Array) -> jax.Array:
        """``x`` ``(*batch, *grid)`` held whole along z (the real layout)."""
        return jax.lax.with_sharding_constraint(x, self.fft.real_sharding(x.ndim - 3))

    def _replicated(self, x: jax.Array) -> jax.Array:
        return jax.lax.with_sharding_constraint(x, self.fft.replicated_sharding())

    def _forward(self, x: jax.Array) -> jax.Array:
        """The walled spectrum of fields ``x`` ``(*batch, *grid)`` in this equation's layout: on the kept half
        (:attr:`half`), its columns alone."""
        if self.half is not None:
            return self.half.forward(self.fft.local, self.basis.name, x)
        return self._columns(self.fft.forward_walls(x, self.basis.name))

    def _kept_spectrum(self, x: jax.Array) -> jax.Array:
        """The walled spectrum of fields ``x`` ``(*batch, *grid)`` on the columns (k_x, k_y) the 2/3 rule keeps,
        zero on the others: a state made from fields holds nothing there, as the dealiased explicit terms add
        nothing there, so the stage solves hold the kept columns alone (:attr:`kept_columns`). The Nyquist modes
        are among the others (a real field's coefficient at m = -N/2 is real, so the velocity rebuilt from it by
        continuity would be imaginary: no real field)."""
        return jnp.where(self.keep[0] * self.keep[1] != 0, self._forward(x), 0)

    def _inverse(self, k: jax.Array) -> jax.Array:
        """The fields of a walled spectrum ``k`` ``(*batch, *grid)`` in this equation's layout."""
        if self.half is not None:
            return self.half.inverse(self.fft.local, self.basis.name, k)
        return self.fft.inverse_walls(jax.lax.with_sharding_constraint(k, self.fft.spectral_sharding(k.ndim - 3)),
                                      self.basis.name)

    def _dz(self, k: jax.Array) -> jax.Array:
        """d/dz across the plates of a series of the basis."""
        return self.basis.derivative(k, self.box[2])

    def _mean_mode(self) -> jax.Array:
        return (self.kx == 0) & (self.ky == 0)

    def _mean_of(self, hat: jax.Array) -> jax.Array:
        """The horizontal mean's coefficients ``(Nz,)`` of a walled spectrum."""
        return jnp.real(jnp.sum(jnp.where(self._mean_mode(), hat, 0.0), axis=(0, 1))) / self._cells

    def _dealias(self) -> jax.Array:
        """The 2/3 rule along each periodic direction and along the coefficients across the plates (their degrees)."""
        return self.keep[0] * self.keep[1] * self.keep[2]

    def heights(self) -> jax.Array:
        """z of the grid points, ``(1, 1, Nz)``: the basis's Gauss-Lobatto points, both plates among them."""
        return jnp.asarray(self.points(), self.dtype)[None, None]

    def points(self) -> np.ndarray:
        """z of the grid points across the plates, ``(Nz,)`` float64: the bounded axis's
        (:mod:`simulator.fft.bases`)."""
        return BOUNDED[self.basis.name](self.fft.shape[2], self.box[2]).points()

    def _weights(self) -> jax.Array:
        """The basis's quadrature weights across the plates over the gap (Clenshaw-Curtis on Chebyshev's points):
        a mean's ``(Nz,)``."""
        return jnp.asarray(self.basis.weights(self.fft.shape[2], self.box[2]) / self.box[2], self.dtype)

    def _volume_mean(self, f: jax.Array) -> jax.Array:
        """The mean over the domain of a grid field ``(..., *grid)``: :meth:`_weights` across the plates."""
        return jnp.sum(jnp.mean(f, axis=(-3, -2)) * self._weights(), axis=-1)

    # ---- the velocity and the explicit terms ----------------------------------------------------------------

    def _components(self) -> tuple[str, ...]:
        return ("u", "w") if self.plane else ("u", "v", "w")

    def _directions(self) -> tuple[str, ...]:
        return ("x", "z") if self.plane else ("x", "y", "z")

    def _slopes(self) -> list[Callable[[jax.Array], jax.Array]]:
        """The derivatives of a walled spectrum along the :meth:`_directions`: i k_x, (i k_y,) d/dz."""
        along = [lambda k: 1j * self.kx * k] + ([] if self.plane else [lambda k: 1j * self.ky * k])
        return [*along, self._dz]

    def velocity_hat(self, state: flow.State) -> tuple[jax.Array, ...]:
        """The velocity's spectra, (u, w) in a plane, (u, v, w) in a box: by continuity and zeta, (U, V) (times the
        spectrum's normalisation) at k_x = k_y = 0."""
        mean = self._mean_mode()
        if self.plane:
            u = 1j * self._dz(state.w) / jnp.where(mean, 1.0, self.kx)
            return jnp.where(mean, self._cells * state.mean[0], u), state.w
        u, v = horizontal_velocity(state.w, state.zeta, jnp.where(mean, 1.0, self.kx)[..., 0], self.ky[..., 0],
                                   self.box[2], self.basis)
        return (jnp.where(mean, self._cells * state.mean[0], u), jnp.where(mean, self._cells * state.mean[1], v),
                state.w)

    def _spectra(self, state: flow.State) -> tuple[Callable[[jax.Array], jax.Array], int]:
        """``(spectrum, count)``: ``spectrum(i)`` the i-th of the velocity components' spectra and the scalars', for
        a traced ``i`` (a switch, not an index into their stack: a stack would hold a second copy of them all)."""
        # one dtype for the switch's branches: in float32 the mean flow's factor would make u complex128
        scalars = () if state.scalars is None else tuple(state.scalars)
        bases = tuple(b.astype(state.w.dtype) for b in (*self.velocity_hat(state), *scalars))
        return (lambda i: jax.lax.switch(i, [lambda b=b: b for b in bases])), len(bases)

    def _in_turn(self, state: flow.State, slopes: Sequence[Callable[[jax.Array], jax.Array]],
                 picked: Sequence[int]) -> jax.Array:
        """The grid fields ``slopes[i % len(slopes)]`` of spectrum ``i // len(slopes)`` (:meth:`_spectra`: the
        velocity's, then the scalars'), for each ``i`` of ``picked``, ``(len(picked), *grid)``: one formed and
        transformed at a time (a loop, not one batch, whose spectra and work space would be its program's largest
        memory)."""
        spectrum, _ = self._spectra(state)
        count = len(slopes)
        return jax.lax.map(lambda i: self._inverse(jax.lax.switch(i % count, tuple(slopes), spectrum(i // count))),
                           jnp.asarray(picked))

    def _vorticity_hat(self, state: flow.State) -> list[jax.Array]:
        """The vorticity's spectra: omega_y = du/dz - dw/dx in a plane; (omega_x, omega_y, omega_z) in a box."""
        if self.plane:
            u, w = self.velocity_hat(state)
            return [self._dz(u) - 1j * self.kx * w]
        u, v, w = self.velocity_hat(state)
        return [1j * self.ky * w - self._dz(v), self._dz(u) - 1j * self.kx * w, 1j * self.kx * v - 1j * self.ky * u]

    def _sources(self, hat: jax.Array, state: flow.State) -> jax.Array:
        """The products' dealiased spectra ``hat`` ``(C + S, *grid)`` with the equation's linear explicit sources added
        from ``state``'s spectra: none here. A linear term is added to the spectra, not to the products on the grid:
        one inverse transform fewer a field, the same sum to round-off once it is truncated as the products are
        (:meth:`_truncated`)."""
        return hat

    def _truncated(self, hat: jax.Array) -> jax.Array:
        """``hat`` dealiased as the products are: the 2/3 rule along each periodic direction (the kept half holds
        those columns alone) and along the coefficients across the plates (their degrees)."""
        return hat * (self.keep[2] if self.half is not None else self._dealias())

    def _advected(self, state: flow.State) -> jax.Array:
        """u x omega for the C velocity components and -(u . grad) s for each scalar on the grid, ``(C + S, *grid)``.
        The rotational form, -(u . grad) u = u x omega - grad |u|^2/2, drops the gradient: h_w's curl of the curl and
        h_zeta's curl remove it, the mean flow's horizontal averages hold none. It transforms the vorticity (1 field,
        3 in a box), not the velocity's gradient (4, 9): 5 inverse transforms a plane's stage with one scalar, not 8;
        9 a box's, not 15. The forms differ by the dropped gradient's aliasing (its dealiased products are no
        spectral gradient)."""
        spectrum, count = self._spectra(state)
        c = len(self._components())
        fields = jax.lax.map(lambda i: self._inverse(spectrum(i)), jnp.arange(c))
        omega = [self._inverse(o) for o in self._vorticity_hat(state)]
        if self.plane:  # u = (u, w), omega = omega_y: u x omega = (-w omega_y, u omega_y)
            velocity = [-fields[1] * omega[0], fields[0] * omega[0]]
        else:
            u, v, w = fields[0], fields[1], fields[2]
            velocity = [v * omega[2] - w * omega[1], w * omega[0] - u * omega[2], u * omega[1] - v * omega[0]]
        advected = jnp.stack(velocity)
        if count > c:
            slopes = self._slopes()

            def one(i: jax.Array) -> jax.Array:
                f = spectrum(i)
                return -sum(fields[j] * self._inverse(slope(f)) for j, slope in enumerate(slopes))

            advected = jnp.concatenate([advected, jax.lax.map(one, jnp.arange(c, count))])
        return advected

    def explicit(self, state: flow.State, t: jax.Array) -> flow.State:
        """h_w, h_zeta (a box's), h_(U, V) and h_s of the module docstring."""
        hat = self._sources(self._truncated(self._forward(self._advected(state))), state)
        c = len(self._components())
        mean = [self._mean_of(hat[i]) for i in range(c - 1)]
        if self.plane:
            mean.append(jnp.zeros_like(mean[0]))
            h_w, zeta = -self.kx**2 * hat[1] - 1j * self.kx * self._dz(hat[0]), None
        else:
            h_w = -(self.kx**2 + self.ky**2) * hat[2] - self._dz(1j * self.kx * hat[0] + 1j * self.ky * hat[1])
            zeta = 1j * self.kx * hat[1] - 1j * self.ky * hat[0]
        return flow.State(h_w, zeta, self._replicated(jnp.stack(mean)), None if state.scalars is None else hat[c:])

    def carried(self, state: flow.State) -> flow.State:
        """``state`` with the history of the scheme the equation carries (:meth:`carrying`), none held: the scheme's
        start step comes first. What every state made from fields ends with."""
        if self.scheme is None:
            return state
        # laid out as the state's leaves (:attr:`space`), so that the chunk compiled for it takes the state as made
        paths, tree = jax.tree_util.tree_flatten_with_path(self.scheme.empty(state))
        leaves = [(self._columns if self.space["history" + jax.tree_util.keystr(p)] == "real" else self._replicated)(z)
                  for p, z in paths]
        return replace(state, history=jax.tree.unflatten(tree, leaves))

    def imex_factor(self, dt: jax.Array, params: Params, tableau: Any) -> flow.Factored:
        """The stage solves' factorisations for ``dt`` and ``tableau`` on this equation's columns, built once for a
        chunk of steps of one dt."""
        return self.core(params).factor(dt, tableau)

    def imex_step(self, state: flow.State, t: jax.Array, dt: jax.Array, params: Params, tableau: Any,
                  factored: flow.Factored | None = None) -> flow.State:
        """One step of ``state``, in this equation's layout (:attr:`half`; the schemes step on :meth:`stepping`'s)."""
        return self.core(params).step(self.explicit, dt, tableau, factored)(state, t)
