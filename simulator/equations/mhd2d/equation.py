"""Incompressible magnetohydrodynamics in a periodic plane, vorticity-potential form: the implementation.

    d omega/dt = -div(u omega - B j) + L_omega omega,   L_omega = -nu k^2 - nu_p k^(2p)
    d A/dt     = u B_y - v B_x + L_A A,                 L_A = -eta k^2 - eta_p k^(2p)

(B . grad j = div(B j) as div B = 0; -u . grad A = u B_y - v B_x with B_x - B0x = dA/dy, B_y - B0y = -dA/dx, which
with B0 is (u x B)_z.) Pseudo-spectral as 2D MHD codes are (Biskamp & Welter 1989; FluidSim's ``ns2d``
for the flow): psi_hat = omega_hat / k^2, u_hat = i (k_y, -k_x) psi_hat, B_hat = i (k_y, -k_x) A_hat,
j_hat = k^2 A_hat, the products in real space, dealiased by the 2/3 rule: the truncated inviscid equations then
conserve the energy, the cross helicity and (B0 = 0) <A^2> exactly, and the time scheme alone moves them. One
evaluation costs one batched inverse transform of (u, v, omega, B_x, B_y, j) and one batched forward transform of
the three products; the diagonal linear part is integrated exactly by the integrating-factor schemes.

Arrays: a plane runs as the box ``(1, Nx, Ny)`` (:mod:`simulator.fft.plane`): the state is the spectra of
(omega, A), ``(2, *k_shape)``, the wavenumbers ``ops.k = (0, kx, ky)``; real fields are ``(1, Nx, Ny)``.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, final

import jax
import jax.numpy as jnp

from simulator.equations import resolution
from simulator.equations.base import Params
from simulator.equations.flow import plane
from simulator.equations.mhd2d import INFO
from simulator.equations.scalars import terms as passive


@final
class MHD2D(plane.VorticityFlow):
    """The magnetised plane on one FFT backend (:class:`~simulator.equations.flow.plane.VorticityFlow`)."""

    info = INFO
    diffusive = (("resistivity", "hyperresistivity"),)

    def spectral_terms(self, state: jax.Array) -> list[jax.Array]:
        """The spectra of u, v, omega, B_x - B0x, B_y - B0y and j, each ``k_shape``."""
        u_hat, v_hat = self.velocity_hat(state[0])
        bx_hat, by_hat = self.perp(state[1])
        return [u_hat, v_hat, state[0], bx_hat, by_hat, self.ops.k2 * state[1]]

    def with_mean_field(self, real: jax.Array) -> jax.Array:
        """Real fields (u, v, omega, B_x, B_y, j, ...) with the mean field added to B (rows 3 and 4)."""
        b0x, b0y = self.physics.mean_field
        return real.at[3].add(b0x).at[4].add(b0y) if (b0x or b0y) else real

    def real_fields(self, state: jax.Array, params: Params) -> jax.Array:
        """(u, v, omega, B_x, B_y, j) in real space ``(6, 1, Nx, Ny)``, B with the mean field: one batched transform."""
        return self.with_mean_field(self.fft.irfft(self.ops.stack(self.spectral_terms(state))))

    def products(self, state: jax.Array, params: Params) -> tuple[jax.Array, jax.Array | None]:
        """-div(u omega - B j) and u B_y - v B_x, dealiased, ``(2, *k_shape)``, and the scalars' -div(u theta_i): one
        batched forward transform of the three products and the scalars' fluxes."""

        def of(real: jax.Array) -> list[jax.Array]:
            u, v, omega, bx, by, j = self.with_mean_field(real)[:6]
            return [u * omega - bx * j, v * omega - by * j, u * by - v * bx]

        ops = self.ops
        flux, advected = self.transport(self.spectral_terms(state), state, of)
        return ops.dealias * ops.stack([-1j * (self.kx * flux[0] + self.ky * flux[1]), flux[2]]), advected

    def nonlinear(self, state: jax.Array, t: jax.Array, params: Params) -> jax.Array:
        """The products, the Kolmogorov forcing of the vorticity, if any, and the scalars' terms."""
        own, advected = self.products(state, params)
        return self.with_scalars(self.forced(own, params, row=0), advected, state, params)

    # ---- states and fields ------------------------------------------------------------------------------

    def spectral_fields(self) -> dict[str, Callable[[jax.Array], jax.Array]]:
        """Vorticity, potential, current, velocity and magnetic field ``(3, ...)`` (the mean field in its k = 0
        mode), as spectra of a state."""
        ops = self.ops
        b0 = jnp.asarray(self.physics.mean_field, self.dtype) * float(self.fft.size)

        def magnetic(s: jax.Array) -> jax.Array:
            bx, by = self.perp(s[1])
            zero = (ops.k2 == 0).astype(self.dtype)  # the k = 0 mode: N B0 in the unnormalised spectrum
            return self.as_field(bx + zero * b0[0], by + zero * b0[1])

        flow = self.flow_fields()
        del flow["stream_function"]  # not a field of the magnetised plane
        return {"vorticity": lambda s: s[0], "potential": lambda s: s[1], "current": lambda s: ops.k2 * s[1],
                **flow, "magnetic": magnetic}

    # ---- diagnostics and spectra --------------------------------------------------------------------------

    def diagnostics(self, state: jax.Array, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Energies, cross helicity, <A^2>, enstrophy (Parseval means), max |omega| and |j|, the dissipation rates,
        the CFL number with the Alfven speed, k_max eta and a forced run's injection."""
        ops = self.ops
        power_a = jnp.abs(state[1]) ** 2
        rate, rate_a = self.rates(params)
        b0 = self.physics.mean_field
        out = self.flow_diagnostics(state[0], rate, ("kinetic_energy", "enstrophy", "viscous_dissipation"), params)
        out["magnetic_energy"] = 0.5 * ops.mean(ops.k2 * power_a) + 0.5 * (b0[0] ** 2 + b0[1] ** 2)
        out["total_energy"] = out["kinetic_energy"] + out["magnetic_energy"]
        # <u . B> = <grad psi . grad A> = <k^2 conj(psi_hat) A_hat> (the mean u is 0: B0 adds nothing)
        out["cross_helicity"] = ops.mean(jnp.real(jnp.conj(state[0]) * state[1]))
        out["mean_square_potential"] = ops.mean(power_a)
        out["ohmic_dissipation"] = ops.mean(rate_a * ops.k2 * power_a)
        u, v, omega, bx, by, j = self.real_fields(state, params)
        out["max_vorticity"], out["max_current"] = jnp.max(jnp.abs(omega)), jnp.max(jnp.abs(j))
        out["cfl"] = dt * jnp.max(self.speed(jnp.abs(u) + jnp.abs(bx), jnp.abs(v) + jnp.abs(by)))
        epsilon = out["viscous_dissipation"] + out["ohmic_dissipation"]
        eta = resolution.kolmogorov(params["viscosity"], epsilon, jnp)
        scale_u, scale_b = eta, resolution.smallest_scale(eta, params["viscosity"], params["resistivity"], jnp)
        if self.physics.hyperviscous:
            order = self.physics.hyperviscosity_order
            scale_u = jnp.maximum(scale_u, resolution.hyperviscous_scale(params["hyperviscosity"], epsilon, order, jnp))
            scale_b = jnp.maximum(scale_b, resolution.hyperviscous_scale(params["hyperresistivity"], epsilon, order,
                                                                         jnp))
        out["kmax_eta"] = self.kmax() * jnp.minimum(scale_u, scale_b)
        return {**out, **self.scalar_diagnostics(state, params, scale_u)}

    def spectra(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Ring sums of E_K(k), E_M(k), |A_hat|^2, the nonlinear transfers of E_K and E_M, and the Kolmogorov
        forcing's injection."""
        norm = self.norm
        n_hat, advected = self.products(state, params)
        return {**self.flow_spectra(state[0], n_hat[0], params),
                "magnetic_energy": self.shell(0.5 * norm * self.ops.k2 * jnp.abs(state[1]) ** 2),
                "potential": self.shell(norm * jnp.abs(state[1]) ** 2),
                "transfer_magnetic_energy": self.shell(norm * self.ops.k2 * jnp.real(jnp.conj(state[1]) * n_hat[1])),
                **self.scalar_spectra(state, advected, params)}


def orszag_tang(eq: MHD2D, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """omega = U (2 pi/Lx cos x' + 2 pi/Ly cos y'), A = B (Ly/2 pi cos y' + Lx/4 pi cos 2x') (see ``OrszagTang``)."""
    (lx, ly), (x, y) = eq.lengths, eq.xy(c)
    xs, ys = 2 * jnp.pi * x / lx, 2 * jnp.pi * y / ly
    omega = ic.amplitude * (2 * jnp.pi / lx * jnp.cos(xs) + 2 * jnp.pi / ly * jnp.cos(ys))
    a = ic.magnetic_amplitude * (ly / (2 * jnp.pi) * jnp.cos(ys) + lx / (4 * jnp.pi) * jnp.cos(2 * xs))
    return {"vorticity": jnp.broadcast_to(omega, eq.fft.shape), "potential": jnp.broadcast_to(a, eq.fft.shape)}


def random_mhd(eq: MHD2D, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """A random vorticity of kinetic energy ``energy`` and a potential A_hat = X_hat/k^2 of magnetic energy
    ``magnetic_energy``, X another such field (from seed + 1: j shaped as omega), both of
    :func:`~..flow.plane.random_spectrum`."""
    ops = eq.ops
    omega_hat = plane.random_spectrum(eq, ic.seed, ic.k_peak, ic.slope)
    omega_hat = omega_hat * jnp.sqrt(2 * ic.energy / ops.mean(jnp.abs(omega_hat) ** 2 * ops.inv_k2))
    a_hat = plane.random_spectrum(eq, ic.seed + 1, ic.k_peak, ic.slope) * ops.inv_k2
    a_hat = a_hat * jnp.sqrt(2 * ic.magnetic_energy / ops.mean(ops.k2 * jnp.abs(a_hat) ** 2))
    return {"vorticity": eq.fft.irfft(omega_hat), "potential": eq.fft.irfft(a_hat)}


MHD2D.builders = {"orszag_tang": passive.with_scalars(orszag_tang), "random": passive.with_scalars(random_mhd)}
