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
drift adds p K2 to x (p fixed), then Phi and the force are refreshed. The particle-mesh algorithm, the
particles' part of the steps, their layout on the devices and their outputs are shared with the static box
(:mod:`simulator.equations.cold`); this module gives them the comoving units (the particle mass, G) and
holds what is cosmological: the Zel'dovich and 2LPT start and the energies of the cosmic energy equation.

Particle-mesh (Hockney & Eastwood 1988, ch. 5; :mod:`simulator.equations.cold.mesh`): CIC or TSC
assignment (``physics.cdm_window``) with its transform divided out, one Poisson solve for wave and particles,
the force interpolated back by the same window, so total momentum is conserved to round-off.

Initial conditions (Zel'dovich 1970): the particles sit on the lattice q = (i L / n + dx / 2, ...) (n divides
the grid: the centres of every (N/n)-th cell, where the window's response to a small displacement is
linear; a cloud in cell on a node has a kink there) displaced by s with delta = -div(s), s_hat = i k delta_hat / k^2,
the same modes (the same white noise) as the wave; the growing mode's momentum is p = a^2 H f s. With
``physics.cdm_lpt`` 2 the second-order (2LPT) displacement and momentum are added (:func:`zeldovich`). The
particles take the spectrum without the FDM cut-off (cold matter), the wave the one with it
(``physics.fdm_transfer``).

Distribution (:mod:`simulator.equations.cold.mesh`): every particle is owned by the device whose real-space
block holds its cell; ``physics.cdm_capacity`` sets the slots per device and ``physics.cdm_exchange`` the
rows a device may hand to each neighbour per step; a particle that finds no room stops the run at the
chunk's end, naming the setting to raise.
"""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from simulator.equations.cold import mesh
from simulator.equations.cold.mesh import (
    distribute,
    per_axis,
    sizes,
    window_transform,
)
from simulator.equations.fdm_cosmo import cosmology
from simulator.equations.gravity import inverse_laplacian

__all__ = ["density", "density_spectrum", "diagnostics", "distribute", "particle_mass", "per_axis",
           "potential_and_force", "second_order_source", "sizes", "solve", "window_transform", "zeldovich"]


def particle_mass(params: Any, box: tuple[float, ...], count: int) -> jax.Array:
    """m_p = (1 - f) omega_m V / Np: the particles carry the matter the wave does not."""
    return (1.0 - params["fdm_fraction"]) * params["omega_m"] * math.prod(box) / count


def density(eq: Any, position: jax.Array, live: jax.Array, params: Any) -> jax.Array:
    """The particles' assigned mass density on the grid (real space, not deconvolved: >= 0); ``live`` the
    occupied slots (0 or 1, the run's dtype) (:func:`simulator.equations.cold.mesh.density`)."""
    return mesh.density(eq, position, live, particle_mass(params, eq.box, eq.physics.cdm_particles))


def density_spectrum(eq: Any, position: jax.Array, live: jax.Array, params: Any) -> jax.Array:
    """rho_cdm's r2c spectrum with the window divided out (Nyquist planes zeroed)."""
    return mesh.density_spectrum(eq, position, live, particle_mass(params, eq.box, eq.physics.cdm_particles))


def solve(eq: Any, rho_wave_hat: jax.Array, rho_cdm: jax.Array, params: Any) -> tuple[jax.Array, jax.Array]:
    """Phi = a V of the total density (real space) and the field -grad(Phi) the particles feel ``(3, Nx, Ny,
    Nz)`` (:func:`simulator.equations.cold.mesh.solve` with G in code units)."""
    return mesh.solve(eq, rho_wave_hat, rho_cdm, cosmology.G_CODE)


def potential_and_force(eq: Any, rho_wave_hat: jax.Array, position: jax.Array, live: jax.Array, params: Any
                        ) -> tuple[jax.Array, jax.Array]:
    """Phi (real space) and -grad(Phi) at the particles ``(slots, 3)``: assignment, :func:`solve`, and the
    interpolation by the same window."""
    return mesh.potential_and_force(eq, rho_wave_hat, position, live,
                                    particle_mass(params, eq.box, eq.physics.cdm_particles), cosmology.G_CODE)

def zeldovich(eq: Any, delta_hat: jax.Array, params: Any) -> dict[str, jax.Array]:
    """Lattice positions displaced by s (delta = -div s) and the growing mode's momenta p = a^2 H f s, from
    the r2c spectrum ``delta_hat`` of the particles' density contrast at the start. With ``physics.cdm_lpt``
    2, second-order Lagrangian perturbation theory (2LPT; Scoccimarro 1998, MNRAS 299, 1097; Crocce,
    Pueblas & Scoccimarro 2006): x = q + s1 + s2 and p = a^2 H (f1 s1 + f2 s2), with s1 = -grad(phi1),
    lap(phi1) = delta, s2 = D2 grad(phi2), lap(phi2) = sum_{i<j} (phi1_ii phi1_jj - phi1_ij^2), and the
    second-order growth D2 = -3/7 Omega_m(a)^(-1/143), f2 = 2 Omega_m(a)^(6/11) (Bouchet et al. 1995, A&A
    296, 575) at the start, where D1 = 1."""
    inv = inverse_laplacian(eq.kr)
    phi1_hat = inv * delta_hat
    s = -mesh.gradient_at_lattice(eq, phi1_hat)  # the field at the lattice points, cell centres
    lattice = mesh.lattice(eq)
    om, ol = params["omega_m"], params["omega_lambda"]
    a = eq.a_start(params)
    hubble = cosmology.hubble(a, om, ol, jnp)
    expansion = a**2 * hubble
    momentum = expansion * cosmology.growth_rate(a, om, ol, jnp) * s
    if eq.physics.cdm_lpt == 2:
        omega = om / (a**3 * hubble**2)  # Omega_m(a)
        s2 = -3 / 7 * omega ** (-1 / 143) * mesh.gradient_at_lattice(eq, inv * second_order_source(eq, phi1_hat))
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
    part = mesh.energies(eq, state, particle_mass(params, eq.box, eq.physics.cdm_particles))
    return {"kinetic": part["kinetic"] / a**2, "potential": part["potential"] / a, "q_w": -part["work"] / a**3,
            "speed": part["speed"] / a**2}
