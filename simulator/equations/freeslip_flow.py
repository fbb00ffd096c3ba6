"""What every equation of convection between free-slip plates runs alike, the plane's (:mod:`simulator.equations.
convection2d`, the vorticity form) and the box's (:mod:`simulator.equations.convection`, the velocity form): the
walled spectra's operators, the diagonal viscosity and diffusivities, the passive scalars' linear profiles, the
fields, diagnostics, profiles and spectra, and the initial conditions. An equation of the family says how its
state holds the flow: how many entries (:attr:`FreeSlipConvection.flow_entries`) and along which grid axes its
velocity lies (:attr:`FreeSlipConvection.axes`), its fields on the grid and w's spectrum, the kinetic energy
and dissipation per mode, its nonlinear terms, its state from fields and its parities.

Layout: the state is the walled spectra (:mod:`simulator.fft.walls`) of the flow's entries, theta and each passive
scalar's departure s' from its linear profile, ``(F + 1 + S, Nx, Ny, Nz)`` (a plane's ``(F + 1 + S, 1, Nx, Nz)``,
its x the grid's second axis): theta and the scalars sine series in z on the entries n = 0 .. Nz - 1 of
k_z = n pi / H. Real fields are ``(Nx, Ny, Nz)`` on the points x_i = i Lx / Nx and the cell centres
z_j = (j + 1/2) H / Nz.
"""

from __future__ import annotations

import abc
from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from simulator.equations import wall_scalar_terms
from simulator.equations.base import Params, SemiLinearEquation
from simulator.equations.noise import white_noise
from simulator.equations.scalars import field_info
from simulator.equations.spec import FieldInfo
from simulator.equations.walled import (
    WalledOperators,
    free_fall,
    heights,
    kmax_eta,
    plate_nusselt,
    scalar_lifts,
    series_cutoff,
    sine_scalar_diagnostics,
)
from simulator.fft import FFTBackend
from simulator.observables import spectra


