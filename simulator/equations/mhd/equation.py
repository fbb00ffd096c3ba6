"""Incompressible magnetohydrodynamics in a periodic box, pseudo-spectral: the implementation.

    du/dt = u x w + j x B - grad(P) + nu lap(u) - nu_p (-lap)^p u,
    dB/dt = curl(u x B) + eta lap(B) - eta_p (-lap)^p B

B in Alfven units. Rotational form: the Lorentz force j x B = (B.grad)B - grad(|B|^2/2) and the
induction curl(u x B) = (B.grad)u - (u.grad)B (for solenoidal u, B); the total pressure is removed by
the Leray projection P = I - k k^T/k^2, which is also applied to dB/dt so that div B stays at
round-off. Both right-hand sides are dealiased by the 2/3 rule. The k = 0 modes are left alone by
every operator: the mean flow, and the uniform mean field B0, which enters j x B and u x B through B
and carries the Alfven waves, omega = +-k.B0 (Orszag & Tang 1979; Canuto et al., Spectral Methods,
2006, §3.3; Alfven waves and the Elsasser form, e.g. Biskamp, Magnetohydrodynamic Turbulence, 2003).

Viscous and resistive terms are the diagonal linear operator (-nu k^2, -eta k^2), with the hyperviscous
and hyper-resistive (-nu_p k^(2p), -eta_p k^(2p)) when ``physics.hyperviscosity_order`` p is set
(structure: nothing compiled without it; Borue & Orszag 1995, Europhys. Lett. 29, 687), integrated
exactly by the integrating-factor schemes; the Alfven coupling is in the explicit part, which the CFL
number accounts for through |B|. Per stage, in a compact spectrum (each component a field of its own,
transformed on its own: :mod:`simulator.equations.flow.components`): inverse FFTs of u and B and forward
ones of the traceless stress u u - B B (5 fields, whose divergence is u x w + j x B up to a gradient
under the 2/3 rule: Basdevant 1983) and of u x B, 14 scalar transforms; in the half spectrum: inverse
FFTs of u, w, B and j (3 fields each, so that the step's peak memory holds one three-field spectrum at a
time, not a twelve-field one) and one batched forward FFT of (u x w + j x B, u x B), 18. The spectral
operators (wavenumbers, 2/3 rule, projection, curl, forcing) are those of
:class:`~simulator.equations.operators.SpectralOperators` on the same backend.

Arrays: the state is one spectral stack ``(6, *k_shape)`` = (u_hat, B_hat) in the FFT backend's
k-space layout and sharding; real-space fields are ``(3, Nx, Ny, Nz)`` in its real layout.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from types import SimpleNamespace
from typing import Any, final

import jax
import jax.numpy as jnp

from simulator.equations import resolution
from simulator.equations.base import Params, SemiLinearEquation
from simulator.equations.flow.components import Transforms, stress, stress_divergence
from simulator.equations.flow.velocity import FlowEquation, abc, random_velocity
from simulator.equations.mhd import INFO
from simulator.equations.operators import cross
from simulator.observables import spectra


@final
class MHD(FlowEquation, SemiLinearEquation):
    """Nonlinear terms, the dissipative operator, diagnostics and spectra on one FFT backend.

    Leaf: ``ops``, the spectral operators of this backend and box (wavenumbers, 2/3 rule, Parseval
    weights, projection, curl, forcing).
    """

    info = INFO

    # ---- the two parts of the right-hand side ------------------------------------------------------------

    def linear(self, params: Params) -> jax.Array:
        """(-nu k^2 for u, -eta k^2 for B), shape ``(6, 1, 1, 1)`` times k^2: broadcasts against the state;
        with the order p set, also (-nu_p, -eta_p) times k^(2p) (formed in the kernel that exponentiates it)."""
        rates = jnp.stack([params["viscosity"]] * 3 + [params["resistivity"]] * 3)
        linear = -rates.reshape(6, 1, 1, 1) * self.ops.k2
        if not self.hyperviscous:
            return linear
        hyper = jnp.stack([params["hyperviscosity"]] * 3 + [params["hyperresistivity"]] * 3)
        return linear - hyper.reshape(6, 1, 1, 1) * self.ops.k2**self.physics.hyperviscosity_order

    def ideal(self, x: jax.Array) -> jax.Array:
        """(P[(u x w + j x B)^], P[curl (u x B)^]), dealiased. In a compact spectrum (component by
        component, :class:`~..flow.components.Transforms`) the momentum term is -P[div(u u - B B)^] (equal
        under the 2/3 rule), from inverse FFTs of u and B and forward ones of the five components of the
        traceless stress and of u x B; stacked, from inverse FFTs of u, w, B, j (w and j each used as soon
        as it exists, so that both are never held together) and one forward of (u x w + j x B, u x B)."""
        ops = self.ops
        transforms = Transforms(ops)
        u = transforms.fields(x[:3])
        if transforms.stress_form:
            b = transforms.fields(x[3:])
            n = ops.dealias * transforms.spectra((list(u), list(b)), 8, lambda i, f: [*stress(*f), *cross(*f)][i])
            return ops.concatenate([ops.project(stress_divergence(ops, n[:5])), ops.project(ops.curl(n[5:]))])
        force = cross(u, transforms.curl(x[:3]))
        b = transforms.fields(x[3:])
        force = [a + c for a, c in zip(force, cross(transforms.curl(x[3:]), b), strict=True)]
        n = ops.dealias * transforms.spectrum([*force, *cross(u, b)])
        return ops.concatenate([ops.project(n[:3]), ops.project(ops.curl(n[3:]))])

    def nonlinear(self, x: jax.Array, t: jax.Array, params: Params) -> jax.Array:
        """The ideal terms plus, in forced runs, the forcing of the velocity."""
        n = self.ideal(x)
        f_hat = self.ops.forcing(x[:3], params)
        return n if f_hat is None else self.ops.concatenate([n[:3] + f_hat, n[3:]])

    # ---- states ------------------------------------------------------------------------------------

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> jax.Array:
        """The stack of a real-space ``velocity`` and ``magnetic`` field ``(3, Nx, Ny, Nz)``: dealiased and
        projected, the means (mean flow, mean field B0) kept."""
        both = jnp.concatenate([fields["velocity"], fields["magnetic"]])
        x = self.ops.dealias * self.fft.rfft(both.astype(self.dtype))
        return self.ops.concatenate([self.ops.project(x[:3]), self.ops.project(x[3:])])

    def spectral_fields(self) -> dict[str, Callable[[jax.Array], jax.Array]]:
        """Velocity, vorticity, magnetic field and current ``(3, ...)``: the real-space fields' spectra
        (:meth:`~simulator.equations.flow.velocity.FlowEquation.fields` transforms them)."""
        return {"velocity": lambda x: x[:3], "vorticity": lambda x: self.ops.curl(x[:3]),
                "magnetic": lambda x: x[3:], "current": lambda x: self.ops.curl(x[3:])}

    # ---- diagnostics ---------------------------------------------------------------------------------

    def _dot(self, a_hat: jax.Array, b_hat: jax.Array) -> jax.Array:
        """<a . b> of two vector fields from their spectra."""
        return self.ops.mean(jnp.real(jnp.sum(jnp.conj(a_hat) * b_hat, axis=0)))

    def vector_potential(self, b_hat: jax.Array) -> jax.Array:
        """A_hat = i k x B_hat / k^2: the Coulomb-gauge potential of the fluctuations (curl A = B - B0)."""
        return self.ops.curl(b_hat) * self.ops.inv_k2

    def diagnostics(self, x: jax.Array, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Energies, helicities, dissipation rates, max |div u| and |div B|, the CFL number with the
        Alfven speed and, when forced, the injected power (see ``INFO.diagnostics``)."""
        ops = self.ops
        u_hat, b_hat = x[:3], x[3:]
        kinetic, magnetic = 0.5 * self._dot(u_hat, u_hat), 0.5 * self._dot(b_hat, b_hat)
        kx, ky, kz = ops.k
        divs = [1j * (kx * v[0] + ky * v[1] + kz * v[2]) for v in (u_hat, b_hat)]
        f = self.fft.irfft(ops.concatenate([u_hat, b_hat, ops.stack(divs)]))
        speed = sum((jnp.abs(f[i]) + jnp.abs(f[3 + i])) / self.spacing[i] for i in range(3))
        out = {
            "kinetic_energy": kinetic,
            "magnetic_energy": magnetic,
            "total_energy": kinetic + magnetic,
            "cross_helicity": self._dot(u_hat, b_hat),
            "magnetic_helicity": self._dot(self.vector_potential(b_hat), b_hat),
            "viscous_dissipation": params["viscosity"] * self._dot(ops.curl(u_hat), ops.curl(u_hat)),
            "ohmic_dissipation": params["resistivity"] * self._dot(ops.curl(b_hat), ops.curl(b_hat)),
            "max_div": jnp.max(jnp.abs(f[6])),
            "max_div_b": jnp.max(jnp.abs(f[7])),
            "cfl": dt * jnp.max(speed),
        }
        if self.hyperviscous:
            # the rates nu_p k^(2p), eta_p k^(2p) (at most about 1/dt) first: k^(2p) |x|^2 alone may overflow
            k2p = ops.k2**self.physics.hyperviscosity_order
            for name, coefficient, v_hat in (("viscous_dissipation", "hyperviscosity", u_hat),
                                             ("ohmic_dissipation", "hyperresistivity", b_hat)):
                out[name] += ops.mean(params[coefficient] * k2p * jnp.sum(jnp.abs(v_hat) ** 2, axis=0))
        f_hat = ops.forcing(u_hat, params)
        if f_hat is not None:
            out["injection"] = self._dot(u_hat, f_hat)
        # eta from the total dissipation; B's own smallest scale is eta Pm^(-1/2) for Pm = nu/eta_m > 1; with
        # hyperviscosity each field's is at least its hyperviscous scale (nu_p for u, eta_p for B)
        epsilon = out["viscous_dissipation"] + out["ohmic_dissipation"]
        eta = resolution.kolmogorov(params["viscosity"], epsilon, jnp)
        scale_u, scale_b = eta, resolution.smallest_scale(eta, params["viscosity"], params["resistivity"], jnp)
        if self.hyperviscous:
            order = self.physics.hyperviscosity_order
            scale_u = jnp.maximum(scale_u, resolution.hyperviscous_scale(params["hyperviscosity"], epsilon, order, jnp))
            scale_b = jnp.maximum(scale_b, resolution.hyperviscous_scale(params["hyperresistivity"], epsilon, order,
                                                                         jnp))
        out["kmax_eta"] = resolution.dealiased_kmax(self.fft.shape, self.box) * jnp.minimum(scale_u, scale_b)
        return out

    def spectra(self, x: jax.Array, params: Params) -> dict[str, jax.Array]:
        """E_K(k), E_M(k) and their budgets, each normalised so that its sum over shells is the box mean
        it describes: the transfers T_K(k) by u x w and T_M(k) by -(u.grad)B (each sums to zero over
        shells), the conversions C_K(k) by the Lorentz force j x B and C_M(k) by line stretching
        (B.grad)u (sum_k (C_K + C_M) = 0: they exchange energy between u and B) and, when forced, the
        injection F(k); dE_K(k)/dt = T_K + C_K + F - 2 (nu k^2 + nu_p k^(2p)) E_K, dE_M(k)/dt = T_M + C_M -
        2 (eta k^2 + eta_p k^(2p)) E_M (Alexakis, Mininni & Pouquet 2005, Phys. Rev. E 72, 046301). One
        inverse transform of each of u, w, B and j, one forward of (u x w, j x B, u x B, u x j + B x w),
        component by component in a compact spectrum (:class:`~..flow.components.Transforms`): (u.grad)B
        needs no gradient tensor, as 2 (u.grad)B = grad(u.B) - u x j - B x w - curl(u x B) for solenoidal
        u, B, and the gradient does no work on a solenoidal B mode by mode."""
        ops = self.ops
        norm = ops.weight / float(self.fft.size) ** 2
        transforms = Transforms(ops)
        u, w = transforms.fields(x[:3]), transforms.curl(x[:3])
        b, j = transforms.fields(x[3:]), transforms.curl(x[3:])
        pairs = [a + c for a, c in zip(cross(u, j), cross(b, w), strict=True)]
        p = ops.dealias * transforms.spectrum([*cross(u, w), *cross(j, b), *cross(u, b), *pairs])
        induction = ops.curl(p[6:9])  # curl(u x B) = (B.grad)u - (u.grad)B
        advection = 0.5 * (p[9:] + induction)  # -(u.grad)B, less a gradient

        def work(a_hat: jax.Array, f_hat: jax.Array) -> jax.Array:
            return norm * jnp.real(jnp.sum(jnp.conj(a_hat) * f_hat, axis=0))

        power = {
            "energy": 0.5 * norm * jnp.sum(jnp.abs(x[:3]) ** 2, axis=0),
            "magnetic_energy": 0.5 * norm * jnp.sum(jnp.abs(x[3:]) ** 2, axis=0),
            "transfer_energy": work(x[:3], p[:3]),
            "transfer_magnetic_energy": work(x[3:], advection),
            "conversion_energy": work(x[:3], p[3:6]),
            "conversion_magnetic_energy": work(x[3:], induction - advection),
        }
        f_hat = ops.forcing(x[:3], params)
        if f_hat is not None:
            power["injection_energy"] = work(x[:3], f_hat)
        return {name: spectra.shell_sum(p, ops.k, self.fft.shape, self.box) for name, p in power.items()}


