"""Incompressible Navier-Stokes in a periodic box, pseudo-spectral: the implementation.

    du/dt = u x w - grad(p + |u|^2/2) + nu lap(u) - nu_p (-lap)^p u (+ f),   div u = 0,   w = curl u

Rotational form (in the compact layout without scalars, under the 2/3 rule, the same field formed as
-P[div(u u)^] from the traceless stress: 8 transforms per evaluation instead of 9, Basdevant 1983,
:mod:`simulator.equations.flow.components`); the pressure gradient is removed by the Leray projection
P = I - k k^T / k^2; the nonlinear term is dealiased with the 2/3 rule (modes with |m_i| >= N_i/3
zeroed), multiplied by the smooth Hou-Li filter, or formed on a randomly shifted grid and truncated to the 2/3 rule's
cube or a sphere (``physics.dealias``, :mod:`simulator.equations.operators`, :mod:`simulator.equations.phase_shift`);
the viscous and hyperviscous terms are the diagonal linear operator -nu k^2 - nu_p k^(2p), integrated exactly by the
integrating-factor schemes (Orszag 1971; Canuto, Hussaini, Quarteroni & Zang, Spectral Methods, 2006,
§3.3-3.4; Rogallo 1981; hyperviscosity as in Borue & Orszag 1995, Europhys. Lett. 29, 687).
Optional forcing (:mod:`simulator.equations.flow.forcing`) is one more term of the right-hand side, and passive scalars
(:mod:`simulator.equations.scalars`) ride on the flow with their own diffusivities (more diagonal
entries of the linear operator) and mean gradients.

Arrays: the state is the velocity's real-to-complex spectrum, shape ``(3, *k_shape)`` in the FFT
backend's k-space layout and sharding, followed by those of the n scalars when there are any:
``(3 + n, *k_shape)``, one array, so that each stage's one batched inverse and one batched forward
transform serve the flow and the scalars together (without scalars the state, the program and the
checkpoints are those of plain Navier-Stokes). Real-space fields are ``(3, Nx, Ny, Nz)`` vectors and
the ``(n, Nx, Ny, Nz)`` scalars, in the real layout.

Spectral energy budget (``spectra``): beside E(k), the transfer T(k) of the nonlinear term and, when
forced, the injection F(k), so that dE(k)/dt = T(k) - 2 (nu k^2 + nu_p k^(2p)) E(k) + F(k) shell by shell,
and the same for each scalar's variance (Pope, Turbulent Flows, 2000, §6.5; the flux is Pi(k) =
-sum_{k' <= k} T(k')). T is that of the dealiased term, so the budget closes under either dealiasing;
its sum is zero under the 2/3 rule and the energy the filter removes (or adds) under Hou-Li. Computing T
costs one more evaluation of the nonlinear term, at the spectra's cadence only.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping, Sequence
from typing import Any, final

import jax
import jax.numpy as jnp

from simulator.equations import phase_shift, resolution
from simulator.equations.base import Params, SemiLinearEquation
from simulator.equations.flow.components import Transforms
from simulator.equations.flow.velocity import FlowEquation, abc, random_velocity
from simulator.equations.navier_stokes import INFO
from simulator.equations.scalars import terms as passive
from simulator.observables import spectra


@final
class NavierStokes(FlowEquation, passive.CarriesScalars, SemiLinearEquation):
    """Nonlinear term, viscous operator, diagnostics and spectra on one FFT backend.

    Leaf: ``ops``, the spectral operators of this backend and box (wavenumbers, dealiasing, Parseval
    weights, projection, curl, forcing: :class:`~simulator.equations.operators.SpectralOperators`).
    """

    info = INFO
    @property
    def dealiasing(self) -> str:
        """``physics.dealias``, the operators' (:meth:`~simulator.equations.flow.velocity.FlowEquation.operators`)."""
        return self.physics.dealias

    def split(self, state: jax.Array) -> tuple[jax.Array, jax.Array | None]:
        """(velocity spectrum ``(3, ...)``, scalars' spectra ``(n, ...)`` or None without scalars)."""
        return (state, None) if not self.n_scalars else (state[:3], state[3:])

    def rates(self, params: Params) -> tuple[jax.Array, jax.Array | None]:
        """(r, r_p): the diffusion rate of each row of the state (nu for the velocity, kappa_i for scalar i)
        and its hyperviscosity (nu_p for the velocity, 0 for the scalars; None without the term), each a
        number without scalars and ``(3 + n, 1, 1, 1)`` with them (broadcasting against the state)."""
        rate = params["viscosity"]
        hyper = params["hyperviscosity"] if self.hyperviscous else None
        if not self.n_scalars:
            return rate, hyper
        rate = jnp.concatenate([jnp.broadcast_to(rate, (3,)), passive.diffusivities(params["scalars"])])
        if hyper is not None:
            hyper = jnp.concatenate([jnp.broadcast_to(hyper, (3,)),
                                     jnp.zeros(self.n_scalars, jnp.result_type(hyper))])[:, None, None, None]
        return rate[:, None, None, None], hyper

    def k2p(self) -> jax.Array:
        """|k|^(2p) per mode, p = ``hyperviscosity_order`` (formed inside the kernel that uses it)."""
        return self.ops.k2 ** self.physics.hyperviscosity_order

    def linear(self, params: Params) -> jax.Array:
        """-nu k^2 - nu_p k^(2p) for the velocity, -kappa_i k^2 for scalar i."""
        rate, hyper = self.rates(params)
        return -rate * self.ops.k2 if hyper is None else -rate * self.ops.k2 - hyper * self.k2p()

    def exp_linear(self, state: jax.Array, tau: jax.Array, params: Params) -> jax.Array:
        """exp(L tau) state, applied as exp(-r kx^2 tau) exp(-r ky^2 tau) exp(-r kz^2 tau) exp(-r_p k^(2p) tau)
        with r, r_p of :meth:`rates`: three 1D factors, and one per mode for the hyperviscosity (k^(2p) does
        not factor over the axes), formed inside the kernel that applies it, so that no 3D factor is stored.
        Without ``physics.hyperviscosity_order`` the last factor is not in the program."""
        rate, hyper = self.rates(params)
        for k in self.ops.k:
            state = state * jnp.exp(-rate * tau * k**2)
        return state if hyper is None else state * jnp.exp(-hyper * tau * self.k2p())

    def advection(self, state: jax.Array) -> tuple[jax.Array, jax.Array | None]:
        """The nonlinear terms, dealiased (``ops.dealias``): P[(u x w)^] ``(3, ...)`` and, with scalars,
        -div(u theta_i) ``(n, ...)``. Inverse FFTs of u, (theta,) and w apart, each used as soon as it exists
        (with scalars, u theta is transformed before w is formed), then a forward FFT of u x w: the peak
        memory holds u, w and one three-field spectrum, not two spectra of six or more fields. A compact
        spectrum without scalars goes component by component, under the 2/3 rule from the traceless stress
        instead of w (:meth:`~..flow.components.Transforms.momentum`).
        Under a phase shift (:meth:`at_stage`) the spectra are shifted before the inverse transforms and the
        products' spectra shifted back after the forward ones (``ops.shift``, :mod:`..phase_shift`)."""
        ops = self.ops
        u_hat, theta_hat = self.split(state)
        u_hat = ops.shift(u_hat)
        transforms = Transforms(ops, stacked=theta_hat is not None)
        u = transforms.fields(u_hat)
        a_hat = None
        if theta_hat is not None:
            products = self.fft.rfft(passive.products(u, self.fft.irfft(ops.shift(theta_hat))))
            a_hat = passive.advection(ops, ops.shift(products, -1))
        n_hat = ops.shift(transforms.momentum(u, u_hat), -1)
        return ops.project(ops.dealias * n_hat), a_hat

    def at_stage(self, step: jax.Array, shift: jax.Array) -> NavierStokes:
        """Under ``physics.dealias: phase_shift_*`` a copy whose operators shift the products by the draw of
        this step plus the stage's offset ``shift`` (:func:`~simulator.equations.phase_shift.angles`); else
        this equation."""
        if not self.physics.dealias.startswith("phase_shift"):
            return self
        out = copy.copy(self)
        out.ops = self.ops.shifted(phase_shift.angles(step, shift, self.fft.shape, self.dtype))
        return out

    def nonlinear(self, state: jax.Array, t: jax.Array, params: Params) -> jax.Array:
        """P[(u x w)^] (+ forcing), and for the scalars -div(u theta_i) - u . G_i (see :meth:`advection`)."""
        n_hat, a_hat = self.advection(state)
        u_hat, _ = self.split(state)
        f_hat = self.ops.forcing(u_hat, params)
        n_hat = n_hat if f_hat is None else n_hat + f_hat
        if a_hat is None:
            return n_hat
        return self.ops.concatenate([n_hat, a_hat + passive.mean_gradient_source(self.ops, u_hat, params["scalars"])])

    # ---- states ------------------------------------------------------------------------------------

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> jax.Array:
        """Spectrum of a real-space ``velocity`` ``(3, Nx, Ny, Nz)``, dealiased and projected (a valid state),
        followed with scalars by that of ``scalar`` ``(n, Nx, Ny, Nz)``, dealiased."""
        if not self.n_scalars:
            return self.ops.project(self.ops.dealias * self.fft.rfft(fields["velocity"].astype(self.dtype)))
        real = jnp.concatenate([fields["velocity"], fields["scalar"]]).astype(self.dtype)
        spectrum = self.ops.dealias * self.fft.rfft(real)
        return self.ops.concatenate([self.ops.project(spectrum[:3]), spectrum[3:]])

    def spectral_fields(self) -> dict[str, Callable[[jax.Array], jax.Array]]:
        """Velocity and vorticity ``(3, ...)``, and with scalars ``scalar`` ``(n, ...)``: the real-space fields'
        spectra (:meth:`~simulator.equations.flow.velocity.FlowEquation.fields` transforms them)."""
        out = {"velocity": lambda s: self.split(s)[0], "vorticity": lambda s: self.ops.curl(self.split(s)[0])}
        if self.n_scalars:
            out["scalar"] = lambda s: self.split(s)[1]
        return out

    # ---- diagnostics ---------------------------------------------------------------------------------

    def diagnostics(self, state: jax.Array, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Energy <|u|^2>/2, enstrophy <|w|^2>/2, dissipation 2 nu Z + nu_p <|k|^(2p) |u_hat|^2>, max |div u|,
        CFL number dt * max(sum_i |u_i| / dx_i), when forced the injected power <u . f>, and each scalar's
        variance, dissipation and flux (:func:`simulator.equations.scalars.terms.diagnostics`)."""
        u_hat, theta_hat = self.split(state)
        energy = 0.5 * self.ops.mean(jnp.abs(u_hat) ** 2)
        enstrophy = 0.5 * self.ops.mean(jnp.abs(self.ops.curl(u_hat)) ** 2)
        kx, ky, kz = self.ops.k
        # by component in a compact spectrum: one component's transform buffers at a time (the one-GPU
        # plan's diagnostics program at 1024^3, lsrk4 float32: 35.2 -> 28.5 B/cell)
        u = Transforms(self.ops, stacked=theta_hat is not None).fields(u_hat)
        cfl = dt * jnp.max(sum(jnp.abs(u[i]) / self.spacing[i] for i in range(3)))
        div = self.fft.irfft(1j * (kx * u_hat[0] + ky * u_hat[1] + kz * u_hat[2]))
        dissipation = 2 * params["viscosity"] * enstrophy
        if self.hyperviscous:
            # nu_p k^(2p) (at most about 1/dt) before |u_hat|^2: k^(2p) |u_hat|^2 alone may overflow float32
            dissipation = dissipation + self.ops.mean(params["hyperviscosity"] * self.k2p() * jnp.abs(u_hat) ** 2)
        out = {
            "energy": energy,
            "enstrophy": enstrophy,
            "dissipation": dissipation,
            "max_div": jnp.max(jnp.abs(div)),
            "cfl": cfl,
        }
        f_hat = self.ops.forcing(u_hat, params)
        if f_hat is not None:
            out["injection"] = jnp.sum(self.ops.weight * jnp.real(jnp.conj(u_hat) * f_hat)) / float(self.fft.size) ** 2
        kmax = resolution.dealiased_kmax(self.fft.shape, self.box, self.physics.dealias)
        eta = (resolution.dissipative_scale(params["viscosity"], out["dissipation"], params["hyperviscosity"],
                                            self.physics.hyperviscosity_order, jnp) if self.hyperviscous
               else resolution.kolmogorov(params["viscosity"], out["dissipation"], jnp))
        out["kmax_eta"] = kmax * eta
        if theta_hat is not None:
            out.update(passive.diagnostics(self.ops, u_hat, theta_hat, params["scalars"]))
            out.update(passive.resolution_diagnostics(kmax, eta, params["viscosity"], params["scalars"]))
        return out

    def spectra(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Shell sums: the energy spectrum E(k) (sum_k E(k) = energy), its transfer T(k) by the
        nonlinear term and, when forced, its injection F(k); with scalars, each one's variance spectrum,
        transfer and production (one more evaluation of the nonlinear terms)."""
        u_hat, theta_hat = self.split(state)
        n_hat, a_hat = self.advection(state)
        norm = self.ops.weight / float(self.fft.size) ** 2

        def shell(power: jax.Array) -> jax.Array:
            return spectra.shell_sum(power, self.ops.k, self.fft.shape, self.box)

        out = {"energy": shell(0.5 * norm * jnp.abs(u_hat) ** 2),
               "transfer_energy": shell(norm * jnp.real(jnp.conj(u_hat) * n_hat))}
        f_hat = self.ops.forcing(u_hat, params)
        if f_hat is not None:
            out["injection_energy"] = shell(norm * jnp.real(jnp.conj(u_hat) * f_hat))
        if theta_hat is not None:
            out.update(passive.spectra(self.ops, u_hat, theta_hat, a_hat, params["scalars"], shell))
        return out


# ---- initial conditions: real-space velocity (3, Nx, Ny, Nz), and the scalars (n, Nx, Ny, Nz) -----------


def _taylor_green(eq: NavierStokes, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    x, y, z = (2 * jnp.pi / L * ci for ci, L in zip(c, eq.box, strict=True))
    a = ic.amplitude
    u = jnp.stack(jnp.broadcast_arrays(a * jnp.sin(x) * jnp.cos(y) * jnp.cos(z),
                                       -a * jnp.cos(x) * jnp.sin(y) * jnp.cos(z), 0 * x * y * z))
    return {"velocity": u}


NavierStokes.builders = {name: passive.with_scalars(b) for name, b in
                         (("taylor_green", _taylor_green), ("abc", abc), ("random", random_velocity))}
