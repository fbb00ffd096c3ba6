"""The equation's side of a cold species beside the wave (JAX): what a mixed run adds to a wave equation.

:class:`ColdSpecies` is a mixin for a split-step wave equation whose physics has the ``cdm_*`` settings
(``fdm_fraction``, ``cdm_particles``, ``cdm_window``, ``cdm_capacity``, ``cdm_exchange``): with
``cdm_particles`` > 0 its state is :class:`MixedState`, its leaves' spaces, fields and state fields gain the
particles', and it gives the particles' part of kick and drift (exact over their intervals, the factors
K1 and K2 handed in by the equation: dt in a static box, int dt / a^p comoving), the refresh of potential
and force (:mod:`.mesh`), restarts on other device counts, the lost-particle message and the particle
outputs. Without particles nothing here is used: the state and every number are the wave's alone.

The equation provides two hooks: ``cdm_mass(psi, params)``, the mass of one particle, and
``cdm_gravity(params)``, its G (the Poisson equation lap(Phi) = 4 pi G (rho - mean)).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from simulator.equations.base import ParticleArrays
from simulator.equations.cold import mesh
from simulator.fft import complex_dtype
from simulator.particles import slots


class MixedState(NamedTuple):
    """A mixed run's state: psi and the potential ``(Nx, Ny, Nz)`` (real-space layout), and the cold particles
    by owner (:mod:`.mesh`): positions x, momenta p and forces -grad(Phi) at x ``(slots, 3)``, the occupied
    slots ``live`` (0/1) and identities ``ident`` ``(slots,)``, and ``lost`` ``(4,)``: particles lost so far
    (over a send buffer, without a slot, moved more than a block) and the steps since the first of them
    (:data:`simulator.particles.slots.LOST`), replicated."""

    psi: jax.Array
    potential: jax.Array
    position: jax.Array
    momentum: jax.Array
    force: jax.Array
    live: jax.Array
    ident: jax.Array
    lost: jax.Array


#: where a mixed state's leaves live: the particles' arrays are stored whole (see checkpoints)
SPACES = {"psi": "real", "potential": "real", **{name: "particles" for name in (
    "position", "momentum", "force", "live", "ident", "lost")}}
#: the fields only a mixed run has
CDM_FIELDS = ("cdm_density", "total_density")


class ColdSpecies:
    """A wave equation's cold particles (see the module docstring); the host class provides ``physics``,
    ``fft``, ``box``, ``dtype``, ``info``, ``nyquist_free``, ``cdm_mass`` and ``cdm_gravity``."""

    # ---- the structure: a wave alone, or a wave and cold particles ------------------------------------

    @property
    def mixed(self) -> bool:
        """Whether this run carries cold particles (``physics.cdm_particles`` > 0)."""
        return self.physics.cdm_particles > 0

    @property
    def space(self) -> str | dict[str, str]:
        """Where the state's leaves live: real space, and the particles' arrays stored whole (:data:`SPACES`)."""
        return SPACES if self.mixed else "real"

    def owned_leaves(self, state: Any) -> set[str]:
        """A mixed run's cold particles' slots, kept by owner (not ``lost``, replicated)."""
        return {"position", "momentum", "force", "live", "ident"} if self.mixed else set()

    @property
    def field_info(self) -> Mapping[str, Any]:
        """The equation's fields, less the particles' (``cdm_density``, ``total_density``) without particles."""
        return self.info.fields if self.mixed else {k: v for k, v in self.info.fields.items() if k not in CDM_FIELDS}

    @property
    def state_fields(self) -> tuple[str, ...]:
        """The fields a state is built from: psi, and a mixed run's replicated initial positions and momenta."""
        return ("psi", "cdm_position", "cdm_momentum") if self.mixed else ("psi",)

    def field_layouts(self) -> dict[str, jax.ShapeDtypeStruct]:
        """psi ``(Nx, Ny, Nz)`` in the real-space layout; a mixed run's initial positions and momenta
        ``(Np, 3)`` replicated (in lattice order, laid out by owner when the state is built)."""
        out = {"psi": jax.ShapeDtypeStruct(tuple(self.fft.shape), complex_dtype(self.dtype),
                                           sharding=self.fft.real_sharding())}
        if self.mixed:
            for name in ("cdm_position", "cdm_momentum"):
                out[name] = jax.ShapeDtypeStruct((self.physics.cdm_particles, 3), self.dtype,
                                                 sharding=self.fft.replicated_sharding())
        return out

    # ---- states and steps -------------------------------------------------------------------------------

    def refreshed(self, psi: jax.Array, particles: Mapping[str, jax.Array], params: Any) -> MixedState:
        """A mixed state with the potential and the particles' force of its wave ``psi`` and particles
        (``position``, ``momentum``, ``live``, ``ident``, ``lost``, laid out by owner)."""
        rho_hat = self.nyquist_free(self.fft.rfft(jnp.abs(psi) ** 2))
        phi, force = mesh.potential_and_force(self, rho_hat, particles["position"], particles["live"],
                                              self.cdm_mass(psi, params), self.cdm_gravity(params))
        return MixedState(psi=psi, potential=phi, force=force, **particles)

    def mixed_state(self, psi: jax.Array, position: jax.Array, momentum: jax.Array, params: Any) -> MixedState:
        """The state of a wave ``psi`` and replicated particles ``(Np, 3)`` in lattice order (their identities),
        laid out by owner."""
        return self.refreshed(psi, mesh.distribute(self, position.astype(self.dtype), momentum.astype(self.dtype)),
                              params)

    def kick_particles(self, state: MixedState, psi: jax.Array, k1: jax.Array) -> MixedState:
        """The kicked wave ``psi`` and p <- p + force K1, exact: the positions, hence the force, do not change."""
        return state._replace(psi=psi, momentum=state.momentum + k1 * state.force * state.live[:, None])

    def drift_particles(self, state: MixedState, psi: jax.Array, k2: jax.Array, params: Any) -> MixedState:
        """The drifted wave ``psi`` and x <- x + p K2, exact (p does not change); then each particle to its new
        owner, and the potential and force of the new wave and positions."""
        moved = mesh.drift(self, state.position, state.momentum, k2)
        live, position, momentum, ident, lost = mesh.migrate(self, state.live, moved, state.momentum, state.ident,
                                                             state.lost)
        return self.refreshed(psi, {"position": position, "momentum": momentum, "live": live, "ident": ident,
                                    "lost": lost}, params)

    # ---- outputs and restarts -----------------------------------------------------------------------

    def cdm_density(self, state: MixedState, params: Any) -> jax.Array:
        """The particles' assigned mass density ``(Nx, Ny, Nz)`` (real space, the window not divided out)."""
        return mesh.density(self, state.position, state.live, self.cdm_mass(state.psi, params))

    def cold_particles(self, state: MixedState, velocity: jax.Array) -> dict[str, ParticleArrays]:
        """The species ``cdm`` of a mixed run (none otherwise): positions ``(slots, 3)`` by owner, wrapped into
        [0, L), with ``velocity`` ``(slots, 3)``, their identities (lattice indices) and occupied slots."""
        if not self.mixed:
            return {}
        return {"cdm": ParticleArrays(state.position, velocity, state.ident, state.live)}

    def lost(self, state: Any) -> slots.Loss | None:
        """Why the run must stop, read on the host: particles lost by the hand-over between devices, naming the
        setting that gives them room, and when (:class:`simulator.particles.slots.Loss`); None when none was."""
        if not self.mixed:
            return None
        p = self.physics
        return slots.loss(np.asarray(state.lost.addressable_data(0)), "cold particle(s)",
                          ("physics.cdm_exchange", p.cdm_exchange), ("physics.cdm_capacity", p.cdm_capacity),
                          "moved more than one device's block in a step: lower time.dt or use fewer devices along "
                          "that axis")

    def reslot(self, stored: Mapping[str, np.ndarray]) -> dict[str, jax.Array] | None:
        """A mixed checkpoint's particles, written on another device count, laid out by owner for this run's:
        the live slots' positions, momenta, forces and identities handed to :func:`.mesh.distribute` (every
        process holds them all once, as for the initial conditions), the lost counts carried on (plus any
        particle that found no slot: the run stops before its first step, naming ``physics.cdm_capacity``)."""
        if not self.mixed:
            return None
        live = np.asarray(stored["live"]) > 0
        order = np.argsort(np.asarray(stored["ident"])[live], kind="stable")
        replicated = self.fft.replicated_sharding()

        def put(name: str) -> jax.Array:
            host = np.asarray(stored[name])[live][order]
            return jax.make_array_from_callback(host.shape, replicated, lambda index: host[index])

        lost = slots.stored_lost(stored.get("lost"))
        return relaid(self, *(put(n) for n in ("position", "momentum", "force", "ident")),
                      jax.make_array_from_callback(lost.shape, replicated, lambda index: lost[index]))


@jax.jit  # one program (eagerly, each operation of the hand-out would compile its own)
def relaid(eq: Any, position: jax.Array, momentum: jax.Array, force: jax.Array, ident: jax.Array,
           lost: jax.Array) -> dict[str, jax.Array]:
    """Replicated particles ``(Np, 3)`` (in identity order) with their forces and identities laid out by owner
    for ``eq``'s devices, the stored ``lost`` counts ``(4,)`` added to the new ones."""
    laid = mesh.distribute(eq, position.astype(eq.dtype), momentum.astype(eq.dtype), ident,
                           force=force.astype(eq.dtype))
    return {**laid, "lost": laid["lost"] + lost}
