"""Rayleigh-Benard convection between no-slip plates in a plane: the implementation, on the flow core of
:mod:`simulator.walls.flow`.

The state is a :class:`simulator.walls.flow.State` of walled Chebyshev spectra (``forward_walls(x, "chebyshev")``:
NumPy's FFT along x, unnormalised, by the Chebyshev coefficients along z): ``w`` ``(1, Nx, Nz)`` complex, ``zeta``
None (no wall-normal vorticity in a plane), ``mean`` ``(2, Nz)`` the horizontally averaged velocity (U, V) (V zero),
``scalars`` ``(1, 1, Nx, Nz)`` theta. Its arrays are held split along x and whole along z (the real layout), so each
device solves its modes' columns whole; the transforms' own layout is restored around each transform.

The explicit terms, per stage: u = i dw/dz / k_x (continuity; U at k_x = 0), the products in physical space on the
grid (advective form), H = -(u . grad) u + theta z_hat and -(u . grad) theta + w transformed back and dealiased by
the 2/3 rule along x (|m_x| < Nx/3) and along the Chebyshev coefficients (k < 2 Nz/3; the padding of Dedalus's
dealias = 3/2 would need a larger grid than the run's), then h_w = -k_x^2 H_z - i k_x dH_x/dz (the curl of the curl:
the pressure eliminated), h_U = the k_x = 0 entry of H_x, h_theta. Real fields are ``(1, Nx, Nz)`` on x_i = i Lx / Nx
and the Gauss-Lobatto heights z_j (:class:`simulator.fft.bases.Chebyshev`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np

from simulator.equations.base import ImexEquation, Params
from simulator.equations.convection2d_noslip import INFO, NoSlipParams
from simulator.equations.noise import white_noise
from simulator.equations.walled import free_fall, kmax_eta
from simulator.fft import FFTBackend
from simulator.fft.bases import CHEBYSHEV, Chebyshev
from simulator.observables import spectra
from simulator.walls import chebyshev, eigen, flow

CHEB = "chebyshev"


@final
class NoSlipConvection2D(ImexEquation):
    """No-slip Rayleigh-Benard convection on a walled plane (slab or single backend)."""

    info = INFO
    # the spectra are held in the real layout (split along x, whole along z: module docstring); the mean flow, a
    # profile across the plates, whole on every device, as the replicated leaves are kept
    space: ClassVar[dict[str, str]] = {"w": "real", "mean": "particles", "scalars": "real"}
    _LEAVES: ClassVar[tuple[str, ...]] = ("kx",)

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, physics: NoSlipParams | None = None):
        physics = NoSlipParams() if physics is None else physics
        super().__init__(fft, box, dtype, physics)
        self.kx = fft.wall_wavenumbers(tuple(self.box), self.dtype)[1]  # (1, Nx, 1)

    # ---- layout --------------------------------------------------------------------------------------------

    def _columns(self, x: jax.Array) -> jax.Array:
        """``x`` ``(*batch, 1, Nx, Nz)`` held whole along z (the real layout)."""
        return jax.lax.with_sharding_constraint(x, self.fft.real_sharding(x.ndim - 3))

    def _forward(self, x: jax.Array) -> jax.Array:
        return self._columns(self.fft.forward_walls(x, CHEB))

    def _inverse(self, k: jax.Array) -> jax.Array:
        return self.fft.inverse_walls(jax.lax.with_sharding_constraint(k, self.fft.spectral_sharding(k.ndim - 3)),
                                      CHEB)

    def _dz(self, k: jax.Array) -> jax.Array:
        return chebyshev.derivative(k, self.box[2])

    def _dealias(self) -> jax.Array:
        nx, nz = self.fft.shape[1], self.fft.shape[2]
        keep_x = jnp.abs(self.kx * (self.box[1] / (2 * jnp.pi))) < nx / 3
        return (keep_x & (jnp.arange(nz) < 2 * nz / 3)).astype(self.dtype)

    def core(self, params: Params) -> flow.NoSlipFlow:
        """The flow core of this plane's modes: k_x of each, the plates' velocities along x, fixed temperatures
        theta = 0 at both plates."""
        nu, kappa = free_fall(params)
        bottom, top = self.physics.plate_velocity
        plates = flow.Plates(velocity=((bottom, 0.0), (top, 0.0)), scalars=("fixed-value",), values=((0.0, 0.0),))
        return flow.NoSlipFlow(self.kx[..., 0], jnp.zeros_like(self.kx[..., 0]), self.fft.shape[2], self.box[2], nu,
                               (kappa,), plates, planar=True)

    def couette(self) -> jax.Array:
        """The plates' Couette flow U0 + (U1 - U0) z / H along x, ``(1, 1, Nz)``: the velocity of the conductive
        state (no flow where the plates are at rest)."""
        bottom, top = self.physics.plate_velocity
        return bottom + (top - bottom) * self.heights() / self.box[2]

    def velocity_hat(self, state: flow.State) -> tuple[jax.Array, jax.Array]:
        """(u_hat, w_hat): u = i dw/dz / k_x by continuity, U (times Nx: the spectrum's normalisation) at k_x = 0."""
        mean = self.kx == 0
        u = 1j * self._dz(state.w) / jnp.where(mean, 1.0, self.kx)
        return jnp.where(mean, self.fft.shape[1] * state.mean[0], u), state.w

    def _grid(self, state: flow.State) -> dict[str, jax.Array]:
        """u, w, theta and their x and z derivatives on the grid, one field's spectrum formed and transformed at a
        time (a loop, not one batch of nine: the nine spectra and their transforms' work space would be the
        step's largest memory)."""
        u, w = self.velocity_hat(state)
        ikx = 1j * self.kx

        def one(i: jax.Array) -> jax.Array:
            base = jnp.stack([u, w, state.scalars[0]])[i // 3]
            return self._inverse(jax.lax.switch(i % 3, (lambda f: f, lambda f: ikx * f, self._dz), base))

        names = ("u", "u_x", "u_z", "w", "w_x", "w_z", "theta", "theta_x", "theta_z")
        return dict(zip(names, jax.lax.map(one, jnp.arange(len(names))), strict=True))

    def explicit(self, state: flow.State, t: jax.Array) -> flow.State:
        """h_w, h_zeta (zero), h_U and h_theta of the module docstring."""
        g = self._grid(state)
        h_u = -(g["u"] * g["u_x"] + g["w"] * g["u_z"])
        h_w = -(g["u"] * g["w_x"] + g["w"] * g["w_z"]) + g["theta"]
        h_t = -(g["u"] * g["theta_x"] + g["w"] * g["theta_z"]) + g["w"]
        hat = self._dealias() * self._forward(jnp.stack([h_u, h_w, h_t]))
        mean_u = jnp.real(jnp.sum(jnp.where(self.kx == 0, hat[0], 0.0), axis=(0, 1))) / self.fft.shape[1]
        mean = jax.lax.with_sharding_constraint(jnp.stack([mean_u, jnp.zeros_like(mean_u)]),
                                                self.fft.replicated_sharding())
        return flow.State(-self.kx**2 * hat[1] - 1j * self.kx * self._dz(hat[0]), None, mean, hat[2][None])

    def imex_factor(self, dt: jax.Array, params: Params) -> flow.Factored:
        return self.core(params).factor(dt)

    def imex_step(self, state: flow.State, t: jax.Array, dt: jax.Array, params: Params,
                  factored: flow.Factored | None = None) -> flow.State:
        return self.core(params).step(self.explicit, dt, factored)(state, t)

    # ---- states and fields ------------------------------------------------------------------------------

    def heights(self) -> jax.Array:
        """z of the grid points, ``(1, 1, Nz)``: the Gauss-Lobatto points, both plates among them."""
        return jnp.asarray(Chebyshev(self.fft.shape[2], self.box[2]).points(), self.dtype)[None, None]

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> flow.State:
        """The state of ``velocity`` ``(3, 1, Nx, Nz)`` (its w and the x-average of its u) and ``theta``."""
        velocity = fields["velocity"].astype(self.dtype)
        spectra_ = self._forward(jnp.stack([velocity[1], fields["theta"].astype(self.dtype)]))
        mean_u = jnp.mean(chebyshev.forward(velocity[0]), axis=(0, 1))
        mean = jax.lax.with_sharding_constraint(jnp.stack([mean_u, jnp.zeros_like(mean_u)]),
                                                self.fft.replicated_sharding())
        return flow.State(spectra_[0], None, mean, spectra_[1][None])

    def wall_series(self, name: str) -> tuple[str, ...]:
        """Every field is a Chebyshev series across the plates."""
        return (CHEBYSHEV,) * (3 if name == "velocity" else 1)

    def fields(self, state: flow.State, params: Params) -> dict[str, jax.Array]:
        """Temperature, theta, vorticity and the velocity (u, w, 0), on the grid."""
        g = self._grid(state)
        return {"temperature": 1 - self.heights() + g["theta"], "theta": g["theta"],
                "vorticity": g["w_x"] - g["u_z"], "velocity": jnp.stack([g["u"], g["w"], jnp.zeros_like(g["u"])])}

    # ---- diagnostics and spectra --------------------------------------------------------------------------

    def _volume_mean(self, f: jax.Array) -> jax.Array:
        """The mean over the plane of a grid field ``(..., 1, Nx, Nz)``: Clenshaw-Curtis weights across the plates."""
        weights = chebyshev.weights(self.fft.shape[2], self.box[2]) / self.box[2]
        return jnp.sum(jnp.mean(f, axis=(-3, -2)) * weights, axis=-1)

    def _mean_slope(self, theta_hat: jax.Array) -> jax.Array:
        """d<theta>/dz's Chebyshev coefficients ``(Nz,)`` from theta's k_x = 0 entries."""
        mean = jnp.sum(jnp.where(self.kx == 0, jnp.real(theta_hat), 0.0), axis=(0, 1)) / self.fft.shape[1]
        return self._dz(mean)

    def diagnostics(self, state: flow.State, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Kinetic energy, the Nusselt number through the volume and at each plate, the Reynolds number, both
        dissipation rates, the velocity's divergence, max |u| and the CFL number."""
        nu, kappa = free_fall(params)
        g = self._grid(state)
        energy = 0.5 * self._volume_mean(g["u"] ** 2 + g["w"] ** 2)
        bottom, top = chebyshev.boundary_values(self._mean_slope(state.scalars[0]))
        z = np.asarray(Chebyshev(self.fft.shape[2], self.box[2]).points())
        gaps = np.diff(z)
        local = jnp.asarray(np.minimum(np.concatenate([gaps[:1], gaps]), np.concatenate([gaps, gaps[-1:]])), self.dtype)
        dissipation = nu * self._volume_mean(g["u_x"] ** 2 + g["u_z"] ** 2 + g["w_x"] ** 2 + g["w_z"] ** 2)
        return {"kinetic_energy": energy,
                "nusselt": 1 + self._volume_mean(g["w"] * g["theta"]) / kappa,
                "nusselt_bottom": 1 - bottom, "nusselt_top": 1 - top,
                "reynolds": jnp.sqrt(2 * energy) / nu,
                "kinetic_dissipation": dissipation,
                # the Gauss-Lobatto points are coarsest at mid-height, pi H/(2N) apart: the cutoff across the plates
                # is that spacing's, (2/3) pi/dz, not the sine series' (2/3) pi N/H
                "kmax_eta": kmax_eta(2 / 3 * min(np.pi * self.fft.shape[1] / self.box[1], np.pi / float(gaps.max())),
                                     nu, kappa, dissipation),
                "thermal_dissipation": kappa * self._volume_mean(g["theta_x"] ** 2 + (g["theta_z"] - 1) ** 2),
                "divergence": jnp.max(jnp.abs(g["u_x"] + g["w_z"])),
                "max_velocity": jnp.max(jnp.sqrt(g["u"] ** 2 + g["w"] ** 2)),
                "cfl": dt * jnp.max(jnp.abs(g["u"]) / self.spacing[1] + jnp.abs(g["w"]) / local)}

    def profiles(self, state: flow.State, params: Params) -> dict[str, jax.Array]:
        """Averages over x at each height z_j, each ``(Nz,)`` replicated (:mod:`simulator.output.profiles`): the
        temperature, the rms velocity and the heat flux 1 + <w theta>/kappa - d<theta>/dz."""
        _, kappa = free_fall(params)
        g = self._grid(state)
        out = {"temperature": jnp.mean(1 - self.heights() + g["theta"], axis=(0, 1)),
               "velocity_rms": jnp.sqrt(jnp.mean(g["u"] ** 2 + g["w"] ** 2, axis=(0, 1))),
               "heat_flux": 1 + jnp.mean(g["w"] * g["theta"], axis=(0, 1)) / kappa - jnp.mean(g["theta_z"],
                                                                                              axis=(0, 1))}
        return {k: jax.lax.with_sharding_constraint(v, self.fft.replicated_sharding()) for k, v in out.items()}

    def spectra(self, state: flow.State, params: Params) -> dict[str, jax.Array]:
        """The kinetic energy per |k_x|, integrated over z with Clenshaw-Curtis weights."""
        u, w = self.velocity_hat(state)
        columns = chebyshev.backward(jnp.stack([u, w]))  # spectral in x, on the points in z
        weights = chebyshev.weights(self.fft.shape[2], self.box[2]) / self.box[2]
        power = 0.5 * jnp.sum(jnp.abs(columns) ** 2 * weights, axis=(0, -1), keepdims=True)[0] / self.fft.shape[1] ** 2
        k = (jnp.zeros_like(self.kx), self.kx, jnp.zeros_like(self.kx))
        return {"energy": spectra.shell_sum(power, k, self.fft.shape, self.box)}


def conductive(eq: NoSlipConvection2D, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """theta = A xi 4 z (1 - z), xi unit white noise; the plates' Couette flow (none between plates at rest)."""
    z = eq.heights()
    theta = ic.amplitude * white_noise(eq.fft, jax.random.key(ic.seed), eq.dtype) * 4 * z * (eq.box[2] - z)
    couette = jnp.broadcast_to(eq.couette(), eq.fft.shape)
    return {"velocity": jnp.stack([couette, jnp.zeros_like(couette), jnp.zeros_like(couette)]), "theta": theta}


def _mode_profiles(ra: np.ndarray, pr: np.ndarray, a: float, heights: np.ndarray) -> np.ndarray:
    """W, dW/dz and Theta of the eigen-solver's fastest mode at (Ra, Pr, a) on ``heights`` (on [-1, 1]), scaled to
    max |Theta| = 1: ``(3, Nz)``, by its Chebyshev interpolant."""
    _, z, w, b = eigen.rayleigh_benard_growth(float(ra), float(pr), a)
    series = [np.polynomial.chebyshev.Chebyshev.fit(2 * z - 1, v, len(z) - 1) for v in (w, b)]
    peak = np.abs(b).max()
    return np.stack([series[0](heights), 2 * series[0].deriv()(heights), series[1](heights)]) / peak


def mode(eq: NoSlipConvection2D, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """The eigen-solver's mode at a = 2 pi m_x / Lx (:class:`..Mode`), interpolated onto the grid's heights (the
    solve runs on the host at the run's Rayleigh and Prandtl numbers, traced parameters: a callback)."""
    a = 2 * np.pi * ic.modes[0] / eq.box[1]
    heights = 2 * np.asarray(Chebyshev(eq.fft.shape[2], eq.box[2]).points()) / eq.box[2] - 1
    shape = jax.ShapeDtypeStruct((3, eq.fft.shape[2]), eq.dtype)
    w_z, slope, b_z = jax.pure_callback(lambda ra, pr: _mode_profiles(ra, pr, a, heights).astype(shape.dtype),
                                        shape, params["rayleigh"], params["prandtl"])
    x = c[1]
    velocity = jnp.stack(jnp.broadcast_arrays(-ic.amplitude * slope * jnp.sin(a * x) / a,
                                              ic.amplitude * w_z * jnp.cos(a * x), jnp.zeros(eq.fft.shape, eq.dtype)))
    return {"velocity": velocity, "theta": jnp.broadcast_to(ic.amplitude * b_z * jnp.cos(a * x), eq.fft.shape)}


NoSlipConvection2D.builders = {"conductive": conductive, "mode": mode}