class FreeSlipConvection(SemiLinearEquation):
    """The skeleton of Rayleigh-Benard convection between free-slip plates on a plane or a box (module docstring); a
    subclass says how its state holds the flow."""

    _LEAVES: ClassVar[tuple[str, ...]] = ("ops",)
    #: how many of the state's entries hold the flow, before theta: the plane's vorticity, the box's (u, v, w)
    flow_entries: ClassVar[int]
    #: the grid axes of the velocity's components, x first and z last: the plane's (1, 2), the box's (0, 1, 2)
    axes: ClassVar[tuple[int, ...]]

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, physics: Any = None):
        super().__init__(fft, box, dtype, physics)
        self.ops = WalledOperators(fft, self.box, self.dtype)

    @property
    def field_info(self) -> Mapping[str, FieldInfo]:
        """``info.fields``, with ``scalar`` holding this run's passive scalars, or absent without any."""
        return field_info(self.info.fields, len(self.physics.scalars))

    def heights(self) -> jax.Array:
        """z of the grid points, ``(1, 1, Nz)`` (:func:`simulator.equations.walled.heights`)."""
        return heights(self.fft, self.box, self.dtype)

    def lifts(self) -> jax.Array:
        """Each passive scalar's linear profile on the grid's heights, ``(S, 1, 1, Nz)``."""
        return scalar_lifts(self.physics.scalars, self.heights(), self.box[2]).astype(self.dtype)

    def profile_slopes(self) -> list[float]:
        """-(s1 - s0) / H of each passive scalar: its linear profile's gradient, which w carries into d s'/dt."""
        return [-(b - a) / self.box[2] for a, b in (s.plates()[1] for s in self.physics.scalars)]

    # ---- what a subclass says of its state's flow ------------------------------------------------------------

    @abc.abstractmethod
    def on_grid(self, state: jax.Array) -> tuple[list[jax.Array], jax.Array]:
        """The velocity's components along :attr:`axes`, each ``(Nx, Ny, Nz)``, and theta with each scalar's
        departure s', ``(1 + S, Nx, Ny, Nz)``, on the grid (what a caller leaves unused is not computed)."""

    @abc.abstractmethod
    def w_hat(self, state: jax.Array) -> jax.Array:
        """w's spectrum, a sine series."""

    @abc.abstractmethod
    def power(self, state: jax.Array) -> tuple[jax.Array, jax.Array]:
        """Per mode, the spectral densities of |u|^2 (twice the kinetic energy's) and of |grad u|^2 (the kinetic
        dissipation's over nu)."""

    @abc.abstractmethod
    def flow_diagnostics(self, state: jax.Array, velocity: Sequence[jax.Array]) -> dict[str, jax.Array]:
        """The formulation's own diagnostics (``velocity``: :meth:`on_grid`'s)."""

    def flow_fields(self, state: jax.Array, velocity: Sequence[jax.Array]) -> dict[str, jax.Array]:
        """The flow's fields on the grid: ``velocity`` ``(3, Nx, Ny, Nz)``, a plane's normal component zero."""
        missing = [jnp.zeros_like(velocity[0])] * (3 - len(velocity))
        return {"velocity": jnp.stack([*velocity, *missing])}

    @abc.abstractmethod
    def at_rest(self) -> dict[str, jax.Array]:
        """The state field of the flow at rest (an initial condition's)."""

    @abc.abstractmethod
    def mode_flow(self, a: float, q: float, x: jax.Array, z: jax.Array, amplitude: float, sigma: jax.Array,
                  params: Params) -> dict[str, jax.Array]:
        """The flow of the eigenvector whose theta is ``amplitude`` cos(a x) sin(q z), growing at ``sigma``."""

    def growth_rate(self, a: float, n: int, params: Params) -> jax.Array:
        """The growth rate of the mode cos(a x) sin(n pi z) (:func:`simulator.equations.plates.growth_rate`)."""
        nu, kappa = free_fall(params)
        k2 = a**2 + (n * jnp.pi / self.box[2]) ** 2
        return -(nu + kappa) * k2 / 2 + jnp.sqrt(((nu - kappa) * k2 / 2) ** 2 + a**2 / k2)

    # ---- the linear part ------------------------------------------------------------------------------------

    def linear(self, params: Params) -> jax.Array:
        """The diagonal L of the flow's entries, theta and the s'_i, ``(F + 1 + S, Nx, Ny, Nz)``."""
        nu, kappa = free_fall(params)
        rates = (nu,) * self.flow_entries + (kappa, *wall_scalar_terms.diffusivities(params))
        return -jnp.stack(jnp.broadcast_arrays(*(rate * self.ops.k2 for rate in rates)))

    def exp_linear(self, state: jax.Array, tau: jax.Array, params: Params) -> jax.Array:
        return state * jnp.exp(self.linear(params) * tau)

    # ---- fields ----------------------------------------------------------------------------------------------

    def wall_lift(self, name: str) -> jax.Array | None:
        """Each scalar's linear profile (``scalar``: its plates' values, not a sine series); None for the others."""
        return self.lifts() if name == "scalar" and self.physics.scalars else None

    def fields(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Temperature, theta, the flow's fields (:meth:`flow_fields`) and the passive scalars, on the grid."""
        velocity, carried = self.on_grid(state)
        out = {"temperature": 1 - self.heights() + carried[0], "theta": carried[0],
               **self.flow_fields(state, velocity)}
        if self.physics.scalars:
            out["scalar"] = self.lifts() + carried[1:]
        return out

    # ---- diagnostics, spectra and profiles ----------------------------------------------------------------

    def diagnostics(self, state: jax.Array, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Kinetic energy, the Nusselt number through the volume and at each plate, the Reynolds number, both
        dissipation rates, the formulation's own (:meth:`flow_diagnostics`), the CFL number and the passive
        scalars' (:func:`~simulator.equations.walled.sine_scalar_diagnostics`)."""
        ops = self.ops
        nu, kappa = free_fall(params)
        power, gradients = self.power(state)
        theta = state[self.flow_entries]
        energy = 0.5 * ops.mean(power)
        dissipation = nu * ops.mean(gradients)
        bottom, top = plate_nusselt(ops, theta, self.fft.size, self.box[2])
        velocity, _ = self.on_grid(state)
        scalars = sine_scalar_diagnostics(ops, self.physics.scalars, state[self.flow_entries + 1:], params,
                                          self.box[2])
        return {**scalars,
                "kinetic_energy": energy,
                "nusselt": 1 + ops.mean(jnp.real(jnp.conj(self.w_hat(state)) * theta)) / kappa,
                "nusselt_bottom": bottom, "nusselt_top": top,
                "reynolds": jnp.sqrt(2 * energy) / nu,
                "kinetic_dissipation": dissipation,
                "kmax_eta": kmax_eta(series_cutoff(self.fft, self.box), nu, kappa, dissipation),
                "thermal_dissipation": kappa * (1 + ops.mean(ops.k2 * jnp.abs(theta) ** 2)),
                **self.flow_diagnostics(state, velocity),
                "cfl": dt * jnp.max(sum(jnp.abs(u) / self.spacing[axis] for u, axis in zip(velocity, self.axes,
                                                                                         strict=True)))}

    def spectra(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """The kinetic energy per shell of |k| (a plane's ring)."""
        ops = self.ops
        power = 0.5 * ops.weight * self.power(state)[0] / float(self.fft.size) ** 2
        return {"energy": spectra.shell_sum(power, ops.k, self.fft.shape, self.box)}

    def profiles(self, state: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Averages along the plates at each height z_j, each ``(Nz,)`` replicated (:mod:`simulator.output.profiles`):
        the temperature, the rms velocity and the heat flux (<w b> - kappa d<b>/dz) / kappa = 1 + <w theta>/kappa -
        d<theta>/dz (<w> = 0 at every height), d<theta>/dz from theta's horizontally uniform entries exactly; each
        passive scalar's average ``scalar{i}``."""
        _, kappa = free_fall(params)
        ops = self.ops
        velocity, carried = self.on_grid(state)
        theta = carried[0]
        slope = self.fft.inverse_walls(ops.horizontal() * ops.k[2] * state[self.flow_entries], "even")
        out = {"temperature": jnp.mean(1 - self.heights() + theta, axis=(0, 1)),
               "velocity_rms": jnp.sqrt(jnp.mean(sum(u**2 for u in velocity), axis=(0, 1))),
               "heat_flux": 1 + jnp.mean(velocity[-1] * theta, axis=(0, 1)) / kappa - jnp.mean(slope, axis=(0, 1))}
        if self.physics.scalars:
            out.update(wall_scalar_terms.profiles(self.lifts() + carried[1:]))
        return {k: jax.lax.with_sharding_constraint(v, self.fft.replicated_sharding()) for k, v in out.items()}


def conductive(eq: FreeSlipConvection, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """theta = A xi 4 z (1 - z), xi unit white noise; at rest."""
    z = eq.heights()
    theta = ic.amplitude * white_noise(eq.fft, jax.random.key(ic.seed), eq.dtype) * 4 * z * (eq.box[2] - z)
    return {**eq.at_rest(), "theta": theta}


def mode(eq: FreeSlipConvection, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """theta = A cos(a x) sin(n pi z), a = 2 pi m_x / Lx, with its eigenvector's flow (the equation's
    :meth:`~FreeSlipConvection.mode_flow`); m_x = 0: a layer of temperature at rest."""
    m_x, n = ic.modes
    x_axis = eq.axes[0]
    a, q = 2 * jnp.pi * m_x / eq.box[x_axis], n * jnp.pi / eq.box[2]
    z = eq.heights()
    theta = jnp.broadcast_to(ic.amplitude * jnp.cos(a * c[x_axis]) * jnp.sin(q * z), eq.fft.shape)
    if m_x == 0:
        return {**eq.at_rest(), "theta": theta}
    sigma = eq.growth_rate(a, n, params)
    return {**eq.mode_flow(a, q, c[x_axis], z, ic.amplitude, sigma, params), "theta": theta}


BUILDERS = {"conductive": wall_scalar_terms.with_scalars(conductive), "mode": wall_scalar_terms.with_scalars(mode)}
