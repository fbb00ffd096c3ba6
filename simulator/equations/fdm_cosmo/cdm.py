"""Cold dark matter beside the wave: particle-mesh particles in the comoving kick-drift-kick (JAX).

A mixed run (``physics.fdm_fraction`` f < 1) holds a fraction f of the matter as the wave psi (mean
|psi|^2 = f omega_m) and the rest as ``physics.cdm_particles`` = n^3 cold collisionless particles of equal
mass m_p = (1 - f) omega_m V / n^3 (code units of :mod:`.cosmology`). Both feel one potential,

    lap(Phi) = 4 pi G (rho_wave + rho_cdm - omega_m),      V = Phi / a,

and the particles move in comoving coordinates x with the comoving momentum p = a^2 dx/dt (per unit mass):

    dx/dt = p / a^2,      dp/dt = -grad(V) = -grad(Phi) / a,

the same equations of motion the wave's Madelung velocity obeys (p = nu grad(arg psi)). In the run's
kick-drift-kick both are exact over their intervals with the wave's own factors K_p = int dt / a^p
(:func:`.cosmology.step_integrals`): the kick adds -grad(Phi) K1 to p (positions, hence Phi, fixed), the
drift adds p K2 to x (p fixed), then Phi and the force are refreshed. Written once here for every run.

Particle-mesh (Hockney & Eastwood 1988, ch. 5): the particles' mass is assigned to the grid by the
window W (``physics.cdm_window``: cloud-in-cell or triangular-shaped cloud,
:data:`simulator.fft.points.WINDOWS`), the assignment's transform prod_i sinc(k_i dx_i / 2)^p (p = 2, 3)
is divided out of rho_cdm's spectrum, Phi is solved spectrally for the total density, and the force
-grad(Phi) (spectral derivative) is divided by the same transform once more and interpolated back to
the particles with the same window. The interpolation is the transpose of the assignment
(:meth:`simulator.fft.base.FFTBackend.deposit`) and the force kernel i k / (k^2 W(k)^2) is odd, so the
particles' forces on each other sum to zero: total momentum is conserved to round-off. Nyquist planes are
zeroed, as for the wave's density.

Initial conditions (Zel'dovich 1970): the particles sit on the lattice q = (i L / n + dx / 2, ...) (n divides
the grid: the centres of every (N/n)-th cell, where the window's response to a small displacement is
linear; a cloud in cell on a node has a kink there) displaced by s with delta = -div(s), s_hat = i k delta_hat / k^2, the same
modes (the same white noise) as the wave; the growing mode's momentum is p = a^2 H f s. With
``physics.cdm_lpt`` 2 the second-order (2LPT) displacement and momentum are added (:func:`zeldovich`). The
particles take the spectrum without the FDM cut-off (cold matter), the wave the one with it
(``physics.fdm_transfer``).

Distribution: every particle is owned by the device whose real-space block holds its cell
(:mod:`simulator.fft.owned`): positions, momenta and forces ``(devices * capacity, 3)`` (wrapped into
[0, L)), their identities (the lattice index) and a ``live`` mask of the occupied slots, sharded by owner;
``physics.cdm_capacity`` sets the slots per device (times the mean count; all of them on one device) and
``physics.cdm_exchange`` the rows a device may hand to each neighbour per step. Each drift is followed by a
hand-over to the new owners inside the compiled step; a particle that finds no room is counted in the
state's ``lost`` and the run stops at the chunk's end, naming the setting to raise. The assignment and the
force interpolation run on the owner, with halo planes from the neighbours (:mod:`simulator.fft.points`).
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from simulator.equations.fdm_cosmo import cosmology
from simulator.equations.gravity import inverse_laplacian, potential_spectrum
from simulator.fft.points import WINDOWS


def per_axis(count: int) -> int:
    """n of a lattice of n^3 particles (``count`` a cube: checked by the config)."""
    return round(count ** (1 / 3))


def particle_mass(params: Any, box: tuple[float, ...], count: int) -> jax.Array:
    """m_p = (1 - f) omega_m V / Np: the particles carry the matter the wave does not."""
    return (1.0 - params["fdm_fraction"]) * params["omega_m"] * math.prod(box) / count


def capacity(eq: Any) -> int:
    """Particle slots per device: all of them on one device, else ``physics.cdm_capacity`` times the mean."""
    count, devices = eq.physics.cdm_particles, eq.fft.devices
    return count if devices == 1 else math.ceil(eq.physics.cdm_capacity * count / devices)


def exchange_rows(eq: Any) -> int:
    """Rows of each send buffer of a migration: ``physics.cdm_exchange`` of a device's slots."""
    return max(1, math.ceil(eq.physics.cdm_exchange * capacity(eq)))


