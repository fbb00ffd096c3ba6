"""A flow equation with Lagrangian particles: its state, right-hand side and stepping (JAX).

:class:`WithParticles` composes any semi-linear flow equation (one that defines
``velocity_spectrum(state)``: Navier-Stokes with or without passive scalars, Boussinesq, MHD) with the
species of the ``particles`` config section (:mod:`simulator.particles`), without changing its physics:

* the state is a dict ``{"state": <the flow's state>, "particles.<name>.position": (Np, 3),
  "particles.<name>.velocity": (Np, 3) (inertial species only)}``; particle arrays are replicated (every
  device holds all of them) in the run's dtype, or for a species with ``distribution: owned`` kept by the
  device whose block holds them, in slots with identities and a loss count (:mod:`.owned`: handed over
  after each step by :meth:`WithParticles.settle`, interpolated by ``lagrange4`` on the owner);
* ``exp_linear`` applies the flow's integrating factor to ``flow`` and the identity to the particles
  (their drag is integrated explicitly, within the scheme's stability limit:
  :func:`simulator.particles.setup.drag_limit`), and
  ``nonlinear`` adds dx/dt = u(x) for tracers, or dx/dt = v and dv/dt = (u(x) - v)/tau_p + g for
  inertial particles, so particles advance in the same Runge-Kutta stages as the field, at the scheme's
  order (each stage's u(x) is the stage's own field);
* u(x) is the spectrally exact interpolant of the stage's velocity spectrum
  (:meth:`simulator.fft.base.FFTBackend.evaluate_at`: each device sums its own modes, directly or by a
  type-2 NUFFT for ``interpolation: nufft``, one psum), or
  for species with ``interpolation: lagrange4`` the tricubic interpolant of its grid values
  (:meth:`~simulator.fft.base.FFTBackend.interpolate_local`: one more inverse FFT of u per stage, a
  halo exchange, one psum); one evaluation per method and stage for all the species using it, as the
  method's entry of :data:`simulator.particles.interpolation.METHODS` says.

Positions are stored *unwrapped* (continuous trajectories, what dispersion statistics need; the
spectral sum is periodic, so no wrapping is needed to evaluate u). Outputs write them wrapped into
[0, L) as well. A plane's state holds them in its box's axis order, (0, x, y) (:mod:`simulator.fft.plane`), and
:meth:`WithParticles.particles` gives the outputs (x, y, 0). In float32 an unwrapped coordinate far from the box
loses absolute precision (|x| eps): after travelling 1000 box lengths, ~1e-4 L.

Everything else (fields, diagnostics, spectra, layouts, initial conditions) is the flow's, read from
``state["state"]``; attributes the wrapper does not define are the flow's (``fft``, ``ops``, ``box``...).

A flow is made to carry the configured species by :func:`simulator.particles.setup.with_particles` (checks and
initial positions), and a state read from a file keeps the particles it holds
(:func:`simulator.run.particle_states.from_source`); what is particular to owned species lives in :mod:`.owned`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import jax
import jax.numpy as jnp
import numpy as np

from simulator.equations.base import (
    Equation,
    Params,
    ParticleArrays,
    SemiLinearEquation,
)
from simulator.fft import plane
from simulator.fft.particle_slots import Loss, Room
from simulator.particles import owned as owning, wrap_bound
from simulator.particles.interpolation import METHODS
from simulator.particles.species import Species

#: the flow's part of the state: named like a bare flow state's one array, so that a checkpoint's flow
#: array reads back into the flow alone (a restart at another resolution remaps it as any other)
FLOW = "state"


def position_key(name: str) -> str:
    """The state key of a species' positions (also its dataset name in checkpoints)."""
    return f"particles.{name}.position"


def velocity_key(name: str) -> str:
    """The state key of an inertial species' velocities."""
    return f"particles.{name}.velocity"


