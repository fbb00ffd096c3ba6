"""Rayleigh-Benard convection between no-slip plates, in a plane (x, z) or a box (x, y, z): the implementation both
equations share (:mod:`simulator.equations.convection2d_noslip`, :mod:`simulator.equations.convection_noslip`), on
the skeleton of the no-slip family (:class:`simulator.equations.noslip_flow.NoSlipEquation`: the layout, the
velocity, the explicit terms in rotational form, the step) and the flow core of :mod:`simulator.walls.flow`.

The state is a :class:`simulator.walls.flow.State` on the backend's grid ``(Nx, Ny, Nz)`` (a plane's ``(1, Nx,
Nz)``): ``w`` complex, ``zeta`` the wall-normal vorticity i k_x v - i k_y u (None in a plane, where v = 0), ``mean``
``(2, Nz)`` the horizontally averaged velocity (U, V) (V zero in a plane), ``scalars`` ``(1 + S, *grid)`` theta and
the passive scalars. Convection adds to the products the buoyancy theta z_hat on w and the conductive gradient
carried by w on theta (free-fall units: b = 1 - z + theta). Real fields are ``(Nx, Ny, Nz)`` on the periodic axes'
points and the Gauss-Lobatto heights z_j (:class:`simulator.fft.bases.Chebyshev`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from simulator.equations import wall_scalar_terms
from simulator.equations.base import Params
from simulator.equations.noise import white_noise
from simulator.equations.noslip_flow import NoSlipEquation
from simulator.equations.walled import free_fall, kmax_eta
from simulator.observables import spectra
from simulator.walls import eigen, flow


class NoSlipConvection(NoSlipEquation):
    """No-slip Rayleigh-Benard convection on a walled plane or box (single or slab; a box on a pencil too); each
    equation's declaration says which (:attr:`plane`)."""

    @property
    def fixed_flux(self) -> bool:
        """Whether a plate holds the temperature's flux (``grid.walls.temperature``), not its value: the heat flux
        through the layer is then imposed, and the Nusselt number is that flux over the conductive flux of the mean
        temperature drop."""
        return "fixed-flux" in self.physics.temperature_plates

    def core(self, params: Params) -> flow.NoSlipFlow:
        """The flow core of this grid's modes: (k_x, k_y) of each, the plates' velocities along x, theta = 0 or
        d theta/dz = 0 at both plates (the temperature's fixed value or flux), and the passive scalars' plates."""
        nu, kappa = free_fall(params)
        bottom, top = self.physics.plate_velocity
        conditions, values = wall_scalar_terms.plates(self.physics.scalars, self._cells)
        plates = flow.Plates(velocity=((bottom, 0.0), (top, 0.0)),
                             scalars=(tuple(self.physics.temperature_plates), *conditions),
                             values=((0.0, 0.0), *values), walls=tuple(self.physics.velocity_plates))
        return flow.NoSlipFlow(self.kx[..., 0], self.ky[..., 0], self.fft.shape[2], self.box[2], nu,
                               (kappa, *wall_scalar_terms.diffusivities(params)), plates, planar=self.plane,
                               hermitian=self.hermitian, basis=self.basis,
                               kept=self.kept_columns)

    def couette(self) -> jax.Array:
        """The plates' Couette flow U0 + (U1 - U0) z / H along x, ``(1, 1, Nz)``: the velocity of the conductive
        state (no flow where the plates are at rest)."""
        bottom, top = self.physics.plate_velocity
        return bottom + (top - bottom) * self.heights() / self.box[2]

    def _grid(self, state: flow.State) -> dict[str, jax.Array]:
        """The velocity components and theta and their derivatives on the grid (``"u_x"``: du/dx), one field's
        spectrum formed and transformed at a time (a loop, not one batch: the batch's spectra and their
        transforms' work space would be the step's largest memory). The velocity's components are a loop of their
        own: the CFL number, which a controlled run evaluates with every step, needs them alone, and XLA drops the
        other loop there (2 inverse transforms a plane's step, not 9; 3 a box's, not 16)."""
        names = self._components()
        slopes = {"": lambda k: k} | {f"_{d}": slope for d, slope in zip(self._directions(), self._slopes(),
                                                                          strict=True)}
        keys = [f + d for f in (*names, "theta") for d in slopes]
        velocity = [i * len(slopes) for i in range(len(names))]
        rest = [i for i in range(len(keys)) if i not in velocity]
        grids = {}
        for picked in (velocity, rest):
            grids.update(zip([keys[i] for i in picked], self._in_turn(state, list(slopes.values()), picked),
                             strict=True))
        return grids

    def _sources(self, hat: jax.Array, state: flow.State) -> jax.Array:
        """The buoyancy theta z_hat on w, the conductive gradient carried by w on theta: linear, added to the
        products' spectra."""
        c = len(self._components())
        return hat.at[c - 1].add(self._truncated(state.scalars[0])).at[c].add(self._truncated(state.w))

    # ---- states and fields ------------------------------------------------------------------------------

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> flow.State:
        """The state of ``velocity`` ``(3, *grid)`` (its w, in a box zeta, and the horizontal average of its u and
        v), ``theta`` and the passive scalars ``scalar`` ``(S, *grid)``: in a plane the components are (u, w, 0), in
        a box (u, v, w)."""
        velocity = fields["velocity"].astype(self.dtype)
        theta = fields["theta"].astype(self.dtype)
        forward = self._kept_spectrum
        scalars = forward(fields["scalar"].astype(self.dtype)) if self.physics.scalars else None
        mean = jnp.mean(self.basis.forward(velocity[:2]), axis=(1, 2))
        if self.plane:
            spectra_ = forward(jnp.stack([velocity[1], theta]))
            mean, zeta = mean.at[1].set(0.0), None
        else:
            spectra_ = forward(jnp.stack([velocity[2], theta, velocity[0], velocity[1]]))
            zeta = 1j * self.kx * spectra_[3] - 1j * self.ky * spectra_[2]
        mean = jax.lax.with_sharding_constraint(mean, self.fft.replicated_sharding())
        scalars_ = spectra_[1][None] if scalars is None else jnp.concatenate([spectra_[1][None], scalars])
        # no mean flow across the plates (continuity with impermeable plates): the k = 0 column of w is zero
        return self.carried(flow.State(jnp.where(self._mean_mode(), 0.0, spectra_[0]), zeta, mean, scalars_))

    def wall_series(self, name: str) -> tuple[str, ...]:
        """Every field is a series of the basis across the plates."""
        return (self.basis.name,) * (3 if name == "velocity" else len(self.physics.scalars) if name == "scalar" else 1)

    def _velocity(self, g: Mapping[str, jax.Array]) -> jax.Array:
        """The velocity field ``(3, *grid)``: (u, w, 0) in a plane, (u, v, w) in a box."""
        if self.plane:
            return jnp.stack([g["u"], g["w"], jnp.zeros_like(g["u"])])
        return jnp.stack([g["u"], g["v"], g["w"]])

    def fields(self, state: flow.State, params: Params) -> dict[str, jax.Array]:
        """Temperature, theta and the velocity on the grid, in a plane the vorticity dw/dx - du/dz, and the passive
        scalars."""
        g = self._grid(state)
        out = {"temperature": 1 - self.heights() + g["theta"], "theta": g["theta"], "velocity": self._velocity(g)}
        if self.physics.scalars:
            out["scalar"] = self._inverse(state.scalars[1:])
        if self.plane:
            out["vorticity"] = g["w_x"] - g["u_z"]
        return out

    # ---- diagnostics and spectra --------------------------------------------------------------------------

    def _theta_mean(self, theta_hat: jax.Array) -> jax.Array:
        """<theta>'s coefficients ``(Nz,)`` from theta's k_x = k_y = 0 entries."""
        return wall_scalar_terms.horizontal_mean(theta_hat, self._mean_mode(), self._cells)

    def _mean_slope(self, theta_hat: jax.Array) -> jax.Array:
        """d<theta>/dz's coefficients ``(Nz,)`` from theta's k_x = k_y = 0 entries."""
        return self._dz(self._theta_mean(theta_hat))

    def diagnostics(self, state: flow.State, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Kinetic energy, the Nusselt number through the volume and at each plate, the Reynolds number, both
        dissipation rates, the velocity's divergence, max |u| and the CFL number."""
        nu, kappa = free_fall(params)
        g = self._grid(state)
        components, directions = self._components(), self._directions()
        energy = 0.5 * self._volume_mean(sum(g[c] ** 2 for c in components))
        bottom, top = self.basis.boundary_values(self._mean_slope(state.scalars[0]))
        z = self.points()
        gaps = np.diff(z)
        local = jnp.asarray(np.minimum(np.concatenate([gaps[:1], gaps]), np.concatenate([gaps, gaps[-1:]])), self.dtype)
        dissipation = nu * self._volume_mean(sum(g[f"{c}_{d}"] ** 2 for c in components for d in directions))
        cutoff = min([np.pi * self.fft.shape[a] / self.box[a] for a in self._axes] + [np.pi / float(gaps.max())])
        slope = [g[f"theta_{d}"] for d in directions]
        slope[-1] = slope[-1] - 1  # grad b = grad theta - z_hat
        spacing = [self.spacing[a] for a in self._axes] + [local]
        if self.fixed_flux:  # the flux is held at 1: over the conductive flux of the mean temperature drop
            at_bottom, at_top = self.basis.boundary_values(self._theta_mean(state.scalars[0]))
            nusselt = 1 / (1 + at_bottom - at_top)
        else:
            nusselt = 1 + self._volume_mean(g["w"] * g["theta"]) / kappa
        out = {}
        if self.physics.scalars:
            hats = state.scalars[1:]
            out = wall_scalar_terms.diagnostics(hats, self._inverse(hats), params, self._mean_mode(), self._cells,
                                                self.box[2], self._volume_mean, self.basis)
        return {**out, "kinetic_energy": energy,
                "nusselt": nusselt,
                "nusselt_bottom": 1 - bottom, "nusselt_top": 1 - top,
                "reynolds": jnp.sqrt(2 * energy) / nu,
                "kinetic_dissipation": dissipation,
                # the Gauss-Lobatto points are coarsest at mid-height, pi H/(2N) apart: the cutoff across the plates
                # is that spacing's, (2/3) pi/dz, not the sine series' (2/3) pi N/H
                "kmax_eta": kmax_eta(2 / 3 * cutoff, nu, kappa, dissipation),
                "thermal_dissipation": kappa * self._volume_mean(sum(s**2 for s in slope)),
                "divergence": jnp.max(jnp.abs(sum(g[f"{c}_{d}"] for c, d in zip(components, directions,
                                                                                  strict=True)))),
                "max_velocity": jnp.max(jnp.sqrt(sum(g[c] ** 2 for c in components))),
                "cfl": dt * jnp.max(sum(jnp.abs(g[c]) / h for c, h in zip(components, spacing, strict=True)))}

    def profiles(self, state: flow.State, params: Params) -> dict[str, jax.Array]:
        """Averages along the plates at each height z_j, each ``(Nz,)`` replicated (:mod:`simulator.output.
        profiles`): the temperature, the rms velocity and the heat flux 1 + <w theta>/kappa - d<theta>/dz, and each
        passive scalar (``scalar{i}``)."""
        _, kappa = free_fall(params)
        g = self._grid(state)
        out = {"temperature": jnp.mean(1 - self.heights() + g["theta"], axis=(0, 1)),
               "velocity_rms": jnp.sqrt(jnp.mean(sum(g[c] ** 2 for c in self._components()), axis=(0, 1))),
               "heat_flux": 1 + jnp.mean(g["w"] * g["theta"], axis=(0, 1)) / kappa - jnp.mean(g["theta_z"],
                                                                                              axis=(0, 1))}
        if self.physics.scalars:
            out.update(wall_scalar_terms.profiles(self._inverse(state.scalars[1:])))
        return {k: jax.lax.with_sharding_constraint(v, self.fft.replicated_sharding()) for k, v in out.items()}

    def spectra(self, state: flow.State, params: Params) -> dict[str, jax.Array]:
        """The kinetic energy per shell of the horizontal wavenumber |k_h| (|k_x| in a plane), integrated over z
        with Clenshaw-Curtis weights."""
        columns = self.basis.backward(jnp.stack(self.velocity_hat(state)))  # spectral along the plates, points in z
        power = 0.5 * jnp.sum(jnp.abs(columns) ** 2 * self._weights(), axis=(0, -1), keepdims=True)[0] / self._cells**2
        zero = jnp.zeros_like(self.kx)
        k = (zero, self.kx, zero) if self.plane else (self.kx, self.ky, zero)
        return {"energy": spectra.shell_sum(power, k, self.fft.shape, self.box)}


def conductive(eq: NoSlipConvection, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """theta = A xi 4 z (1 - z), xi unit white noise (between fixed-flux plates A xi (4 z (1 - z))^2, damped flat at
    the plates: the first step's solves impose the flux); the plates' Couette flow along x (none between plates at
    rest)."""
    z = eq.heights()
    damped = 4 * z * (eq.box[2] - z)
    theta = ic.amplitude * white_noise(eq.fft, jax.random.key(ic.seed), eq.dtype) * (damped**2 if eq.fixed_flux
                                                                                     else damped)
    couette = jnp.broadcast_to(eq.couette(), eq.fft.shape)
    zero = jnp.zeros_like(couette)
    return {"velocity": jnp.stack([couette, zero, zero]), "theta": theta}


def _mode_profiles(ra: np.ndarray, pr: np.ndarray, a: float, heights: np.ndarray, walls: tuple[str, str],
                   temperature: tuple[str, str]) -> np.ndarray:
    """W, dW/dz and Theta of the eigen-solver's fastest mode at (Ra, Pr, a) between the plates ``walls`` of the
    conditions ``temperature`` on ``heights`` (on [-1, 1]), scaled to max |Theta| = 1: ``(3, Nz)``, by its Chebyshev
    interpolant."""
    _, z, w, b = eigen.rayleigh_benard_growth(float(ra), float(pr), a, walls, temperature=temperature)
    series = [np.polynomial.chebyshev.Chebyshev.fit(2 * z - 1, v, len(z) - 1) for v in (w, b)]
    peak = np.abs(b).max()
    return np.stack([series[0](heights), 2 * series[0].deriv()(heights), series[1](heights)]) / peak


def mode(eq: NoSlipConvection, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """The eigen-solver's mode of horizontal wavevector (a_x, a_y) = 2 pi (m_x / Lx, m_y / Ly) (m_y = 0 in a plane),
    interpolated onto the grid's heights: theta = A Theta(z) cos(phi), w = A W(z) cos(phi), phi = a_x x + a_y y,
    and (u, v) = -A dW/dz (a_x, a_y) sin(phi) / a^2 by continuity (no wall-normal vorticity), a = |(a_x, a_y)|: the
    growth depends on a alone. The solve runs on the host at the run's Rayleigh and Prandtl numbers, traced
    parameters: a callback."""
    if eq.plane:
        (a_x, a_y), x, y = (2 * np.pi * ic.modes[0] / eq.box[1], 0.0), c[1], 0.0
    else:
        (a_x, a_y), x, y = (2 * np.pi * m / eq.box[i] for i, m in enumerate(ic.modes)), c[0], c[1]
    a = float(np.hypot(a_x, a_y))
    heights = 2 * eq.points() / eq.box[2] - 1
    shape = jax.ShapeDtypeStruct((3, eq.fft.shape[2]), eq.dtype)
    plates = tuple(eq.physics.velocity_plates), tuple(eq.physics.temperature_plates)
    w_z, slope, b_z = jax.pure_callback(lambda ra, pr: _mode_profiles(ra, pr, a, heights, *plates).astype(shape.dtype),
                                        shape, params["rayleigh"], params["prandtl"])
    phase = a_x * x + a_y * y
    cos, sin = jnp.cos(phase), jnp.sin(phase)
    horizontal = [-ic.amplitude * slope * sin * (a_i / a**2) for a_i in (a_x, a_y)]
    w = ic.amplitude * w_z * cos
    zero = jnp.zeros(eq.fft.shape, eq.dtype)
    components = (horizontal[0], w, zero) if eq.plane else (*horizontal, w)
    return {"velocity": jnp.stack(jnp.broadcast_arrays(*components, zero)[:3]),
            "theta": jnp.broadcast_to(ic.amplitude * b_z * cos, eq.fft.shape)}


BUILDERS = {"conductive": wall_scalar_terms.with_scalars(conductive), "mode": wall_scalar_terms.with_scalars(mode)}
