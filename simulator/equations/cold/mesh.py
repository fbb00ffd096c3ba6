"""The particle-mesh algorithm of a cold species beside the wave (JAX), for any equation that carries one.

Particle-mesh (Hockney & Eastwood 1988, ch. 5): the particles' mass is assigned to the grid by the window W
(``physics.cdm_window``: cloud-in-cell or triangular-shaped cloud, :data:`simulator.fft.stencils.STENCILS`),
the assignment's transform prod_i sinc(k_i dx_i / 2)^p (p = 2, 3) is divided out of rho_cdm's spectrum,
the potential is solved spectrally for the total density (wave plus particles), and the field -grad(Phi)
(spectral derivative) is divided by the same transform once more and interpolated back to the particles
with the same window. The interpolation is the transpose of the assignment
(:meth:`simulator.fft.base.FFTBackend.deposit`) and the force kernel i k / (k^2 W(k)^2) is odd, so the
forces between particles, and between particles and wave, sum to zero: total momentum is conserved to
round-off. Nyquist planes are zeroed, as for the wave's density.

The particle mass ``mass`` and the gravitational constant ``G`` are the caller's (each equation's units);
``eq`` is the equation (its ``fft``, ``box``, ``spacing``, ``kr``, ``dtype``, ``nyquist_free`` and the
``physics.cdm_*`` settings).

Distribution: every particle is owned by the device whose real-space block holds its cell (the per-device
stack of owned flow particles too, :mod:`simulator.fft.particle_stack`): positions, momenta and forces
``(devices * capacity, 3)`` (wrapped into [0, L)), their identities (the lattice index) and a ``live`` mask
of the occupied slots, sharded by owner;
``physics.cdm_capacity`` sets the slots per device (times the mean count; all of them on one device) and
``physics.cdm_exchange`` the rows a device may hand to each neighbour per step. Each drift is followed by a
hand-over to the new owners inside the compiled step (:func:`migrate`); a particle that finds no room is
counted in the state's ``lost``. The assignment and the force interpolation run on the owner, with halo
planes from the neighbours (:mod:`simulator.fft.points`).

Initial positions: the lattice q = (i L / n + dx / 2, ...) (n divides the grid: the centres of every
(N/n)-th cell, where the window's response to a small displacement is linear; a cloud in cell on a node has
a kink there), :func:`lattice`, displaced by a field evaluated there (:func:`gradient_at_lattice`). Both are
rows ``(Np, 3)`` sharded over the devices (each device the lattice points of its own block, then whole x
planes of the lattice), laid out by owner without any device holding the whole set
(:mod:`simulator.fft.placement`).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp

from simulator.equations import assembly
from simulator.equations.gravity import inverse_laplacian, potential_spectrum
from simulator.fft import particle_stack as stack, placement
from simulator.fft.kernels import implementation
from simulator.fft.stencils import STENCILS


def per_axis(count: int) -> int:
    """n of a lattice of n^3 particles (``count`` a cube: checked by the config)."""
    return round(count ** (1 / 3))


def sizes(eq: Any) -> tuple[int, int]:
    """Particle slots per device and rows of each send buffer of a hand-over (:func:`simulator.fft.particle_stack.
    sizes` of ``physics.cdm_particles``, ``cdm_capacity`` and ``cdm_exchange``)."""
    p = eq.physics
    return stack.sizes(p.cdm_particles, p.cdm_capacity, p.cdm_exchange, eq.fft.devices)


def window_transform(eq: Any) -> jax.Array:
    """prod_i sinc(k_i dx_i / 2)^p of the assignment window over the r2c spectrum (broadcast of three vectors)."""
    order = STENCILS[eq.physics.cdm_window].order
    out = 1.0
    for k, dx in zip(eq.kr, eq.spacing, strict=True):
        out = out * jnp.sinc(k * dx / (2 * jnp.pi)) ** order  # jnp.sinc(x) = sin(pi x) / (pi x)
    return out


def deconvolution(eq: Any) -> jax.Array:
    """1 / :func:`window_transform`, as the product of the three axes' reciprocals (vectors): a multiplication
    per mode where the division by the broadcast product was three operations and a division."""
    order = STENCILS[eq.physics.cdm_window].order
    out = 1.0
    for k, dx in zip(eq.kr, eq.spacing, strict=True):
        out = out * (1.0 / jnp.sinc(k * dx / (2 * jnp.pi)) ** order)
    return out


# The particle parts below that run in a shard_map (the assignment, the interpolation, the first distribution)
# are jitted: inside a compiled step or state builder this changes nothing (the call is inlined), but called
# outside compiled code (a script's or a test's potential_and_force, a benchmark's parts) they ran op by op,
# compiling hundreds of small programs anew at every call (a new shard_map body each time): ~7 s per call at
# 16^3 on 1-2 devices against ~1 s compiled. Same results bit for bit (checked: these parts eager against
# jitted, and states, runs and a run's outputs before and after). Their programs differ by the route's kernels
# (native on CPU, XLA's on a GPU's route: simulator.fft.kernels), which the jit's cache does not see: that is
# its key, a static argument, so that a GPU's plan traced in a process that ran on CPU gets XLA's.


def density(eq: Any, position: jax.Array, live: jax.Array, mass: jax.Array) -> jax.Array:
    """The particles' assigned mass density ``(Nx, Ny, Nz)`` (real space, not deconvolved: >= 0) of the owned
    particles ``position`` ``(slots, 3)`` of mass ``mass``; ``live`` ``(slots,)`` the occupied slots (0 or 1,
    the run's dtype)."""
    return _density(implementation(eq.fft.route), eq, position, live, mass)


@functools.partial(jax.jit, static_argnums=0)
def _density(impl: str, eq: Any, position: jax.Array, live: jax.Array, mass: jax.Array) -> jax.Array:
    return eq.fft.deposit(position, live * (mass / math.prod(eq.spacing)), eq.box, eq.physics.cdm_window, eq.dtype,
                          owned=True)


def density_spectrum(eq: Any, position: jax.Array, live: jax.Array, mass: jax.Array) -> jax.Array:
    """rho_cdm's r2c spectrum with the window divided out (Nyquist planes zeroed)."""
    return eq.nyquist_free(eq.fft.rfft(density(eq, position, live, mass))) * deconvolution(eq)


def contrast_spectrum(eq: Any, position: jax.Array, live: jax.Array, mass: jax.Array, mean: jax.Array) -> jax.Array:
    """The r2c spectrum of the particles' own density contrast rho_cdm / ``mean`` - 1, the window divided out
    (its k = 0 entry, the mean, set to 0)."""
    cdm_hat = density_spectrum(eq, position, live, mass) / mean
    kx, ky, kz = eq.kr
    return jnp.where(kx**2 + ky**2 + kz**2 > 0, cdm_hat, 0.0)


def solve(eq: Any, rho_wave_hat: jax.Array, rho_cdm: jax.Array, G: Any) -> tuple[jax.Array, jax.Array]:
    """The potential of the total density (real space ``(Nx, Ny, Nz)``, lap(Phi) = 4 pi G (rho - mean)) and
    the field -grad(Phi) the particles feel ``(3, Nx, Ny, Nz)``, from the wave's density spectrum
    ``rho_wave_hat`` (r2c, Nyquist-free) and the particles' assigned density ``rho_cdm`` (the window divided out
    of it, and once more out of the force: see the module docstring)."""
    cdm_hat = eq.nyquist_free(eq.fft.rfft(rho_cdm)) * deconvolution(eq)
    phi_hat = potential_spectrum(rho_wave_hat + cdm_hat, inverse_laplacian(eq.kr), G)
    pull_hat = eq.nyquist_free(phi_hat) * deconvolution(eq)
    # one transform of the three components (FFTW batches them), written where the force lives; stacked as a
    # GPU computes it right at every size (simulator/equations/assembly.py)
    gradient = assembly.stack([-1j * k * pull_hat for k in eq.kr], devices=eq.fft.devices)
    return eq.fft.irfft(phi_hat), eq.fft.irfft(gradient)


def potential_and_force(eq: Any, rho_wave_hat: jax.Array, position: jax.Array, live: jax.Array, mass: jax.Array,
                        G: Any) -> tuple[jax.Array, jax.Array]:
    """The potential (real space) and -grad(Phi) at the particles ``(slots, 3)``: assignment, :func:`solve`,
    and the interpolation by the same window."""
    phi, grad = solve(eq, rho_wave_hat, density(eq, position, live, mass), G)
    return phi, interpolate(eq, grad, position, live).T


def interpolate(eq: Any, grad: jax.Array, position: jax.Array, live: jax.Array) -> jax.Array:
    """The field ``grad`` ``(3, Nx, Ny, Nz)`` at the owned particles by the assignment's window ``(3, slots)``;
    ``live`` ``(slots,)`` the occupied slots (0 or 1): an empty one gets 0."""
    return _interpolate(implementation(eq.fft.route), eq, grad, position, live)


@functools.partial(jax.jit, static_argnums=0)
def _interpolate(impl: str, eq: Any, grad: jax.Array, position: jax.Array, live: jax.Array) -> jax.Array:
    return eq.fft.interpolate_local(grad, position, eq.box, eq.physics.cdm_window, owned=True, live=live > 0)


def energies(eq: Any, state: Any, mass: jax.Array) -> dict[str, jax.Array]:
    """The particles' box totals in the units of their momenta and of the state's potential: ``kinetic`` sum m p^2
    / 2, ``potential`` (1/2) int rho_cdm Phi (the deconvolved density, as it enters the Poisson equation),
    ``work`` sum m force . p (the rate the potential does work on them) and ``speed``, the largest |p_i| / dx_i
    (cells per unit of the clock of dx/dt = p); empty slots count nothing. ``state`` holds ``position``,
    ``momentum``, ``force`` ``(slots, 3)``, ``live`` ``(slots,)`` and ``potential`` ``(Nx, Ny, Nz)``."""
    live = state.live[:, None]
    rho = eq.fft.irfft(density_spectrum(eq, state.position, state.live, mass))
    return {"kinetic": 0.5 * mass * jnp.sum(live * state.momentum**2),
            "potential": 0.5 * jnp.sum(rho * state.potential) * math.prod(eq.spacing),
            "work": mass * jnp.sum(live * state.force * state.momentum),
            "speed": jnp.max(live * jnp.abs(state.momentum) / jnp.asarray(eq.spacing, eq.dtype))}


def drift(eq: Any, position: jax.Array, momentum: jax.Array, k2: jax.Array) -> jax.Array:
    """x <- x + p K2, wrapped into the box ``(slots, 3)``: x - L floor(x / L) at a fraction of jnp.mod's cost on
    CPU (XLA calls fmod per element: 6 ms of a 64^3 step). XLA takes x / L as x (1/L), which may round to 1 for x
    just below L: the position is then a rounding error below 0, whose cell every path wraps to the last alike
    (:func:`simulator.fft.cells.cell_of`)."""
    x = position + momentum * k2
    box = jnp.asarray(eq.box, eq.dtype)
    return x - box * jnp.floor(x / box)


def entries(eq: Any, live: jax.Array, arrays: dict[str, jax.Array], ident: jax.Array, lost: jax.Array
            ) -> dict[str, jax.Array]:
    """A stack's ``(live, arrays, ident, lost)`` (:mod:`simulator.fft.particle_stack`) as the state's particle
    fields: the arrays by name, ``live`` in the run's dtype (0 or 1), ``ident`` and ``lost``."""
    return {**arrays, "live": live.astype(eq.dtype), "ident": ident, "lost": lost}


def distribute(eq: Any, position: jax.Array, momentum: jax.Array) -> dict[str, jax.Array]:
    """Particles ``(Np, 3)`` in lattice order (their identities), sharded by rows over the devices (or replicated
    where Np does not divide over them: :func:`simulator.fft.placement.rows_sharding`), laid out by owner
    (:func:`simulator.fft.particle_stack.hand_out`): the state's ``position``, ``momentum``, ``live``, ``ident`` and
    ``lost`` ``(4,)`` (counts of lost particles: over a send buffer, without a slot, moved more than a block or
    not finite, here only the last two; and the steps since the first loss: :data:`simulator.fft.particle_slots.
    LOST`)."""
    return entries(eq, *stack.hand_out(eq.fft, eq.box, sizes(eq)[0], {"position": position, "momentum": momentum}))


def migrate(eq: Any, state: Any, position: jax.Array) -> dict[str, jax.Array]:
    """After a drift of ``state``'s particles to ``position`` ``(slots, 3)``: every particle handed to the device
    whose block holds it (:func:`simulator.fft.particle_stack.hand_over`: one drift, hence one hand-over, per step;
    the particles lost on the way added to ``lost``, dated; the run stops on any). Returns the state's
    ``position``, ``momentum``, ``live``, ``ident`` and ``lost``."""
    live, (position, momentum), ident, lost = stack.hand_over(eq.fft, eq.box, sizes(eq)[1], state.live > 0,
                                                              [position, state.momentum], state.ident, state.lost)
    return entries(eq, live, {"position": position, "momentum": momentum}, ident, lost)


def lattice(eq: Any) -> jax.Array:
    """The particles' lattice ``(Np, 3)`` in identity order (x slowest), sharded by rows over the devices
    (:func:`simulator.fft.placement.row_index`: each its own rows): the centres of every (N/n)-th cell,
    (i stride + 1/2) dx along each axis."""
    count = eq.physics.cdm_particles
    n = per_axis(count)
    stride = tuple(size // n for size in eq.fft.shape)
    ident = placement.row_index(eq.fft, count)
    index = (ident // (n * n), ident // n % n, ident % n)
    return jnp.stack([(index[a].astype(eq.dtype) * stride[a] + 0.5) * eq.spacing[a] for a in range(3)], axis=-1)


def gradient_at_lattice(eq: Any, phi_hat: jax.Array) -> jax.Array:
    """grad(phi) at the lattice points ``(Np, 3)`` (identity order, sharded by rows as :func:`lattice`) of a field
    given by its r2c spectrum ``phi_hat``: the gradient's spectrum shifted by half a cell (the phase exp(i k.dx/2):
    exact for a band-limited field), transformed back, then every stride-th value, each device those of its own
    block (:func:`simulator.fft.placement.lattice_rows`: no device holds the whole set)."""
    n = per_axis(eq.physics.cdm_particles)
    half = jnp.exp(0.5j * sum(k * d for k, d in zip(eq.kr, eq.spacing, strict=True)))
    parts = [placement.lattice_rows(eq.fft, eq.fft.irfft(1j * k * half * phi_hat), n) for k in eq.kr]
    return jnp.stack(parts, axis=-1)


def displacement(eq: Any, delta_hat: jax.Array) -> jax.Array:
    """The first-order (Zel'dovich) displacement s ``(Np, 3)`` at the lattice of a density contrast given by
    its r2c spectrum: delta = -div(s), s = -grad(phi) with lap(phi) = delta."""
    return -gradient_at_lattice(eq, inverse_laplacian(eq.kr) * delta_hat)