class WithParticles(SemiLinearEquation):
    """A semi-linear flow equation plus particle species (see the module docstring).

    Leaves: ``flow`` (the flow equation, itself a pytree), ``start`` (each species' initial
    positions, ``(Np, 3)`` replicated: leaves, so compiled code closes over no array) and ``drag`` (each
    inertial species' ``tau_p`` and ``gravity``, replicated: traced, so that runs that differ only in them
    share one compiled program); static: ``species`` (the config's sections: counts, interpolation, and
    whether a species is inertial are structure). An owned species' ``start`` is its state entries
    (:func:`.owned.distribute`), not a replicated array.
    """

    _LEAVES: ClassVar[tuple[str, ...]] = ("flow", "start", "drag")
    _STATIC: ClassVar[tuple[str, ...]] = ("species",)

    def __init__(self, flow: Equation, species: Sequence[Species], start: Mapping[str, jax.Array]):
        if not callable(getattr(flow, "velocity_spectrum", None)) or not isinstance(flow, SemiLinearEquation):
            raise TypeError(f"{type(flow).__name__} carries no particles: it needs velocity_spectrum(state) and "
                            "the semilinear protocol")
        self.flow, self.species, self.start = flow, tuple(species), dict(start)
        # arguments, not constants of the program: a number closed over would be baked into its text, and
        # every other tau_p or gravity would compile the chunk again (a sweep point, a rerun)
        flat = plane.holds_plane(flow.fft.shape)
        self.drag = {s.name: (flow.fft.replicated(np.float64(s.tau_p), flow.dtype),
                              flow.fft.replicated(np.asarray(plane.box_vector(s.gravity, flat), np.float64),
                                                  flow.dtype))
                     for s in self.species if s.inertial}

    def __getattr__(self, name: str) -> Any:
        # only reached for attributes the wrapper lacks: those are the flow's (fft, ops, box, info, ...)
        if name in ("flow", "start", "drag", "species") or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self.flow, name)

    # ---- what is the flow's ---------------------------------------------------------------------------

    def params(self, physics: Any) -> Params:
        return self.flow.params(physics)

    @property
    def field_info(self):  # type: ignore[override]
        return self.flow.field_info

    @property
    def state_fields(self) -> tuple[str, ...]:  # type: ignore[override]
        return self.flow.state_fields

    @property
    def builders(self):  # type: ignore[override]
        return self.flow.builders

    @property
    def snapshot_sources(self):  # type: ignore[override]
        return self.flow.snapshot_sources

    def field_layouts(self) -> dict[str, jax.ShapeDtypeStruct]:
        return self.flow.field_layouts()

    def state_fields_from_snapshot(self, fields: Mapping[str, jax.Array]) -> dict[str, jax.Array]:
        return self.flow.state_fields_from_snapshot(fields)

    def at(self, t: jax.Array) -> WithParticles:
        flow = self.flow.at(t)
        if flow is self.flow:
            return self
        out = object.__new__(type(self))
        out.flow, out.species, out.start, out.drag = flow, self.species, self.start, self.drag
        return out

    def at_stage(self, step: jax.Array, shift: jax.Array) -> WithParticles:
        """The flow's :meth:`~simulator.equations.base.SemiLinearEquation.at_stage` (its phase shifts)."""
        flow = self.flow.at_stage(step, shift)
        if flow is self.flow:
            return self
        out = object.__new__(type(self))
        out.flow, out.species, out.start, out.drag = flow, self.species, self.start, self.drag
        return out

    def leaf_spaces(self, state: Any) -> list[str]:
        """The flow's leaves' spaces, then "particles" for every particle array (replicated, neither
        real-space nor spectral: stored whole)."""
        spaces = {key: ["particles"] * len(jax.tree.leaves(value)) for key, value in state.items()}
        spaces[FLOW] = self.flow.leaf_spaces(state[FLOW])
        return [space for key in sorted(state) for space in spaces[key]]  # a dict flattens in sorted key order

    def owned_leaves(self, state: Any) -> set[str]:
        """The owned species' slots (:func:`.owned.keys`, not ``lost``, replicated)."""
        return {key for s in self.species if s.owned for role, key in owning.keys(s.name).items()
                if role != "lost" and (s.inertial or role != "velocity")}

    def fields(self, state: Any, params: Params) -> dict[str, jax.Array]:
        return self.flow.fields(state[FLOW], params)

    def field(self, state: Any, params: Params, name: str, component: jax.Array) -> jax.Array:
        return self.flow.field(state[FLOW], params, name, component)

    def diagnostics(self, state: Any, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        return self.flow.diagnostics(state[FLOW], dt, params)

    def spectra(self, state: Any, params: Params) -> dict[str, jax.Array]:
        return self.flow.spectra(state[FLOW], params)

    # ---- states ----------------------------------------------------------------------------------------

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> Any:
        """The flow's state from its fields, with every species at its configured initial positions."""
        return self.attach(self.flow.from_fields(fields, params))

    def attach(self, flow_state: Any, positions: Mapping[str, jax.Array] | None = None) -> dict[str, Any]:
        """A full state: ``flow_state`` plus each species at ``positions`` (by species name; default the
        configured start). Inertial particles start with the fluid's velocity at their positions."""
        positions = self.start if positions is None else positions
        state: dict[str, Any] = {FLOW: flow_state}
        for s in self.species:
            if s.owned:  # the laid-out entries; velocities below
                state.update({k: v for k, v in positions[s.name].items() if k != velocity_key(s.name)})
            else:
                state[position_key(s.name)] = jnp.asarray(positions[s.name], self.dtype)
        inertial = [s for s in self.species if s.inertial]
        u = self._velocity_at(flow_state, inertial, [state[position_key(s.name)] for s in inertial],
                              [state.get(owning.keys(s.name)["live"]) for s in inertial]) if inertial else []
        for s, us in zip(inertial, u, strict=True):
            state[velocity_key(s.name)] = us
        return state

    def positions(self, state: Mapping[str, Any]) -> dict[str, jax.Array]:
        """Each species' (unwrapped) positions ``(Np, 3)``, by name."""
        return {s.name: state[position_key(s.name)] for s in self.species}

    def velocities(self, state: Mapping[str, Any]) -> dict[str, jax.Array]:
        """Each species' velocity ``(Np, 3)``: v for inertial species, u(x) (interpolated) for tracers."""
        tracers = [s for s in self.species if not s.inertial]
        u = self._velocity_at(state[FLOW], tracers, [state[position_key(s.name)] for s in tracers],
                              [state.get(owning.keys(s.name)["live"]) for s in tracers]) if tracers else []
        out = dict(zip((s.name for s in tracers), u, strict=True))
        out.update({s.name: state[velocity_key(s.name)] for s in self.species if s.inertial})
        return {s.name: out[s.name] for s in self.species}

    def particles(self, state: Mapping[str, Any], params: Params) -> dict[str, ParticleArrays]:
        """Every species (:class:`~simulator.equations.base.ParticleArrays`), in config order: its unwrapped
        positions and :meth:`velocities` (a plane's as ``(x, y, 0)``, :data:`simulator.fft.plane.FILE_ORDER`), as
        replicated rows (no ``ident`` or ``live``) or, for an owned
        species, its slots with their identities and occupancy."""
        velocities = self.velocities(state)
        # a plane's box coordinates (z, x, y) as its files give them, (x, y, 0)
        order = list(plane.FILE_ORDER) if plane.holds_plane(self.fft.shape) else slice(None)
        out = {}
        for s in self.species:
            k = owning.keys(s.name)
            extra = (state[k["ident"]], state[k["live"]]) if s.owned else ()
            out[s.name] = ParticleArrays(state[position_key(s.name)][:, order], velocities[s.name][:, order], *extra)
        return out

    def _velocity_at(self, flow_state: Any, species: Sequence[Species], positions: Sequence[jax.Array],
                     live: Sequence[jax.Array | None] | None = None) -> list[jax.Array]:
        """u at each species' positions, ``(Np_i, 3)`` each: one evaluation per interpolation method over all
        the replicated species that use it (the local one after one inverse FFT of the velocity), one per
        owned species (on the owners, a halo of ``halo`` more cells; 0 in the empty slots, ``live``)."""
        u_hat = self.flow.velocity_spectrum(flow_state)
        out: list[Any] = [None] * len(species)
        owned = [i for i, s in enumerate(species) if s.owned]
        if owned:
            grid = self.fft.irfft(u_hat)
            for i in owned:
                out[i] = METHODS[species[i].interpolation].interpolate(
                    self.fft, grid, positions[i].astype(self.dtype), self.box, owned=True, reach=species[i].halo,
                    live=live[i]).T
        for method in dict.fromkeys(s.interpolation for s in species if not s.owned):
            mine = [i for i, s in enumerate(species) if s.interpolation == method and not s.owned]
            points = jnp.concatenate([jnp.asarray(positions[i], self.dtype) for i in mine])
            u = METHODS[method].evaluate(self.fft, u_hat, points, self.flow.ops, self.box)
            counts = [int(positions[i].shape[0]) for i in mine]
            for i, part in zip(mine, jnp.split(u.T, np.cumsum(counts)[:-1]), strict=True):
                out[i] = part
        return out

    # ---- the semi-linear protocol ------------------------------------------------------------------------

    def exp_linear(self, state: Any, tau: jax.Array, params: Params) -> Any:
        """The flow's exp(L tau); the identity on the particles."""
        return {**state, FLOW: self.flow.exp_linear(state[FLOW], tau, params)}

    def linear_map(self, fn: Any, state: Any, tau: jax.Array, params: Params) -> Any:
        """The flow's fn(L tau); fn(0) on the particles (no linear part: an ETD scheme is its Runge-Kutta
        limit for them, classical RK4's weights for ``etdrk4``), whose integer leaves are left as they are."""
        identity = fn(jnp.zeros((), jnp.result_type(tau)))
        out = {k: identity * v if jnp.issubdtype(v.dtype, jnp.inexact) else v for k, v in state.items() if k != FLOW}
        return {**out, FLOW: self.flow.linear_map(fn, state[FLOW], tau, params)}

    def nonlinear(self, state: Any, t: jax.Array, params: Params) -> Any:
        """The flow's N, and the particles' right-hand sides at this stage (see the module docstring)."""
        out: dict[str, Any] = {FLOW: self.flow.nonlinear(state[FLOW], t, params)}
        live = [state.get(owning.keys(s.name)["live"]) for s in self.species]
        u = self._velocity_at(state[FLOW], self.species, [state[position_key(s.name)] for s in self.species], live)
        for s, us in zip(self.species, u, strict=True):
            if s.owned:  # the bookkeeping, carried through the stages as it is (integer leaves)
                out.update({state_key: state[state_key] for role, state_key in owning.keys(s.name).items()
                            if role in ("ident", "live", "lost")})
            if not s.inertial:
                out[position_key(s.name)] = us
                continue
            v = state[velocity_key(s.name)]
            out[position_key(s.name)] = v
            tau_p, gravity = self.drag[s.name]
            out[velocity_key(s.name)] = (us - v) / tau_p + gravity
        for s, alive in zip(self.species, live, strict=True):
            if s.owned and s.inertial:  # nothing moves in an empty slot
                for key in (position_key(s.name), velocity_key(s.name)):
                    out[key] = jnp.where(alive[:, None], out[key], jnp.zeros((), out[key].dtype))
        return out

    # ---- owned species (:mod:`.owned`) ------------------------------------------------------------------

    def settle(self, state: Any, t: jax.Array, dt: jax.Array, params: Params) -> Any:
        """After a whole step (:func:`simulator.time.integrators.bind`): the flow's own (a forcing's kick), then
        every owned species handed to the devices whose blocks hold its particles, losses counted
        (:func:`.owned.settle`)."""
        flow = self.flow.settle(state[FLOW], t, dt, params)
        if flow is not state[FLOW]:
            state = {**state, FLOW: flow}
        if not any(s.owned for s in self.species):
            return state
        out = dict(state)
        for s in self.species:
            if s.owned:
                out.update(owning.settle(self.fft, self.box, s, state))
        return out

    def lost(self, state: Any) -> Loss | None:
        """Why the run must stop, and when (an owned species lost particles: :func:`.owned.lost_message`)."""
        return owning.lost_message(self.species, state)

    def rooms(self, state: Any) -> list[Room]:
        """The slots of each owned species, with this process's fullest device (:func:`.owned.rooms`)."""
        return owning.rooms(self.fft, self.species, state)

    def reslot(self, stored: Mapping[str, Any]) -> dict[str, jax.Array] | None:
        """The species of a checkpoint written on other devices or in the other ``distribution``, laid out for
        this run (``stored``: the file's particle datasets by name, read a bounded chunk at a time): an owned
        species from its stored rows by identity (an owned checkpoint's live slots, or a replicated one's rows,
        row i particle i), each process keeping its own devices' rows (:func:`.owned.read_rows`), through
        :func:`.owned.lay_out`, the lost counts carried on; a replicated species stored owned as every row by
        identity, replicated (:func:`.owned.replicated`: a species that lost particles cannot become replicated,
        a one-line ConfigError naming ``particles[i].distribution``)."""
        out: dict[str, jax.Array] = {}
        for i, s in enumerate(self.species):
            if s.owned:
                rows = owning.read_rows(self.fft, s, i, stored)
                if rows is not None:
                    out.update(owning.lay_out(self.fft, self.box, self.dtype, s, rows))
            elif owning.keys(s.name)["live"] in stored:  # owned slots in the checkpoint, replicated rows here
                out.update(owning.replicated(self.fft, s, i, stored, self.dtype, "the checkpoint") or {})
        return out or None


@jax.jit
def _sane(eq: WithParticles, state: Any, bound: jax.Array) -> dict[str, jax.Array]:
    out = {}
    for s in eq.species:
        arrays = [state[position_key(s.name)]] + ([state[velocity_key(s.name)]] if s.inertial else [])
        if s.owned:  # the occupied slots only (an owned species' losses are counted by eq.lost)
            live = state[owning.keys(s.name)["live"]][:, None]
            arrays = [jnp.where(live, a, jnp.zeros((), a.dtype)) for a in arrays]
        finite = jnp.all(jnp.stack([jnp.all(jnp.isfinite(a)) for a in arrays]))
        out[s.name] = finite & jnp.all(jnp.abs(arrays[0]) <= bound)
    return out


def lost_species(eq: WithParticles, state: Any, cfg: Any, batched: bool = False) -> list[list[str]]:
    """Names of the species whose state blew up, per member (one list for a single run's state; one per
    member of an ensemble's stacked state with ``batched``): a position or velocity NaN or Inf, or a
    position so far from the box that the run's floats no longer locate it within a grid cell
    (:func:`wrap_bound` with ``cells = 1``; unwrapped positions travel, but not that far)."""
    bound = jnp.asarray(wrap_bound(cfg.grid.lengths, cfg.grid.cells, cfg.precision, cells=1.0), eq.dtype)
    ok = (jax.vmap(_sane, in_axes=(None, 0, None)) if batched else _sane)(eq, state, bound)
    flags = {name: np.atleast_1d(np.asarray(flag.addressable_data(0))) for name, flag in ok.items()}
    members = len(next(iter(flags.values()))) if flags else 0
    return [[name for name, flag in flags.items() if not flag[i]] for i in range(members)]