def window_transform(eq: Any) -> jax.Array:
    """prod_i sinc(k_i dx_i / 2)^p of the assignment window over the r2c spectrum (broadcast of three vectors)."""
    order = WINDOWS[eq.physics.cdm_window].order
    out = 1.0
    for k, dx in zip(eq.kr, eq.spacing, strict=True):
        out = out * jnp.sinc(k * dx / (2 * jnp.pi)) ** order  # jnp.sinc(x) = sin(pi x) / (pi x)
    return out


# The particle parts below that run in a shard_map (the assignment, the interpolation, the first distribution)
# are jitted: inside a compiled step or state builder this changes nothing (the call is inlined), but called
# outside compiled code (a script's or a test's potential_and_force, a benchmark's parts) they ran op by op,
# compiling hundreds of small programs anew at every call (a new shard_map body each time): ~7 s per call at
# 16^3 on 1-2 devices against ~1 s compiled. Same results bit for bit (checked: these parts eager against
# jitted, and states, runs and a run's outputs before and after).


@jax.jit
def density(eq: Any, position: jax.Array, live: jax.Array, params: Any) -> jax.Array:
    """The particles' assigned mass density on the grid (real space, not deconvolved: >= 0); ``live`` the
    occupied slots (0 or 1, the run's dtype)."""
    mass = particle_mass(params, eq.box, eq.physics.cdm_particles)
    return eq.fft.deposit(position, live * (mass / math.prod(eq.spacing)), eq.box, eq.physics.cdm_window, eq.dtype,
                          owned=True)


def density_spectrum(eq: Any, position: jax.Array, live: jax.Array, params: Any) -> jax.Array:
    """rho_cdm's r2c spectrum with the window divided out (Nyquist planes zeroed)."""
    return eq.nyquist_free(eq.fft.rfft(density(eq, position, live, params))) / window_transform(eq)


def solve(eq: Any, rho_wave_hat: jax.Array, rho_cdm: jax.Array, params: Any) -> tuple[jax.Array, jax.Array]:
    """Phi = a V of the total density (real space) and the field -grad(Phi) the particles feel ``(3, Nx, Ny,
    Nz)``, from the wave's density spectrum and the particles' assigned density ``rho_cdm`` (the window
    divided out of it, and once more out of the force: see the module docstring)."""
    cdm_hat = eq.nyquist_free(eq.fft.rfft(rho_cdm)) / window_transform(eq)
    phi_hat = potential_spectrum(rho_wave_hat + cdm_hat, inverse_laplacian(eq.kr), cosmology.G_CODE)
    pull_hat = eq.nyquist_free(phi_hat) / window_transform(eq)
    return eq.fft.irfft(phi_hat), jnp.stack([eq.fft.irfft(-1j * k * pull_hat) for k in eq.kr])


def potential_and_force(eq: Any, rho_wave_hat: jax.Array, position: jax.Array, live: jax.Array, params: Any
                        ) -> tuple[jax.Array, jax.Array]:
    """Phi (real space) and -grad(Phi) at the particles ``(slots, 3)``: assignment, :func:`solve`, and the
    interpolation by the same window."""
    phi, grad = solve(eq, rho_wave_hat, density(eq, position, live, params), params)
    return phi, _interpolate(eq, grad, position).T


