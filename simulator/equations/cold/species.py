"""The equation's side of a cold species beside the wave (JAX): what cold particles add to a wave equation.

:class:`ColdSpecies` is a mixin for a split-step wave equation whose physics has the ``cdm_*`` settings
(``fdm_fraction``, ``cdm_particles``, ``cdm_window``, ``cdm_capacity``, ``cdm_exchange``): with
``cdm_particles`` > 0 its state is :class:`MixedState`, its leaves' spaces, fields and state fields gain the
particles', and it gives the particles' part of kick and drift (exact over their intervals, the factors
K1 and K2 handed in by the equation: dt in a static box, int dt / a^p comoving), the refresh of potential
and force (:mod:`.mesh`), restarts on other device counts, the lost-particle message and the particle
outputs. Without particles nothing here is used: the state and every number are the wave's alone. With
``fdm_fraction`` 0 (:func:`simulator.equations.cold.has_wave`) there is no wave: the state is
:class:`ColdState`, the particles and their potential, and the equation steps the particles' parts alone.

The equation provides two hooks: ``cdm_mass(psi, params, mass=None)``, the mass of one particle (from the
wave ``psi``, the parameters, or a particle-only state's own ``mass``), and ``cdm_gravity(params)``, its G
(the Poisson equation lap(Phi) = 4 pi G (rho - mean)). An equation whose parameters do not set the particle
mass without a wave (a static box) declares ``stored_mass``: its particle-only state holds it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from simulator.equations.base import ParticleArrays
from simulator.equations.cold import has_wave, mesh
from simulator.fft import complex_dtype, particle_slots as slots, particle_stack as stack, placement


class MixedState(NamedTuple):
    """A mixed run's state: psi and the potential ``(Nx, Ny, Nz)`` (real-space layout), and the cold particles
    by owner (:mod:`.mesh`): positions x, momenta p and forces -grad(Phi) at x ``(slots, 3)``, the occupied
    slots ``live`` (0/1) and identities ``ident`` ``(slots,)``, and ``lost`` ``(4,)``: particles lost so far
    (over a send buffer, without a slot, moved more than a block) and the steps since the first of them
    (:data:`simulator.fft.particle_slots.LOST`), replicated."""

    psi: jax.Array
    potential: jax.Array
    position: jax.Array
    momentum: jax.Array
    force: jax.Array
    live: jax.Array
    ident: jax.Array
    lost: jax.Array


class ColdState(NamedTuple):
    """A particle-only run's state (``physics.fdm_fraction`` 0, no wave): the potential ``(Nx, Ny, Nz)``
    (real-space layout) and the cold particles as in :class:`MixedState`; ``mass`` the mass of one particle
    ``(1,)``, replicated, where the parameters do not set it (a static box's ``stored_mass``; otherwise None,
    no leaf)."""

    potential: jax.Array
    position: jax.Array
    momentum: jax.Array
    force: jax.Array
    live: jax.Array
    ident: jax.Array
    lost: jax.Array
    mass: jax.Array | None = None


#: where the leaves of a state with particles live: the particles' arrays are stored whole (see checkpoints)
SPACES = {"psi": "real", "potential": "real", **{name: "particles" for name in (
    "position", "momentum", "force", "live", "ident", "lost", "mass")}}


class ColdSpecies:
    """A wave equation's cold particles (see the module docstring); the host class provides ``physics``,
    ``fft``, ``box``, ``dtype``, ``info``, ``nyquist_free``, ``cdm_mass`` and ``cdm_gravity``."""

    #: whether a particle-only state holds the particle mass (``ColdState.mass``): the parameters do not set it
    stored_mass: ClassVar[bool] = False

    # ---- the structure: a wave alone, a wave and cold particles, or the particles alone ----------------

    @property
    def cold(self) -> bool:
        """Whether this run carries cold particles (``physics.cdm_particles`` > 0)."""
        return self.physics.cdm_particles > 0

    @property
    def wave(self) -> bool:
        """Whether this run carries the wave psi (``physics.fdm_fraction`` > 0; 0: the particles alone)."""
        return has_wave(self.physics)

    @property
    def mixed(self) -> bool:
        """Whether this run carries both the wave and cold particles."""
        return self.cold and self.wave

    @property
    def space(self) -> str | dict[str, str]:
        """Where the state's leaves live: real space, and the particles' arrays stored whole (:data:`SPACES`)."""
        return SPACES if self.cold else "real"

    def owned_leaves(self, state: Any) -> set[str]:
        """The cold particles' slots, kept by owner (not ``lost`` nor ``mass``, replicated)."""
        return {"position", "momentum", "force", "live", "ident"} if self.cold else set()

    @property
    def state_fields(self) -> tuple[str, ...]:
        """The fields a state is built from: psi, and the cold particles' initial positions and
        momenta (and a particle-only state's particle mass, where it holds it); no psi without the wave."""
        cold = ("cdm_position", "cdm_momentum") if self.cold else ()
        if not self.wave:
            return (*cold, "cdm_mass") if self.stored_mass else cold
        return ("psi", *cold)

    def field_layouts(self) -> dict[str, jax.ShapeDtypeStruct]:
        """psi ``(Nx, Ny, Nz)`` in the real-space layout (with the wave); the particles' initial positions and
        momenta ``(Np, 3)`` in lattice order, sharded by rows over the devices (replicated where Np does not
        divide over them: :func:`simulator.fft.placement.rows_sharding`), laid out by owner when the state is
        built; a particle-only state's particle mass ``(1,)``, replicated (a vector: checkpoints store no
        scalars)."""
        out, replicated = {}, self.fft.replicated_sharding()
        if self.wave:
            out["psi"] = jax.ShapeDtypeStruct(tuple(self.fft.shape), complex_dtype(self.dtype),
                                              sharding=self.fft.real_sharding())
        if self.cold:
            rows = placement.rows_sharding(self.fft, self.physics.cdm_particles)
            for name in ("cdm_position", "cdm_momentum"):
                out[name] = jax.ShapeDtypeStruct((self.physics.cdm_particles, 3), self.dtype, sharding=rows)
        if not self.wave and self.stored_mass:
            out["cdm_mass"] = jax.ShapeDtypeStruct((1,), self.dtype, sharding=replicated)
        return out

    # ---- states and steps -------------------------------------------------------------------------------

    def refreshed(self, psi: jax.Array | None, particles: Mapping[str, jax.Array], params: Any
                  ) -> MixedState | ColdState:
        """A state with the potential and the particles' force of its wave ``psi`` (None: no wave, a
        :class:`ColdState`) and particles (``position``, ``momentum``, ``live``, ``ident``, ``lost``, laid out by
        owner, and a particle-only state's ``mass`` where it holds one)."""
        rho_hat = 0.0 if psi is None else self.nyquist_free(self.fft.rfft(jnp.abs(psi) ** 2))
        phi, force = mesh.potential_and_force(self, rho_hat, particles["position"], particles["live"],
                                              self.cdm_mass(psi, params, particles.get("mass")),
                                              self.cdm_gravity(params))
        if psi is None:
            return ColdState(potential=phi, force=force, **particles)
        return MixedState(psi=psi, potential=phi, force=force, **particles)

    def mixed_state(self, psi: jax.Array | None, position: jax.Array, momentum: jax.Array, params: Any,
                    mass: jax.Array | None = None) -> MixedState | ColdState:
        """The state of a wave ``psi`` (None: none) and particles ``(Np, 3)`` in lattice order (their identities,
        sharded as :meth:`field_layouts` says), laid out by owner; ``mass`` the particle mass a particle-only
        state holds (``(1,)``)."""
        particles = mesh.distribute(self, position.astype(self.dtype), momentum.astype(self.dtype))
        if mass is not None:
            particles["mass"] = mass.astype(self.dtype)
        return self.refreshed(psi, particles, params)

    def kick_particles(self, state: Any, psi: jax.Array | None, k1: jax.Array) -> Any:
        """The kicked wave ``psi`` (None: no wave) and p <- p + force K1, exact: the positions, hence the
        force, do not change."""
        momentum = state.momentum + k1 * state.force * state.live[:, None]
        return state._replace(momentum=momentum) if psi is None else state._replace(psi=psi, momentum=momentum)

    def drift_particles(self, state: Any, psi: jax.Array | None, k2: jax.Array, params: Any) -> Any:
        """The drifted wave ``psi`` (None: no wave) and x <- x + p K2, exact (p does not change); then each
        particle to its new owner, and the potential and force of the new wave and positions."""
        particles = mesh.migrate(self, state, mesh.drift(self, state.position, state.momentum, k2))
        if getattr(state, "mass", None) is not None:
            particles["mass"] = state.mass
        return self.refreshed(psi, particles, params)

    def particle_mass(self, state: Any, params: Any) -> jax.Array:
        """The mass of one cold particle of ``state`` (``cdm_mass`` of its wave or its own ``mass``)."""
        return self.cdm_mass(getattr(state, "psi", None), params, getattr(state, "mass", None))

    # ---- outputs and restarts -----------------------------------------------------------------------

    def cdm_density(self, state: Any, params: Any) -> jax.Array:
        """The particles' assigned mass density ``(Nx, Ny, Nz)`` (real space, the window not divided out)."""
        return mesh.density(self, state.position, state.live, self.particle_mass(state, params))

    def cold_particles(self, state: Any, velocity: jax.Array) -> dict[str, ParticleArrays]:
        """The species ``cdm`` of a run with cold particles (none otherwise): positions ``(slots, 3)`` by owner,
        wrapped into [0, L), with ``velocity`` ``(slots, 3)``, their identities (lattice indices) and occupied
        slots."""
        if not self.cold:
            return {}
        return {"cdm": ParticleArrays(state.position, velocity, state.ident, state.live)}

    def lost(self, state: Any) -> slots.Loss | None:
        """Why the run must stop, read on the host: particles lost by the hand-over between devices, naming the
        setting that gives them room, and when (:class:`simulator.fft.particle_slots.Loss`); None when none was."""
        if not self.cold:
            return None
        p = self.physics
        return stack.loss(state.lost, "cold particle(s)", ("physics.cdm_exchange", p.cdm_exchange),
                          ("physics.cdm_capacity", p.cdm_capacity), "moved more than one device's block in a step, "
                          "or stopped being finite: lower time.dt or use fewer devices along that axis")

    def rooms(self, state: Any) -> list[slots.Room]:
        """The cold particles' slots, with this process's fullest device (:func:`simulator.fft.particle_stack.room`),
        on several devices."""
        if not self.cold:
            return []
        p = self.physics
        room = stack.room(self.fft, state.live, "cold particles", "physics.cdm_capacity", p.cdm_capacity,
                          mesh.sizes(self)[0], p.cdm_particles)
        return [] if room is None else [room]

    def stored_fields(self, stored: Mapping[str, Any]) -> dict[str, jax.Array]:
        """The state fields a checkpoint holds as particle arrays (``stored``: its particle datasets by leaf name,
        read a bounded chunk at a time), for a state read from it onto any grid (:mod:`simulator.run.remap`):
        ``cdm_position`` and ``cdm_momentum`` ``(Np, 3)`` in lattice order (its occupied slots by identity; each
        device its own rows, :meth:`field_layouts`, each process reading only those onto its host:
        :func:`simulator.fft.particle_stack.read_rows`), and a particle-only state's ``cdm_mass`` ``(1,)``. They do
        not depend on the grid: a branch at another resolution keeps them exactly. A checkpoint without all Np
        particles: a one-line ConfigError."""
        from simulator.errors import ConfigError

        if not self.cold:
            return {}
        count = self.physics.cdm_particles
        rows = stack.read_rows(stored, ("position", "momentum"), "live", "ident", "lost",
                               stack.share(self.fft, count), "physics.cdm_particles", count)
        # every process counts every particle; each checks its own rows, all of them there
        if rows is None or rows.count != count or not all(b.held.all() for b in rows.blocks.values()):
            held = 0 if rows is None else rows.count
            raise ConfigError("physics.cdm_particles", count, f"a checkpoint holding all {count} cold particles "
                              "(this one lost some, or holds none)", f"finds {held} there")
        out = {f"cdm_{name}": stack.on_devices(self.fft, rows, lambda b, name=name: b.arrays[name], self.dtype)
               for name in ("position", "momentum")}
        if "cdm_mass" in self.state_fields:
            out["cdm_mass"] = self.fft.replicated(np.asarray(stored["mass"]).reshape(1), self.dtype)
        return out

    def reslot(self, stored: Mapping[str, Any]) -> dict[str, jax.Array] | None:
        """A checkpoint's cold particles, written on another device count, laid out by owner for this run's
        (:func:`simulator.fft.particle_stack.lay_out`): the live slots' positions, momenta and forces by identity,
        every process reading them a bounded chunk at a time and keeping its own devices' rows
        (:func:`simulator.fft.particle_stack.read_rows`); the lost counts carried on (plus any particle that found
        no slot: the run stops before its first step, naming ``physics.cdm_capacity``)."""
        if not self.cold:
            return None
        count = self.physics.cdm_particles
        rows = stack.read_rows(stored, ("position", "momentum", "force"), "live", "ident", "lost",
                               stack.share(self.fft, stack.padded(self.fft, count)), "physics.cdm_particles", count)
        return mesh.entries(self, *stack.lay_out(self.fft, self.box, mesh.sizes(self)[0], self.dtype, rows))
