"""Fuzzy dark matter in an expanding universe, the implementation (the equations and units are in the
package docstring and :mod:`.cosmology`).

The state holds psi and Phi = a V, the solution of lap(Phi) = 4 pi G (|psi|^2 - mean) (G = 3/(8 pi)
in code units), which does not depend on a: the peculiar potential is V = Phi / a.

Time stepping: kick-drift-kick on the clock s = ln(a/a_start) (as GADGET-2 steps in ln a; Springel
2005, MNRAS 364, 1105), each part exact over its own interval (:func:`simulator.time.integrators.
make_kdk` hands this equation ``at(t)``): the kick over [s0, s1] multiplies psi by
exp(-i (Phi K1 + g |psi|^2 K3) / nu) with K_p = int dt / a^p over the interval, exact since |psi| and so
Phi do not change in it; the drift multiplies psi_hat by exp(-i nu k^2 K2 / 2), exact in k-space, then
refreshes Phi. The K_p are Gauss-Legendre integrals of the Friedmann expansion over the sub-step
(:func:`.cosmology.step_integrals`), not a(t) frozen at its start: the composition is symmetric, hence
second order in the step, and both parts are unitary, so mass is conserved to round-off.

Diagnostics (box totals, comoving): K = (nu^2 / 2 a^2) int |grad psi|^2, W = (1/2) int rho V,
U = (g / 2 a^3) int (rho - mean)^2, E = K + W + U, which obeys the Layzer-Irvine (cosmic energy) equation
dE/dt + H (2K + W + 3U) = 0 (Layzer 1963; Irvine 1961; with the self-interaction's 3U). Its source
2K + W + 3U and the source's rate are computed from the state and the equations of motion:
d(2K + W + 3U)/dt = -H (4K + W + 9U) - Q_W + Q_U with Q_W = (1/a) int Phi drho/dt,
Q_U = (g/a^3) int (rho - mean) drho/dt and drho/dt = -(nu/a^2) Im(psi* lap psi), so the host integrates the
source between rows to fourth order (:meth:`ComovingClock.derived_columns`).

A mixed run (``physics.fdm_fraction`` < 1) carries cold dark matter particles beside psi: the particle-mesh
force, the particles' part of kick and drift (with the comoving factors K1, K2), their layout, restarts and
outputs are shared with the static box (:class:`simulator.equations.cold.species.ColdSpecies`); :mod:`.cdm`
gives them the comoving units and holds their initial conditions and energies. Its state is
:class:`~simulator.equations.cold.species.MixedState`. Without particles the state and every number are those
of a pure wave run. At f = 0 the particles are alone (pure cold dark matter): the state is
:class:`~simulator.equations.cold.species.ColdState`, no psi; the same kick-drift-kick moves the particles,
the diagnostics, the Layzer-Irvine columns and the spectra are theirs.

Arrays: :class:`CosmoState` psi (complex) and Phi (real), ``(Nx, Ny, Nz)`` each in the real-space layout;
:class:`MixedState` adds the particles' positions, momenta and forces ``(slots, 3)`` by owner; ``ColdState``
holds Phi and the particles.
Spectra average over the modes of each shell, every Nyquist plane excluded (so backends with and
without a real transform agree).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, NamedTuple, final

import jax
import jax.numpy as jnp
import numpy as np

from simulator.equations import resolution
from simulator.equations.base import Params, ParticleArrays, SplitStepEquation
from simulator.equations.cold import mesh
from simulator.equations.cold.species import ColdSpecies, ColdState, MixedState  # noqa: F401  (the states, re-exported)
from simulator.equations.fdm_cosmo import INFO, FDMCosmoParams, cdm, cosmology, power
from simulator.equations.gravity import inverse_laplacian, potential_spectrum
from simulator.equations.noise import white_noise
from simulator.equations.phase import WaveEquation, rotate
from simulator.fft import FFTBackend, complex_dtype
from simulator.observables import spectra


class CosmoState(NamedTuple):
    """psi (complex) and Phi = a V (real): ``(Nx, Ny, Nz)`` each, real-space layout."""

    psi: jax.Array
    potential: jax.Array


@final
class FDMCosmo(WaveEquation, ColdSpecies, SplitStepEquation):
    """The comoving kick and drift, the potential, diagnostics and spectra on one FFT backend.

    Leaves: the wave's (:class:`~simulator.equations.phase.WaveEquation`), the spectrum file's table (ln k, ln P)
    when there is one, and the run time ``time`` (s = ln(a/a_start), set by :meth:`at`).
    """

    info = INFO
    _LEAVES: ClassVar[tuple[str, ...]] = (*WaveEquation._LEAVES, "table", "time")

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, physics: FDMCosmoParams | None = None):
        super().__init__(fft, box, dtype, physics)
        table = None if self.physics.spectrum_file is None else power.read_table(self.physics.spectrum_file)
        self.table = None if table is None else tuple(fft.replicated(v, self.dtype) for v in table)
        self.time = fft.replicated(np.zeros(()), self.dtype)

    def at(self, t: jax.Array) -> FDMCosmo:
        leaves, static = self.tree_flatten()
        return self.tree_unflatten(static, (*leaves[:-1], jnp.asarray(t, self.dtype)))

    # ---- the structure: a wave alone, or a wave and cold particles ------------------------------------

    def wave_mean(self, params: Params) -> jax.Array:
        """The wave's mean comoving density f omega_m."""
        return params["fdm_fraction"] * params["omega_m"]

    # ---- the background at this equation's time ------------------------------------------------------

    @staticmethod
    def a_start(params: Params) -> jax.Array:
        return 1.0 / (1.0 + params["z_start"])

    def scale_factor(self, params: Params) -> jax.Array:
        return self.a_start(params) * jnp.exp(self.time)

    def _integrals(self, dt: jax.Array, params: Params, powers: tuple[int, ...]) -> list[jax.Array]:
        """int dt / a^p over [time, time + dt] of the clock (see :func:`.cosmology.step_integrals`)."""
        return cosmology.step_integrals(self.time, dt, self.a_start(params), params["omega_m"],
                                        params["omega_lambda"], powers, jnp)

    # ---- operators -----------------------------------------------------------------------------------

    def potential(self, psi: jax.Array, params: Params) -> jax.Array:
        """Phi = a V from lap(Phi) = 4 pi G (|psi|^2 - mean), real space (a wave alone)."""
        rho_hat = self.nyquist_free(self.fft.rfft(jnp.abs(psi) ** 2))
        return self.fft.irfft(potential_spectrum(rho_hat, inverse_laplacian(self.kr), cosmology.G_CODE))

    def cdm_mass(self, psi: jax.Array | None, params: Params, mass: jax.Array | None = None) -> jax.Array:
        """The mass of one cold particle, (1 - f) omega_m V / Np (:func:`.cdm.particle_mass`), wave or none."""
        return cdm.particle_mass(params, self.box, self.physics.cdm_particles)

    def cdm_gravity(self, params: Params) -> float:
        """G in code units (:data:`.cosmology.G_CODE`): lap(Phi) = 4 pi G (rho - omega_m)."""
        return cosmology.G_CODE

    def particles(self, state: Any, params: Params) -> dict[str, ParticleArrays]:
        """A run's cold particles as the species ``cdm``, at this equation's time: comoving positions x,
        wrapped into [0, L) (Mpc/h), and peculiar velocities a dx/dt = p / a (code velocity, (Mpc/h) H0 =
        100 km/s), ``(slots, 3)`` by owner with their identities (lattice indices) and occupied slots."""
        if not self.cold:
            return {}
        return self.cold_particles(state, state.momentum / self.scale_factor(params))

    def kick(self, state: CosmoState, dt: jax.Array, params: Params) -> CosmoState:
        """psi <- exp(-i (Phi K1 + g (|psi|^2 - rho_bar) K3) / nu) psi over [time, time + dt]: exact (|psi| is
        fixed). The uniform part g rho_bar / a^3 of the self-interaction would only turn psi's global phase:
        it is left out, as the mean density is from the Poisson equation. Without the wave, the particles'
        part alone."""
        if not self.wave:  # p <- p - grad(Phi) K1
            return self.kick_particles(state, None, *self._integrals(dt, params, (1,)))
        k1, k3 = self._integrals(dt, params, (1, 3))
        nu = cosmology.nu_code(params["m22"], params["h"])
        excess = jnp.abs(state.psi) ** 2 - self.wave_mean(params)
        phase = (k1 * state.potential + (k3 * params["self_interaction"]) * excess) / nu
        psi = rotate(state.psi, -phase)
        if self.mixed:  # p <- p - grad(Phi) K1, exact: the positions, hence the force, do not change
            return self.kick_particles(state, psi, k1)
        return CosmoState(psi, state.potential)

    def drift(self, state: CosmoState, dt: jax.Array, params: Params) -> CosmoState:
        """psi_hat <- exp(-i nu k^2 K2 / 2) psi_hat over [time, time + dt], exact; then Phi of the new density.
        Without the wave, x <- x + p K2 alone, the hand-over and Phi of the particles."""
        (k2,) = self._integrals(dt, params, (2,))
        if not self.wave:
            return self.drift_particles(state, None, k2, params)
        nu = cosmology.nu_code(params["m22"], params["h"])
        kx, ky, kz = self.kc
        phase = (-0.5 * nu * k2) * (kx**2 + ky**2 + kz**2)
        psi = self.fft.ifft(rotate(self.fft.fft(state.psi), phase))
        if self.mixed:  # x <- x + p K2, exact: p does not change; then each particle to its new owner
            return self.drift_particles(state, psi, k2, params)
        return CosmoState(psi, self.potential(psi, params))

    # ---- states --------------------------------------------------------------------------------------

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> CosmoState:
        """The state of a real-space wave function ``psi`` ``(Nx, Ny, Nz)`` (its mean |psi|^2 should be
        f omega_m, the Friedmann background's share of the wave): psi and its potential; with particles
        their positions ``cdm_position`` (comoving, Mpc/h) and momenta ``cdm_momentum`` = a^2 dx/dt ``(Np, 3)``
        in lattice order too (without the wave, those alone)."""
        psi = fields["psi"].astype(complex_dtype(self.dtype)) if self.wave else None
        if self.cold:  # (Np, 3) in lattice order, sharded by rows: laid out by owner here
            return self.mixed_state(psi, fields["cdm_position"], fields["cdm_momentum"], params)
        return CosmoState(psi, self.potential(psi, params))

    def fields(self, state: CosmoState, params: Params) -> dict[str, jax.Array]:
        """Real space ``(Nx, Ny, Nz)``: density |psi|^2, |psi|, arg psi, the peculiar potential V = Phi/a, psi;
        with particles their assigned density and the total; without the wave V and the particles' density."""
        if not self.wave:
            return {"potential": state.potential / self.scale_factor(params),
                    "cdm_density": cdm.density(self, state.position, state.live, params)}
        out = {"density": jnp.abs(state.psi) ** 2, "abs_psi": jnp.abs(state.psi), "phase": jnp.angle(state.psi),
               "potential": state.potential / self.scale_factor(params), "psi": state.psi}
        if self.mixed:
            out["cdm_density"] = cdm.density(self, state.position, state.live, params)
            out["total_density"] = out["density"] + out["cdm_density"]
        return out

    # ---- diagnostics ---------------------------------------------------------------------------------

    def diagnostics(self, state: CosmoState, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """a, z, age; box totals K, W, U, E (wave and particles); the Layzer-Irvine source and its rate; peak
        density (of the total, in a mixed run); the spectral tail of psi (resolution); CFL. Without the wave the
        particles' alone (no U, psi_tail or de Broglie wavenumber: they are the wave's)."""
        om, ol = params["omega_m"], params["omega_lambda"]
        a = self.scale_factor(params)
        hub = cosmology.hubble(a, om, ol, jnp)
        gyr = cosmology.MPC / (cosmology.VELOCITY * params["h"]) / cosmology.GYR
        out = {"a": a, "z": cosmology.redshift(a, jnp), "cosmic_time": cosmology.cosmic_time(a, om, ol, jnp) * gyr}
        if not self.wave:  # the particles' energies and work rate (:func:`.cdm.diagnostics`) alone
            part = cdm.diagnostics(self, state, params, a)
            kinetic, potential = part["kinetic"], part["potential"]
            rho = cdm.density(self, state.position, state.live, params)
            return {**out, "mass": cdm.particle_mass(params, self.box, self.physics.cdm_particles)
                    * self.physics.cdm_particles, "kinetic": kinetic, "potential": potential,
                    "total": kinetic + potential, "max_density": jnp.max(rho) / jnp.mean(rho),
                    "li_source": 2 * kinetic + potential,
                    "li_rate": (-hub * (4 * kinetic + potential) - part["q_w"]) / hub, "cfl": dt * part["speed"] / hub}
        g = params["self_interaction"]
        nu = cosmology.nu_code(params["m22"], params["h"])
        rho = jnp.abs(state.psi) ** 2
        kx, ky, kz = self.kc
        k2 = kx**2 + ky**2 + kz**2
        psi_hat = self.fft.fft(state.psi)
        dv = self.cell_volume
        kinetic = 0.5 * nu**2 * jnp.sum(k2 * jnp.abs(psi_hat) ** 2) / float(self.fft.size) * dv / a**2
        potential = 0.5 * jnp.sum(rho * state.potential) * dv / a
        excess = rho - jnp.mean(rho)
        interaction = 0.5 * g * jnp.sum(excess**2) * dv / a**3
        rho_dot = -(nu / a**2) * jnp.imag(jnp.conj(state.psi) * self.fft.ifft(-k2 * psi_hat))
        q_w = jnp.sum(state.potential * rho_dot) * dv / a
        q_u = g * jnp.sum(excess * rho_dot) * dv / a**3
        mass = jnp.sum(rho) * dv
        peak = jnp.max(rho) / jnp.mean(rho)
        speed = 0.0
        if self.cold:  # the particles' energies and work rate (:func:`.cdm.diagnostics`) join the wave's
            part = cdm.diagnostics(self, state, params, a)
            kinetic, potential, q_w = kinetic + part["kinetic"], potential + part["potential"], q_w + part["q_w"]
            mass = mass + cdm.particle_mass(params, self.box, self.physics.cdm_particles) * self.physics.cdm_particles
            total = rho + cdm.density(self, state.position, state.live, params)
            peak, speed = jnp.max(total) / jnp.mean(total), part["speed"]
        source_rate = -hub * (4 * kinetic + potential + 9 * interaction) - q_w + q_u
        tail = resolution.spectral_tail(jnp.abs(psi_hat) ** 2, self.kc, self.spacing, jnp)
        v_tot = state.potential / a + g * (rho - self.wave_mean(params)) / a**3
        rate = jnp.maximum(jnp.maximum(6 * nu / (a * min(self.spacing)) ** 2, jnp.max(jnp.abs(v_tot)) / nu),
                           speed) / hub
        return {
            **out,
            "mass": mass,
            "kinetic": kinetic,
            "potential": potential,
            "interaction": interaction,
            "total": kinetic + potential + interaction,
            "max_density": peak,
            "psi_tail": tail,
            "li_source": 2 * kinetic + potential + 3 * interaction,
            "li_rate": source_rate / hub,
            "cfl": dt * rate,
            "kmax_de_broglie": resolution.nyquist(self.fft.shape, self.box) / jnp.sqrt(
                jnp.sum(k2 * jnp.abs(psi_hat) ** 2) / jnp.sum(jnp.abs(psi_hat) ** 2)),
        }

    def spectra(self, state: CosmoState, params: Params) -> dict[str, jax.Array]:
        """Shell averages of V |delta_k|^2 (measured: of the total matter, and in a mixed run of the wave and
        of the particles, their window divided out, each contrast relative to its own mean) and of the
        linear P(k, z) over the same modes (in a mixed run the total's, (f sqrt(P_wave) + (1 - f)
        sqrt(P_cold))^2, as the initial conditions draw both from one noise; without the wave the cold
        spectrum's, no FDM cut-off)."""
        kx, ky, kz = self.kr
        k = jnp.sqrt(kx**2 + ky**2 + kz**2)
        f = params["fdm_fraction"]
        cold = power.linear_power(k, self.scale_factor(params), params, self.table, False, jnp)
        if self.cold:
            mass = cdm.particle_mass(params, self.box, self.physics.cdm_particles)
            cdm_hat = mesh.contrast_spectrum(self, state.position, state.live, mass, (1.0 - f) * params["omega_m"])
        if not self.wave:  # the particles' contrast is the total's
            contrasts, linear = {"power": cdm_hat}, cold
        else:
            rho = jnp.abs(state.psi) ** 2
            wave_hat = self.fft.rfft(rho / jnp.mean(rho) - 1)
            contrasts = {"power": wave_hat}
            linear = power.linear_power(k, self.scale_factor(params), params, self.table, self.physics.fdm_transfer,
                                        jnp)
            if self.cold:  # the total's: f delta_wave + (1 - f) delta_cold of the initial conditions' two spectra
                contrasts = {"power": f * wave_hat + (1.0 - f) * cdm_hat, "power_fdm": wave_hat, "power_cdm": cdm_hat}
                linear = (f * jnp.sqrt(linear) + (1.0 - f) * jnp.sqrt(cold)) ** 2
        w = self.nyquist_free(self.weight)
        volume = math.prod(self.box)

        def average(values: jax.Array) -> jax.Array:
            return spectra.shell_sum(w * values, self.kr, self.fft.shape, self.box)

        count = average(jnp.ones_like(k))
        safe = jnp.where(count > 0, count, 1.0)
        out = {name: jnp.where(count > 0, average(volume * jnp.abs(d) ** 2 / float(self.fft.size) ** 2) / safe, 0.0)
               for name, d in contrasts.items()}
        return {**out, "power_linear": jnp.where(count > 0, average(linear) / safe, 0.0)}


# ---- initial conditions: psi in real space, the particles on their lattice ---------------------------------------


def _growing(eq: FDMCosmo, delta_hat: jax.Array, params: Params) -> dict[str, jax.Array]:
    """psi = sqrt(rho_bar (1 + delta)) exp(i theta) of a density contrast given by its r2c spectrum, with
    the growing mode's velocity: the comoving continuity equation d delta/dt = -div(dx/dt), dx/dt =
    (nu / a^2) grad theta, and d delta/dt = H f delta give lap(theta) = -(a^2 H f / nu) delta."""
    om, ol = params["omega_m"], params["omega_lambda"]
    a = eq.a_start(params)
    nu = cosmology.nu_code(params["m22"], params["h"])
    scale = a**2 * cosmology.hubble(a, om, ol, jnp) * cosmology.growth_rate(a, om, ol, jnp) / nu
    delta = eq.fft.irfft(delta_hat)
    theta = eq.fft.irfft(-scale * inverse_laplacian(eq.kr) * delta_hat)
    # 1 + delta > 0 wherever the linear field is valid (sigma << 1 at z_start); clipped, never negative
    return {"psi": jnp.sqrt(eq.wave_mean(params) * jnp.maximum(1.0 + delta, 0.0)) * jnp.exp(1j * theta)}


def _gaussian(eq: FDMCosmo, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """delta_hat = w_hat sqrt(N P(k, z_start) / V): white noise w (unit variance per cell, from
    :func:`~simulator.equations.noise.white_noise`: the same field on any layout and platform) coloured by the linear
    spectrum, so <|delta_k|^2> = P/V for delta_k = delta_hat / N; k = 0 and Nyquist planes are zero. The wave
    takes the spectrum with the FDM cut-off (``physics.fdm_transfer``), the particles the same modes with the
    cold one."""
    noise_hat = eq.nyquist_free(eq.fft.rfft(white_noise(eq.fft, jax.random.key(ic.seed), eq.dtype)))
    kx, ky, kz = eq.kr
    k = jnp.sqrt(kx**2 + ky**2 + kz**2)
    scale = eq.fft.size / math.prod(eq.box)
    out = {}
    if eq.wave:
        p = power.linear_power(k, eq.a_start(params), params, eq.table, eq.physics.fdm_transfer, jnp)
        out = _growing(eq, noise_hat * jnp.sqrt(p * scale), params)
    if eq.cold:  # the same modes, with the cold spectrum (no FDM cut-off)
        p_cold = power.linear_power(k, eq.a_start(params), params, eq.table, False, jnp)
        out.update(cdm.zeldovich(eq, noise_hat * jnp.sqrt(p_cold * scale), params))
    return out


def _mode(eq: FDMCosmo, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """delta = eps cos(2 pi m x / Lx) with the growing mode's velocity (the wave's, and with particles theirs by
    the Zel'dovich displacement of the same delta)."""
    x = 2 * jnp.pi * ic.wavenumber / eq.box[0] * c[0]
    delta_hat = eq.fft.rfft(jnp.broadcast_to(ic.amplitude * jnp.cos(x), eq.fft.shape))
    out = _growing(eq, delta_hat, params) if eq.wave else {}
    if eq.cold:
        out.update(cdm.zeldovich(eq, delta_hat, params))
    return out


FDMCosmo.builders = {"gaussian": _gaussian, "mode": _mode}