@jax.jit
def _interpolate(eq: Any, grad: jax.Array, position: jax.Array) -> jax.Array:
    """The field ``grad`` ``(3, Nx, Ny, Nz)`` at the owned particles by the assignment's window ``(3, slots)``."""
    return eq.fft.interpolate_local(grad, position, eq.box, eq.physics.cdm_window, owned=True)


def drift(eq: Any, position: jax.Array, momentum: jax.Array, k2: jax.Array) -> jax.Array:
    """x <- x + p K2, wrapped into the box."""
    return jnp.mod(position + momentum * k2, jnp.asarray(eq.box, eq.dtype))


@jax.jit
def distribute(eq: Any, position: jax.Array, momentum: jax.Array, ident: jax.Array | None = None,
               **carried: jax.Array) -> dict[str, jax.Array]:
    """Replicated particles ``(Np, 3)`` laid out by owner (:func:`simulator.fft.owned.distribute`), with their
    identities ``ident`` ``(Np,)`` (default: the index, the lattice's order) and any further per-particle
    arrays ``carried`` (a restart's forces): the state's ``position``, ``momentum``, ``live``, ``ident``, the
    carried arrays and ``lost`` (counts of lost particles: over a send buffer, without a slot, moved more than
    a block; here only the second)."""
    from simulator.fft.owned import distribute as spread

    ident = jnp.arange(position.shape[0], dtype=jnp.int32) if ident is None else ident.astype(jnp.int32)
    live, position, momentum, ident, *rest, over = spread(eq.fft, eq.box, capacity(eq), position, momentum, ident,
                                                          *carried.values())
    lost = jnp.zeros(3, jnp.int32).at[1].set(over)
    return {"position": position, "momentum": momentum, "live": live.astype(eq.dtype), "ident": ident,
            **dict(zip(carried, rest, strict=True)), "lost": lost}


def migrate(eq: Any, live: jax.Array, position: jax.Array, momentum: jax.Array, ident: jax.Array,
            lost: jax.Array) -> tuple[jax.Array, ...]:
    """After a drift: every particle handed to the device whose block holds it (:func:`simulator.fft.owned.
    migrate`); the particles lost on the way added to ``lost`` (the run stops on any)."""
    from simulator.fft.owned import migrate as hand_over

    kept, position, momentum, ident, counts = hand_over(eq.fft, eq.box, exchange_rows(eq), live > 0, position,
                                                        momentum, ident)
    return kept.astype(eq.dtype), position, momentum, ident, lost + counts


