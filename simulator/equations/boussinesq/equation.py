"""Rotating, stably stratified Boussinesq flow in a periodic box, pseudo-spectral: the implementation.

    du/dt = u x w - grad(P) + b z - f z x u + nu lap(u) - nu_p (-lap)^p u,   div u = 0,   w = curl u
    db/dt = -u.grad(b) - N^2 w + kappa lap(b) - kappa_p (-lap)^p b

Split as du/dt = L x + N(x) for the integrating-factor Runge-Kutta schemes: the linear part L (the
buoyancy and Coriolis accelerations after the Leray projection, the stratification term -N^2 w, and
the viscous and diffusive terms, with the hyperviscous ones when ``physics.hyperviscosity_order`` p is
set: structure, nothing compiled without it) is propagated exactly per mode by :func:`.waves.propagate`
(the gravity-inertia waves, omega^2 = (N^2 k_h^2 + f^2 k_z^2)/k^2, at any N dt; exact dissipation for
nu = kappa, a Strang product otherwise: see :mod:`.waves`; kappa_p = nu_p always, hyperviscosity as in
Borue & Orszag 1995, Europhys. Lett. 29, 687). N is advection: the rotational-form
P[(u x w)^] and -(u.grad b)^, dealiased by the 2/3 rule, plus the optional constant-power forcing of
Navier-Stokes (:mod:`simulator.equations.flow.forcing`). Passive scalars
(:mod:`simulator.equations.scalars`) ride along as in Navier-Stokes: their diffusion is more diagonal
entries of L, their advection and mean-gradient source part of N. The spectral operators
(wavenumbers, 2/3 rule, Leray projection, curl, forcing) are those of
:class:`~simulator.equations.operators.SpectralOperators` on the same backend.

Per stage: inverse FFTs of u, grad b (and the n scalars) and w apart (so that the step's peak memory
holds one three-field spectrum at a time), a forward FFT of u.grad b (+ the 3 n fluxes u theta_i),
made before w exists, and one of u x w. In a compact spectrum without scalars each component is a
field of its own, transformed on its own, and P[(u x w)^] is formed as -P[div(u u)^], the same field
under the 2/3 rule, from the five components of the traceless stress: no inverse FFT of w, 11 scalar
transforms instead of 13 (:mod:`simulator.equations.flow.components`; Basdevant 1983). References:
Boussinesq dynamics and the gravity-inertia dispersion relation, Vallis, Atmospheric and Oceanic
Fluid Dynamics (2017), chs. 2 and 7; a pseudo-spectral model of rotating stratified flow, Winters,
MacKinnon & Mills 2004 (J. Atmos. Oceanic Technol. 21, 69); Froude and Rossby numbers as in Marino,
Mininni, Rosenberg & Pouquet 2013 (Phys. Rev. E 87, 033016).

Arrays: the state is one spectral stack ``(4 + n, *k_shape)`` = (u_hat_x, u_hat_y, u_hat_z, b_hat, and
the n scalars' spectra) in the FFT backend's k-space layout and sharding, with no box-mean (k = 0) flow
or buoyancy: a uniform flow is not steady in a rotating frame and a mean buoyancy belongs to the
hydrostatic background (the scalars keep their means). Real-space fields are ``(3, Nx, Ny, Nz)``,
``(Nx, Ny, Nz)`` or the ``(n, Nx, Ny, Nz)`` scalars in its real layout.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any, final

import jax
import jax.numpy as jnp

from simulator.equations import resolution
from simulator.equations.base import Params, SemiLinearEquation
from simulator.equations.boussinesq import INFO
from simulator.equations.boussinesq.waves import propagate, wave_fields
from simulator.equations.flow.components import Transforms
from simulator.equations.flow.velocity import FlowEquation, peaked, random_velocity
from simulator.equations.noise import white_noise
from simulator.equations.scalars import terms as passive
from simulator.observables import spectra


@final
class Boussinesq(FlowEquation, passive.CarriesScalars, SemiLinearEquation):
    """Advection, the exact linear propagator, diagnostics and spectra on one FFT backend.

    Leaf: ``ops``, the spectral operators of this backend and box (wavenumbers, 2/3 rule, Parseval
    weights, projection, curl, forcing).
    """

    info = INFO

    @property
    def kept(self) -> jax.Array:
        """1 on the modes a state holds: those the 2/3 rule keeps, less the box mean (k = 0)."""
        return self.ops.dealias * (self.ops.k2 > 0).astype(self.dtype)

    # ---- the two parts of the right-hand side ------------------------------------------------------------

    def exp_linear(self, x: jax.Array, tau: jax.Array, params: Params) -> jax.Array:
        """The exact propagator of u and b (:func:`.waves.propagate`, with the hyperviscous rates when the
        order is set) and the scalars' diffusion factors (no hyperviscosity on the scalars)."""
        hyper = ((params["hyperviscosity"], params["hyperdiffusivity"], self.physics.hyperviscosity_order)
                 if self.hyperviscous else None)
        flow = propagate(x[:4], tau, self.ops.k, params["viscosity"], params["diffusivity"],
                         params["brunt_vaisala"] ** 2, params["coriolis"], self.ops.stack, hyper)
        if not self.n_scalars:
            return flow
        kappa = passive.diffusivities(params["scalars"])[:, None, None, None]
        return self.ops.concatenate([flow, x[4:] * jnp.exp(-kappa * self.ops.k2 * tau)])

    def advection(self, x: jax.Array) -> jax.Array:
        """(P[(u x w)^], -(u.grad b)^), dealiased, without the box mean, and -div(u theta_i) of the scalars:
        inverse FFTs of u, grad b (, theta), each used as soon as it exists, forward FFTs of u.grad b (, u
        theta) and of the velocity's advection (u x w, or the traceless stress in a compact spectrum without
        scalars, component by component: :meth:`~..flow.components.Transforms.momentum`)."""
        ops = self.ops
        transforms = Transforms(ops, stacked=bool(self.n_scalars))
        u = transforms.fields(x[:3])
        g = transforms.gradient(x[3])
        products = -(u[0] * g[0] + u[1] * g[1] + u[2] * g[2])[None]
        if self.n_scalars:
            products = jnp.concatenate([products, passive.products(u, self.fft.irfft(x[4:]))])
        a = self.fft.rfft(products)
        n = transforms.momentum(u, x[:3])
        flow = [ops.project(self.kept * n), self.kept * a[:1]]
        return ops.concatenate([*flow, passive.advection(ops, a[1:])] if self.n_scalars else flow)

    def nonlinear(self, x: jax.Array, t: jax.Array, params: Params) -> jax.Array:
        """Advection plus, in forced runs, the forcing of the velocity, and the scalars' mean-gradient
        sources -u.G_i."""
        n = self.advection(x)
        f_hat = self.ops.forcing(x[:3], params)
        n = n if f_hat is None else self.ops.concatenate([n[:3] + f_hat, n[3:]])
        if not self.n_scalars:
            return n
        return self.ops.concatenate([n[:4], n[4:] + passive.mean_gradient_source(self.ops, x[:3], params["scalars"])])

    # ---- states ------------------------------------------------------------------------------------

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> jax.Array:
        """The stack of a real-space ``velocity`` ``(3, Nx, Ny, Nz)``, ``buoyancy`` ``(Nx, Ny, Nz)`` and,
        with scalars, ``scalar`` ``(n, Nx, Ny, Nz)``: dealiased, the velocity projected, the box means of
        u and b removed (a valid state)."""
        scalars = (fields["scalar"],) if self.n_scalars else ()
        real = jnp.concatenate([fields["velocity"], fields["buoyancy"][None], *scalars]).astype(self.dtype)
        x = self.ops.dealias * self.fft.rfft(real)
        mean_free = (self.ops.k2 > 0).astype(self.dtype)
        return self.ops.concatenate([self.ops.project(mean_free * x[:3]), mean_free * x[3:4], x[4:]])

    def spectral_fields(self) -> dict[str, Callable[[jax.Array], jax.Array]]:
        """Buoyancy (one field), with scalars ``scalar`` ``(n, ...)``, velocity and vorticity ``(3, ...)``: the
        real-space fields' spectra (:meth:`~simulator.equations.flow.velocity.FlowEquation.fields` transforms
        them in this order)."""
        out = {"buoyancy": lambda x: x[3]}
        if self.n_scalars:
            out["scalar"] = lambda x: x[4:]
        return {**out, "velocity": lambda x: x[:3], "vorticity": lambda x: self.ops.curl(x[:3])}

    # ---- diagnostics ---------------------------------------------------------------------------------

    def diagnostics(self, x: jax.Array, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """The energies and their rates, the buoyancy flux, Froude and Rossby numbers, max |div u|, the
        CFL number and, when forced, the injected power (see ``INFO.diagnostics``)."""
        ops, n2, f = self.ops, params["brunt_vaisala"] ** 2, params["coriolis"]
        u_hat, b_hat = x[:3], x[3]
        horizontal = 0.5 * self.ops.mean(jnp.abs(u_hat[0]) ** 2 + jnp.abs(u_hat[1]) ** 2)
        vertical = 0.5 * self.ops.mean(jnp.abs(u_hat[2]) ** 2)
        kinetic = horizontal + vertical
        # b^2/(2 N^2) is the potential energy of a stratified fluid; without stratification (N = 0) there
        # is none to speak of: 0, so that every diagnostic stays finite
        over_n2 = jnp.where(n2 > 0, 1 / jnp.where(n2 > 0, n2, 1.0), 0.0)
        potential = 0.5 * self.ops.mean(jnp.abs(b_hat) ** 2) * over_n2
        k2 = ops.k2
        # integral scale L = 2 pi sum_k E(k)/k / E, mode by mode (Marino et al. 2013)
        over_k = 0.5 * self.ops.mean(jnp.sum(jnp.abs(u_hat) ** 2, axis=0) * jnp.sqrt(ops.inv_k2))
        speed_over_scale = jnp.where(over_k > 0, jnp.sqrt(2 * kinetic) * kinetic / (2 * math.pi * jnp.where(
            over_k > 0, over_k, 1.0)), 0.0)  # U / L
        kx, ky, kz = ops.k
        div_hat = 1j * (kx * u_hat[0] + ky * u_hat[1] + kz * u_hat[2])
        u = self.fft.irfft(ops.concatenate([u_hat, div_hat[None]]))
        kinetic_rate = params["viscosity"] * self.ops.mean(jnp.sum(jnp.abs(ops.curl(u_hat)) ** 2, axis=0))
        potential_rate = params["diffusivity"] * self.ops.mean(k2 * jnp.abs(b_hat) ** 2)
        if self.hyperviscous:
            # the rate nu_p k^(2p) (at most about 1/dt) before |u_hat|^2: k^(2p) |u_hat|^2 alone may overflow
            k2p = k2**self.physics.hyperviscosity_order
            kinetic_rate += self.ops.mean(params["hyperviscosity"] * k2p * jnp.sum(jnp.abs(u_hat) ** 2, axis=0))
            potential_rate += self.ops.mean(params["hyperdiffusivity"] * k2p * jnp.abs(b_hat) ** 2)
        out = {
            "kinetic_energy": kinetic,
            "potential_energy": potential,
            "total_energy": kinetic + potential,
            "horizontal_energy": horizontal,
            "vertical_energy": vertical,
            "kinetic_dissipation": kinetic_rate,
            "potential_dissipation": potential_rate * over_n2,
            "buoyancy_flux": self.ops.mean(jnp.real(jnp.conj(u_hat[2]) * b_hat)),
            "froude": speed_over_scale * jnp.sqrt(over_n2),  # 0 without stratification (undefined)
            "rossby": jnp.where(f != 0, speed_over_scale / jnp.where(f != 0, jnp.abs(f), 1.0), 0.0),
            "max_div": jnp.max(jnp.abs(u[3])),
            "cfl": dt * jnp.max(sum(jnp.abs(u[i]) / self.spacing[i] for i in range(3))),
        }
        f_hat = ops.forcing(u_hat, params)
        if f_hat is not None:
            out["injection"] = self.ops.mean(jnp.real(jnp.sum(jnp.conj(u_hat) * f_hat, axis=0)))
        kmax = resolution.dealiased_kmax(self.fft.shape, self.box)
        eta = resolution.kolmogorov(params["viscosity"], out["kinetic_dissipation"], jnp)
        # the buoyancy diffuses with its own diffusivity: the smaller of its scale and the velocity's; with
        # hyperviscosity each is at least its hyperviscous scale (kappa_p = nu_p: the same one)
        scale_u, scale_b = eta, resolution.smallest_scale(eta, params["viscosity"], params["diffusivity"], jnp)
        if self.hyperviscous:
            hyper = resolution.hyperviscous_scale(params["hyperviscosity"], out["kinetic_dissipation"],
                                                  self.physics.hyperviscosity_order, jnp)
            scale_u, scale_b = jnp.maximum(scale_u, hyper), jnp.maximum(scale_b, hyper)
        out["kmax_eta"] = kmax * jnp.minimum(scale_u, scale_b)
        if self.n_scalars:
            out.update(passive.diagnostics(ops, u_hat, x[4:], params["scalars"]))
            out.update(passive.resolution_diagnostics(kmax, scale_u, params["viscosity"], params["scalars"]))
        return out

    def spectra(self, x: jax.Array, params: Params) -> dict[str, jax.Array]:
        """E_K and E_P by |k|, by k_h, by |k_z| and by (k_h, |k_z|) (``*_kh_kz``, a (shells, shells) array:
        :func:`simulator.observables.spectra.cylinder_sum`), and their budgets by |k| (one evaluation of the
        advection), each normalised so that its sum over shells is the box mean it describes: the
        transfers T_K, T_P by advection (each sums to zero over shells), the conversion by the buoyancy
        flux, C_K(k) = Re conj(w_hat) b_hat = -C_P(k) per mode (sums to <w b>) and, when forced, the
        injection F(k): dE_K(k)/dt = T_K + C_K + F - 2 (nu k^2 + nu_p k^(2p)) E_K, dE_P(k)/dt = T_P + C_P -
        2 (kappa k^2 + kappa_p k^(2p)) E_P (the Coriolis force does no work, mode by mode)."""
        ops, n2 = self.ops, params["brunt_vaisala"] ** 2
        norm = ops.weight / float(self.fft.size) ** 2
        u_hat, b_hat = x[:3], x[3]
        kinetic = 0.5 * norm * jnp.sum(jnp.abs(u_hat) ** 2, axis=0)
        potential = 0.5 * norm * jnp.abs(b_hat) ** 2 * jnp.where(n2 > 0, 1 / jnp.where(n2 > 0, n2, 1.0), 0.0)
        kx, ky, kz = ops.k
        by = {"": ops.k, "_kh": (kx, ky, 0 * kz), "_kz": (0 * kx, 0 * ky, kz)}
        out = {}
        for suffix, k in by.items():
            out["energy" + suffix] = spectra.shell_sum(kinetic, k, self.fft.shape, self.box)
            out["potential_energy" + suffix] = spectra.shell_sum(potential, k, self.fft.shape, self.box)
        out["energy_kh_kz"] = spectra.cylinder_sum(kinetic, ops.k, self.fft.shape, self.box)
        out["potential_energy_kh_kz"] = spectra.cylinder_sum(potential, ops.k, self.fft.shape, self.box)
        n = self.advection(x)
        flux = norm * jnp.real(jnp.conj(u_hat[2]) * b_hat)  # buoyancy flux: from E_P(k) to E_K(k)
        budget = {"transfer_energy": norm * jnp.real(jnp.sum(jnp.conj(u_hat) * n[:3], axis=0)),
                  "transfer_potential_energy": norm * jnp.real(jnp.conj(b_hat) * n[3]) / n2,
                  "conversion_energy": flux, "conversion_potential_energy": -flux}
        f_hat = ops.forcing(u_hat, params)
        if f_hat is not None:
            budget["injection_energy"] = norm * jnp.real(jnp.sum(jnp.conj(u_hat) * f_hat, axis=0))
        out.update({name: spectra.shell_sum(p, ops.k, self.fft.shape, self.box) for name, p in budget.items()})
        if self.n_scalars:
            out.update(passive.spectra(ops, u_hat, x[4:], n[4:], params["scalars"],
                                       lambda p: spectra.shell_sum(p, ops.k, self.fft.shape, self.box)))
        return out


# ---- initial conditions: real-space velocity (3, Nx, Ny, Nz) and buoyancy (Nx, Ny, Nz) ----------------


def _wave(eq: Boussinesq, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """One gravity-inertia wave of mode numbers ``modes`` (:func:`.waves.wave_fields`)."""
    k = [2 * math.pi * m / length for m, length in zip(ic.modes, eq.box, strict=True)]
    phase = k[0] * c[0] + k[1] * c[1] + k[2] * c[2]
    u, b = wave_fields(k, phase, ic.amplitude, params["brunt_vaisala"] ** 2, params["coriolis"])
    return {"velocity": u, "buoyancy": b}


def _random_scalar(eq: Boussinesq, seed: jax.Array, k_peak: jax.Array, rms: jax.Array) -> jax.Array:
    """A random scalar of rms ``rms`` with spectrum ~ k^4 exp(-2 (k/k_peak)^2), no mean, drawn from
    ``seed`` (stream 1; the velocity uses stream 0) by :func:`~simulator.equations.noise.white_noise`."""
    noise_hat = eq.kept * eq.fft.rfft(white_noise(eq.fft, jax.random.fold_in(jax.random.key(seed), 1), eq.dtype))
    b = eq.fft.irfft(peaked(eq, noise_hat, k_peak))
    return b * (rms / jnp.sqrt(jnp.mean(b**2)))


def _rest(eq: Boussinesq, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """Rest plus a perturbation: velocity of rms epsilon, buoyancy of rms N epsilon."""
    u = random_velocity(eq, c, ic, params)["velocity"]
    return {"velocity": u, "buoyancy": _random_scalar(eq, ic.seed, ic.k_peak, params["brunt_vaisala"] * ic.amplitude)}


def _random(eq: Boussinesq, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    u = random_velocity(eq, c, ic, params)["velocity"]
    return {"velocity": u, "buoyancy": _random_scalar(eq, ic.seed, ic.k_peak, ic.buoyancy)}


Boussinesq.builders = {name: passive.with_scalars(b)
                       for name, b in (("wave", _wave), ("rest", _rest), ("random", _random))}
