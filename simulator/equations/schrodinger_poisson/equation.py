"""Schrodinger-Poisson: self-gravitating fuzzy (wave) dark matter in a periodic box, the implementation.

    i dpsi/dt = -(nu/2) lap(psi) + ((V + g |psi|^2)/nu) psi,    lap(V) = 4 pi G (|psi|^2 - mean |psi|^2),

with nu = hbar/m: i hbar dpsi/dt = -hbar^2/(2m) lap(psi) + m (V + g rho) psi divided by hbar, psi
normalised so that |psi|^2 is the mass density, g the self-interaction (Gross-Pitaevskii) strength.

Diagnostics are box totals: mass M = int rho dV; kinetic K = (nu^2/2) int |grad psi|^2 dV (from the
spectrum); potential W = (1/2) int rho V dV; total E = K + W + (g/2) int rho^2 dV (conserved); max
density; CFL number dt max(6 nu / dx^2, max|V + g rho| / nu) (Mocz et al. 2017 time-step limits; <= 1
keeps every phase step below one radian).

Time stepping: kick-drift-kick. The kick multiplies psi by exp(-i (V + g |psi|^2) dt/nu) in real space
(|psi| unchanged, so V and the self-interaction are unchanged: the kick is exact); the drift multiplies psi_hat by
exp(-i nu k^2 dt/2), exact in k-space, then refreshes V from the new density. Both parts are unitary, so mass is
conserved to round-off (Mocz et al. 2017, MNRAS 471, 4559; Woo & Chiueh 2009, ApJ 697, 850).

Cold dark matter beside the wave (``physics.fdm_fraction`` < 1, see the package docstring): the particles'
part of kick (p += -grad(V) dt) and drift (x += p dt, then the hand-over to their owners and the refresh of V
and the force), their layout, restarts and outputs are :class:`simulator.equations.cold.species.ColdSpecies`'s,
with the static box's factors K1 = K2 = dt, G = ``physics.G`` and m_p = ((1 - f) / f) mean(|psi|^2) V / Np
(the wave's mass is conserved to round-off, so m_p is too). Without particles none of it runs: the state
and every number are those of the wave alone. At f = 0 the particles are alone: the state is
:class:`~simulator.equations.cold.species.ColdState` with its own particle mass (``stored_mass``: rho0 V / Np
of the ``jeans`` start), no psi; diagnostics and spectra are the particles'.

Arrays: the state is :class:`SPState`, psi (complex) and V (real), both ``(Nx, Ny, Nz)`` in the FFT
backend's real-space layout; a mixed run's :class:`~simulator.equations.cold.species.MixedState` adds the
particles' positions, momenta and forces ``(slots, 3)`` by owner. The kinetic drift uses the complex
transform (full spectrum); the Poisson solve the real one, with every Nyquist plane of the density dropped
so that backends with and without a real transform solve the same problem.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple, final

import jax
import jax.numpy as jnp

from simulator.equations import resolution
from simulator.equations.base import Params, ParticleArrays, SplitStepEquation
from simulator.equations.cold import mesh
from simulator.equations.cold.species import ColdSpecies
from simulator.equations.gravity import inverse_laplacian, potential_spectrum
from simulator.equations.noise import white_noise
from simulator.equations.phase import WaveEquation, rotate
from simulator.equations.schrodinger_poisson import INFO
from simulator.equations.schrodinger_poisson.soliton import soliton_profile
from simulator.fft import complex_dtype
from simulator.observables import spectra


class SPState(NamedTuple):
    """psi (complex) and its potential V (real): ``(Nx, Ny, Nz)`` each, real-space layout."""

    psi: jax.Array
    potential: jax.Array


@final
class SchrodingerPoisson(WaveEquation, ColdSpecies, SplitStepEquation):
    """Kick and drift operators, the potential, diagnostics and spectra on one FFT backend (leaves: the wave's,
    :class:`~simulator.equations.phase.WaveEquation`)."""

    info = INFO
    stored_mass = True  # without the wave no parameter sets the particle mass: the state holds it

    # ---- operators -----------------------------------------------------------------------------------

    def potential(self, psi: jax.Array, params: Params) -> jax.Array:
        """V from lap(V) = 4 pi G (|psi|^2 - mean), real space."""
        rho_hat = self.nyquist_free(self.fft.rfft(jnp.abs(psi) ** 2))
        return self.fft.irfft(potential_spectrum(rho_hat, inverse_laplacian(self.kr), params["G"]))

    def kick(self, state: SPState, dt: jax.Array, params: Params) -> SPState:
        """psi <- exp(-i (V + g |psi|^2) dt / nu) psi: the potential part, exact (|psi| does not change; a
        rotation, :mod:`.phase`); in a mixed run also p <- p - grad(V) dt, exact (x, hence V, fixed); without the
        wave that alone."""
        if not self.wave:
            return self.kick_particles(state, None, dt)
        v = state.potential + params["self_interaction"] * jnp.abs(state.psi) ** 2  # g = 0 adds exactly nothing
        psi = rotate(state.psi, -(dt / params["hbar_over_m"]) * v)
        if self.mixed:
            return self.kick_particles(state, psi, dt)
        return SPState(psi, state.potential)

    def drift(self, state: SPState, dt: jax.Array, params: Params) -> SPState:
        """psi_hat <- exp(-i nu k^2 dt / 2) psi_hat: the kinetic part, exact; in a mixed run also x <- x + p dt
        (exact: p fixed) and the hand-over to the new owners; then V (and the force) of the new density; without
        the wave the particles' part alone."""
        if not self.wave:
            return self.drift_particles(state, None, dt, params)
        kx, ky, kz = self.kc
        phase = (-0.5 * params["hbar_over_m"] * dt) * (kx**2 + ky**2 + kz**2)
        psi = self.fft.ifft(rotate(self.fft.fft(state.psi), phase))
        if self.mixed:
            return self.drift_particles(state, psi, dt, params)
        return SPState(psi, self.potential(psi, params))

    # ---- cold particles (a mixed run, or the particles alone) ----------------------------------------------------

    def cdm_mass(self, psi: jax.Array | None, params: Params, mass: jax.Array | None = None) -> jax.Array:
        """The mass of one cold particle, ((1 - f) / f) mean(|psi|^2) V / Np: the particles carry 1 - f of
        the mass, the wave f; without the wave (``psi`` None) the state's own ``mass``."""
        if psi is None:
            return mass[0]
        f = params["fdm_fraction"]
        wave = jnp.mean(jnp.abs(psi) ** 2) * math.prod(self.box)
        return (1.0 - f) / f * wave / self.physics.cdm_particles

    def cdm_gravity(self, params: Params) -> jax.Array:
        """G of the Poisson equation, ``physics.G``."""
        return params["G"]

    def particles(self, state: Any, params: Params) -> dict[str, ParticleArrays]:
        """A run's cold particles as the species ``cdm``: positions wrapped into [0, L) and velocities
        dx/dt = p, ``(slots, 3)`` by owner, with their identities (lattice indices) and occupied slots."""
        return self.cold_particles(state, state.momentum) if self.cold else {}

    # ---- states --------------------------------------------------------------------------------------

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> SPState:
        """The state of a real-space wave function ``psi`` ``(Nx, Ny, Nz)``: psi and its potential; with
        particles their positions ``cdm_position`` and velocities ``cdm_momentum`` ``(Np, 3)`` in lattice order
        too; without the wave those and the mass of one particle ``cdm_mass`` ``(1,)``."""
        if not self.wave:
            return self.mixed_state(None, fields["cdm_position"], fields["cdm_momentum"], params, fields["cdm_mass"])
        psi = fields["psi"].astype(complex_dtype(self.dtype))
        if self.cold:  # (Np, 3) in lattice order, sharded by rows: laid out by owner here
            return self.mixed_state(psi, fields["cdm_position"], fields["cdm_momentum"], params)
        return SPState(psi, self.potential(psi, params))

    def fields(self, state: SPState, params: Params) -> dict[str, jax.Array]:
        """Real space ``(Nx, Ny, Nz)``: density |psi|^2, |psi|, phase arg(psi), potential V, and psi; in a mixed
        run the particles' assigned density and the total; without the wave V and the particles' density."""
        if not self.wave:
            return {"potential": state.potential, "cdm_density": self.cdm_density(state, params)}
        out = {"density": jnp.abs(state.psi) ** 2, "abs_psi": jnp.abs(state.psi), "phase": jnp.angle(state.psi),
               "potential": state.potential, "psi": state.psi}
        if self.mixed:
            out["cdm_density"] = self.cdm_density(state, params)
            out["total_density"] = out["density"] + out["cdm_density"]
        return out

    # ---- diagnostics ---------------------------------------------------------------------------------

    def diagnostics(self, state: SPState, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Box totals: mass, kinetic, potential and total energy; max density; CFL number; the resolution of the
        de Broglie scale (k_max / k_rms and the spectral tail of psi); the particles' alone without the wave (no
        de Broglie wavenumber)."""
        if not self.wave:
            m_p = self.particle_mass(state, params)
            part = mesh.energies(self, state, m_p)
            return {"mass": m_p * self.physics.cdm_particles, "kinetic": part["kinetic"],
                    "potential": part["potential"], "total": part["kinetic"] + part["potential"],
                    "max_density": jnp.max(self.cdm_density(state, params)), "cfl": dt * part["speed"]}
        nu, g = params["hbar_over_m"], params["self_interaction"]
        rho = jnp.abs(state.psi) ** 2
        kx, ky, kz = self.kc
        power = jnp.abs(self.fft.fft(state.psi)) ** 2
        grad2 = jnp.sum((kx**2 + ky**2 + kz**2) * power) / float(self.fft.size)
        kinetic = 0.5 * nu**2 * grad2 * self.cell_volume
        potential = 0.5 * jnp.sum(rho * state.potential) * self.cell_volume
        interaction = 0.5 * g * jnp.sum(rho**2) * self.cell_volume
        rate = jnp.maximum(6 * nu / min(self.spacing) ** 2, jnp.max(jnp.abs(state.potential + g * rho)) / nu)
        mass, peak = jnp.sum(rho) * self.cell_volume, jnp.max(rho)
        if self.mixed:  # the particles' kinetic and potential energy (the deconvolved density, as in Poisson)
            m_p = self.cdm_mass(state.psi, params)
            part = mesh.energies(self, state, m_p)
            kinetic, potential = kinetic + part["kinetic"], potential + part["potential"]
            mass = mass + m_p * self.physics.cdm_particles
            peak = jnp.max(rho + self.cdm_density(state, params))
            rate = jnp.maximum(rate, part["speed"])
        return {
            "mass": mass,
            "kinetic": kinetic,
            "potential": potential,
            "total": kinetic + potential + interaction,
            "max_density": peak,
            "cfl": dt * rate,
            "kmax_de_broglie": resolution.nyquist(self.fft.shape, self.box) / jnp.sqrt(
                grad2 / jnp.maximum(jnp.sum(rho), jnp.finfo(rho.dtype).tiny)),
            "psi_tail": resolution.spectral_tail(power, self.kc, self.spacing, jnp),
        }

    def spectra(self, state: SPState, params: Params) -> dict[str, jax.Array]:
        """Shell-summed power spectrum of the density contrast delta = rho/mean(rho) - 1 (sums to <delta^2> but for
        the Nyquist planes); in a mixed run of the total matter, f delta_wave + (1 - f) delta_cdm, and of each
        component's own contrast. Every Nyquist plane is left out: a real transform's half spectrum stores one of
        them fewer than the full one (jaxdecomp's), so backends agree only without them; the potential and the
        particles' deconvolved density have none either. Without the wave: the particles' contrast."""
        weight = self.nyquist_free(self.weight)
        if not self.wave:
            m_p = self.particle_mass(state, params)
            cdm_hat = mesh.contrast_spectrum(self, state.position, state.live, m_p,
                                             m_p * self.physics.cdm_particles / math.prod(self.box))
            return {"density": spectra.shell_sum(weight * jnp.abs(cdm_hat) ** 2 / float(self.fft.size) ** 2, self.kr,
                                                 self.fft.shape, self.box)}
        rho = jnp.abs(state.psi) ** 2
        delta_hat = self.fft.rfft(rho / jnp.mean(rho) - 1)
        contrasts = {"density": delta_hat}
        if self.mixed:
            f = params["fdm_fraction"]
            mean = (1.0 - f) / f * jnp.mean(rho)
            cdm_hat = mesh.contrast_spectrum(self, state.position, state.live, self.cdm_mass(state.psi, params), mean)
            contrasts = {"density": f * delta_hat + (1.0 - f) * cdm_hat, "density_fdm": delta_hat,
                         "density_cdm": cdm_hat}
        return {name: spectra.shell_sum(weight * jnp.abs(d) ** 2 / float(self.fft.size) ** 2, self.kr,
                                        self.fft.shape, self.box) for name, d in contrasts.items()}


# ---- initial conditions: psi in real space ------------------------------------------------------------


def _jeans(eq: SchrodingerPoisson, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """psi = sqrt(rho0 (1 + eps cos(k x))) exp(i theta): a density wave along x at mode ``wavenumber``, at rest
    (theta = 0) or growing at ``rate`` r: d delta/dt = -div(nu grad theta) = r delta gives lap(theta) =
    -(r / nu) delta. In a mixed run the wave holds f rho0 and the particles the rest: the lattice displaced by
    s, delta = -div(s) (:func:`simulator.equations.cold.mesh.displacement`), with momenta p = ds/dt = r s. Without
    the wave (f = 0) the particles alone, each of mass rho0 V / Np.

    Linear theory (delta << 1, a wave alone): delta(t) = eps (cosh(gamma t) + (r / gamma) sinh(gamma t)) with
    gamma^2 = 4 pi G rho0 - nu^2 k^4 / 4 when positive (Jeans-unstable), else oscillating at omega^2 = -gamma^2.
    """
    x = 2 * jnp.pi * ic.wavenumber / eq.box[0] * c[0]
    delta = jnp.broadcast_to(ic.amplitude * jnp.cos(x), eq.fft.shape)
    delta_hat = eq.fft.rfft(delta)
    out = {}
    if eq.wave:
        theta = eq.fft.irfft((-ic.rate / params["hbar_over_m"]) * inverse_laplacian(eq.kr) * delta_hat)
        theta = jnp.where(theta == 0, 0.0, theta)  # at rest: +0, so psi is sqrt(rho) + 0i bit for bit, as always
        rho = ic.density * (1 + delta)
        if eq.cold:
            rho = params["fdm_fraction"] * rho
        out["psi"] = jnp.sqrt(rho) * jnp.exp(1j * theta)
    else:
        out["cdm_mass"] = jnp.full(1, ic.density * math.prod(eq.box) / eq.physics.cdm_particles, eq.dtype)
    if eq.cold:
        s = mesh.displacement(eq, delta_hat)
        out["cdm_position"] = jnp.mod(mesh.lattice(eq) + s, jnp.asarray(eq.box, eq.dtype))
        out["cdm_momentum"] = ic.rate * s
    return out


def _soliton(eq: SchrodingerPoisson, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """The ground-state soliton with core radius r_c (where rho = rho_c / 2) at the box centre, on a
    uniform background of density ``background``.

    rho_c = (nu^2 / G) (r0 / r_c)^4 follows from the ground state's scaling; r0 ~= 0.69 in units
    nu = G = 1 (it reproduces Schive et al. 2014's rho_c = 1.9 (m/1e-23 eV)^-2 (r_c/kpc)^-4 Msun/pc^3).
    """
    r_tab, phi_tab, r0 = soliton_profile()
    scale = ic.core_radius / r0
    r2 = 0.0
    for ci, length in zip(c, eq.box, strict=True):
        r2 = r2 + (ci - length / 2) ** 2
    amp = params["hbar_over_m"] / (jnp.sqrt(params["G"]) * scale**2)
    psi = amp * jnp.interp(jnp.sqrt(r2) / scale, jnp.asarray(r_tab, eq.dtype), jnp.asarray(phi_tab, eq.dtype))
    return {"psi": jnp.sqrt(psi**2 + ic.background)}


def _random(eq: SchrodingerPoisson, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """A cold random density field that collapses into halos: rho = rho0 exp(d) / mean(exp(d)), d a
    Gaussian random field of rms ``amplitude`` with spectrum ~ k^4 exp(-2 (k/k_peak)^2) (log-normal,
    so rho > 0), psi = sqrt(rho) at rest. Drawn from ``seed`` with JAX's sharding-invariant generator,
    (:func:`~simulator.equations.noise.white_noise`): the same field on any platform, backend, device or
    process count, and in both precisions up to float32 round-off.
    """
    noise_hat = eq.nyquist_free(eq.fft.rfft(white_noise(eq.fft, jax.random.key(ic.seed), eq.dtype)))
    kx, ky, kz = eq.kr
    kmag = jnp.sqrt(kx**2 + ky**2 + kz**2) * (eq.box[0] / (2 * jnp.pi))
    d = eq.fft.irfft(noise_hat * kmag**2 * jnp.exp(-((kmag / ic.k_peak) ** 2)))
    d = d * (ic.amplitude / jnp.sqrt(jnp.mean(d**2)))
    rho = jnp.exp(d)
    return {"psi": jnp.sqrt(ic.density * rho / jnp.mean(rho))}


SchrodingerPoisson.builders = {"jeans": _jeans, "soliton": _soliton, "random": _random}