def zeldovich(eq: Any, delta_hat: jax.Array, params: Any) -> dict[str, jax.Array]:
    """Lattice positions displaced by s (delta = -div s) and the growing mode's momenta p = a^2 H f s, from
    the r2c spectrum ``delta_hat`` of the particles' density contrast at the start. With ``physics.cdm_lpt``
    2, second-order Lagrangian perturbation theory (2LPT; Scoccimarro 1998, MNRAS 299, 1097; Crocce,
    Pueblas & Scoccimarro 2006): x = q + s1 + s2 and p = a^2 H (f1 s1 + f2 s2), with s1 = -grad(phi1),
    lap(phi1) = delta, s2 = D2 grad(phi2), lap(phi2) = sum_{i<j} (phi1_ii phi1_jj - phi1_ij^2), and the
    second-order growth D2 = -3/7 Omega_m(a)^(-1/143), f2 = 2 Omega_m(a)^(6/11) (Bouchet et al. 1995, A&A
    296, 575) at the start, where D1 = 1."""
    count = eq.physics.cdm_particles
    n = per_axis(count)
    stride = tuple(size // n for size in eq.fft.shape)
    inv = inverse_laplacian(eq.kr)
    # a gradient's spectrum shifted by half a cell (the phase exp(i k.dx/2): exact for a band-limited field),
    # then every stride-th value: the field at the lattice points, cell centres
    half = jnp.exp(0.5j * sum(k * d for k, d in zip(eq.kr, eq.spacing, strict=True)))

    def gradient_at_lattice(phi_hat: jax.Array) -> jax.Array:
        parts = [eq.fft.irfft(1j * k * half * phi_hat)[::stride[0], ::stride[1], ::stride[2]] for k in eq.kr]
        return jnp.stack(parts).reshape(3, count).T

    phi1_hat = inv * delta_hat
    s = -gradient_at_lattice(phi1_hat)
    axes = [(jnp.arange(n, dtype=eq.dtype) * stride[a] + 0.5) * eq.spacing[a] for a in range(3)]
    lattice = jnp.stack(jnp.meshgrid(*axes, indexing="ij"), axis=-1).reshape(count, 3)
    om, ol = params["omega_m"], params["omega_lambda"]
    a = eq.a_start(params)
    hubble = cosmology.hubble(a, om, ol, jnp)
    expansion = a**2 * hubble
    momentum = expansion * cosmology.growth_rate(a, om, ol, jnp) * s
    if eq.physics.cdm_lpt == 2:
        omega = om / (a**3 * hubble**2)  # Omega_m(a)
        s2 = -3 / 7 * omega ** (-1 / 143) * gradient_at_lattice(inv * second_order_source(eq, phi1_hat))
        s = s + s2
        momentum = momentum + expansion * 2 * omega ** (6 / 11) * s2
    position = jnp.mod(lattice + s, jnp.asarray(eq.box, eq.dtype))
    return {"cdm_position": position, "cdm_momentum": momentum}


def second_order_source(eq: Any, phi_hat: jax.Array) -> jax.Array:
    """The r2c spectrum of sum_{i<j} (phi_ii phi_jj - phi_ij^2), the source of 2LPT's second-order potential,
    from the spectrum ``phi_hat`` of the first-order one: six inverse transforms of -k_i k_j phi_hat, the
    products on the grid, one forward transform (its Nyquist planes zeroed, as the first order's are)."""
    d = {(i, j): eq.fft.irfft(-eq.kr[i] * eq.kr[j] * phi_hat) for i in range(3) for j in range(i, 3)}
    source = (d[0, 0] * d[1, 1] + d[0, 0] * d[2, 2] + d[1, 1] * d[2, 2]
              - d[0, 1] ** 2 - d[0, 2] ** 2 - d[1, 2] ** 2)
    return eq.nyquist_free(eq.fft.rfft(source))


def diagnostics(eq: Any, state: Any, params: Any, a: jax.Array) -> dict[str, jax.Array]:
    """The particles' kinetic energy K = sum m p^2 / 2a^2, their potential energy (1/2) int rho_cdm V (the
    deconvolved density, as it enters the Poisson equation), the work rate Q_W = (1/a) int Phi drho/dt =
    (1/a^3) sum m grad(Phi) . p of the cosmic energy equation, and their largest displacement per unit ln a
    in cells (the CFL rate: p / (a^2 H dx)); empty slots count nothing."""
    mass = particle_mass(params, eq.box, eq.physics.cdm_particles)
    live = state.live[:, None]
    rho = eq.fft.irfft(density_spectrum(eq, state.position, state.live, params))
    return {"kinetic": 0.5 * mass * jnp.sum(live * state.momentum**2) / a**2,
            "potential": 0.5 * jnp.sum(rho * state.potential) * math.prod(eq.spacing) / a,
            "q_w": -mass * jnp.sum(live * state.force * state.momentum) / a**3,
            "speed": jnp.max(live * jnp.abs(state.momentum) / jnp.asarray(eq.spacing, eq.dtype)) / a**2}