# ---- initial conditions: real-space velocity and magnetic field (3, Nx, Ny, Nz) -------------------------


def _with_mean(eq: MHD, b: jax.Array, ic: Any) -> jax.Array:
    return b + jnp.asarray(ic.mean_field, eq.dtype).reshape(3, 1, 1, 1)


def _orszag_tang(eq: MHD, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """u = A (-2 sin y, 2 sin x, 0), B = beta (-2 sin 2y + sin z, 2 sin x + sin z, sin x + sin y) + B0
    (Politano, Pouquet & Sulem 1995, Phys. Plasmas 2, 2931; Mininni, Pouquet & Montgomery 2006, Phys.
    Rev. Lett. 97, 244503), in units of the box."""
    x, y, z = (2 * math.pi / length * ci for ci, length in zip(c, eq.box, strict=True))
    a, beta = ic.amplitude, ic.magnetic_amplitude
    u = jnp.stack(jnp.broadcast_arrays(-2 * a * jnp.sin(y), 2 * a * jnp.sin(x), 0 * x * y * z))
    b = jnp.stack(jnp.broadcast_arrays(beta * (-2 * jnp.sin(2 * y) + jnp.sin(z)), beta * (2 * jnp.sin(x) + jnp.sin(z)),
                                       beta * (jnp.sin(x) + jnp.sin(y))))
    return {"velocity": u, "magnetic": _with_mean(eq, b, ic)}


def _abc_dynamo(eq: MHD, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """The Navier-Stokes ABC flow and a random seed field of rms ``seed_amplitude`` (plus B0)."""
    u = abc(eq, c, ic, params)["velocity"]
    seed = SimpleNamespace(amplitude=ic.seed_amplitude, k_peak=ic.k_peak, seed=ic.seed)
    b = random_velocity(eq, c, seed, params)["velocity"]
    return {"velocity": u, "magnetic": _with_mean(eq, b, ic)}


def _random(eq: MHD, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """Random solenoidal u (from ``seed``) and B - B0 (from ``seed + 1``), as the Navier-Stokes field."""
    u = random_velocity(eq, c, ic, params)["velocity"]
    field = SimpleNamespace(amplitude=ic.magnetic_amplitude, k_peak=ic.k_peak, seed=ic.seed + 1)
    b = random_velocity(eq, c, field, params)["velocity"]
    return {"velocity": u, "magnetic": _with_mean(eq, b, ic)}


MHD.builders = {"orszag_tang": _orszag_tang, "abc_dynamo": _abc_dynamo, "random": _random}
