"""Plane Couette and Poiseuille flow between no-slip plates: the implementation, on the flow core of
:mod:`simulator.walls.flow`, its transforms the project's distributed FFT backend (``forward_walls`` /
``inverse_walls`` with the Chebyshev basis).

The state is a :class:`simulator.walls.flow.State` of walled Chebyshev spectra (NumPy's FFT along x, unnormalised,
by the Chebyshev coefficients along y): ``w`` ``(1, Nx, Ny)`` complex the wall-normal velocity v, ``zeta`` None,
``mean`` ``(2, Ny)`` the x-averaged velocity (U, 0), ``scalars`` None (no scalars). Its arrays are held
split along x and whole along y (the real layout), so each device solves its modes' columns whole.

The explicit terms, per stage: u = i dv/dy / k_x (continuity; U at k_x = 0), H = -(u . grad) u formed on the grid
(advective form), transformed back and dealiased by the 2/3 rule along x and along the Chebyshev coefficients (as
:mod:`simulator.equations.convection2d_noslip`), then h_v = -k_x^2 H_y - i k_x dH_x/dy (the curl of the curl: the
pressure eliminated) and h_U = the k_x = 0 entry of H_x plus the drive's G.

Drives: ``couette`` moves the plates (the core's plate velocities -U, +U); ``pressure`` adds the fixed G to h_U;
``flux`` steps with G = 0 and then adds G R to the mean flow, R the same step's response to a unit gradient from rest
and G the one value that restores the bulk velocity exactly (the usual correction of channel codes, of the scheme's
order in time). Real fields are ``(1, Nx, Ny)`` on x_i = i Lx / Nx and the Gauss-Lobatto heights y_j.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any, ClassVar, final

import jax
import jax.numpy as jnp
import numpy as np

from simulator.equations.base import ImexEquation, Params
from simulator.equations.channel2d import INFO, ChannelParams
from simulator.equations.noise import white_noise
from simulator.fft import FFTBackend
from simulator.fft.bases import Chebyshev
from simulator.observables import spectra
from simulator.walls import channel, chebyshev, flow

CHEB = "chebyshev"


@final
class Channel2D(ImexEquation):
    """A plane channel between no-slip plates (slab or single backend)."""

    info = INFO
    # the spectra in the real layout (split along x, whole along y); the mean flow whole on every device
    space: ClassVar[dict[str, str]] = {"w": "real", "mean": "particles"}
    _LEAVES: ClassVar[tuple[str, ...]] = ("kx",)

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, physics: ChannelParams | None = None):
        physics = ChannelParams() if physics is None else physics
        super().__init__(fft, box, dtype, physics)
        self.kx = fft.wall_wavenumbers(tuple(self.box), self.dtype)[1]  # (1, Nx, 1)

    # ---- layout --------------------------------------------------------------------------------------------

    @property
    def drive(self) -> str:
        """``physics.drive``: structure, kept in the compiled program."""
        return self.physics.drive

    def gradient(self, params: Params) -> jax.Array | float:
        """The fixed mean pressure gradient G of the drive ``pressure``: ``physics.pressure_gradient``, unset 2/Re
        (laminar Poiseuille flow's with U_c = 1; Re is traced)."""
        given = self.physics.pressure_gradient
        return 2 / params["reynolds"] if given is None else given

    def _forward(self, x: jax.Array) -> jax.Array:
        return jax.lax.with_sharding_constraint(self.fft.forward_walls(x, CHEB), self.fft.real_sharding(x.ndim - 3))

    def _inverse(self, k: jax.Array) -> jax.Array:
        return self.fft.inverse_walls(jax.lax.with_sharding_constraint(k, self.fft.spectral_sharding(k.ndim - 3)),
                                      CHEB)

    def _dy(self, k: jax.Array) -> jax.Array:
        return chebyshev.derivative(k, self.box[2])

    def _dealias(self) -> jax.Array:
        nx, ny = self.fft.shape[1], self.fft.shape[2]
        keep_x = jnp.abs(self.kx * (self.box[1] / (2 * jnp.pi))) < nx / 3
        return (keep_x & (jnp.arange(ny) < 2 * ny / 3)).astype(self.dtype)

    def _replicated(self, x: jax.Array) -> jax.Array:
        return jax.lax.with_sharding_constraint(x, self.fft.replicated_sharding())

    def plate_velocity(self, params: Params) -> jax.Array:
        """U: the top plate's speed (the bottom one's is -U); zero unless the drive is ``couette``."""
        return params["plate_velocity"] if self.drive == "couette" else jnp.zeros((), self.dtype)

    def core(self, params: Params) -> flow.NoSlipFlow:
        """The flow core of this plane's modes at nu = 1/Re, the plates at -U and +U."""
        speed = self.plate_velocity(params)
        return flow.NoSlipFlow(self.kx[..., 0], jnp.zeros_like(self.kx[..., 0]), self.fft.shape[2], self.box[2],
                               1 / params["reynolds"], plates=flow.Plates(velocity=((-speed, 0.0), (speed, 0.0))))

    def velocity_hat(self, state: flow.State) -> tuple[jax.Array, jax.Array]:
        """(u_hat, v_hat): u = i dv/dy / k_x by continuity, U (times Nx: the spectrum's normalisation) at k_x = 0."""
        mean = self.kx == 0
        u = 1j * self._dy(state.w) / jnp.where(mean, 1.0, self.kx)
        return jnp.where(mean, self.fft.shape[1] * state.mean[0], u), state.w

    def _grid(self, state: flow.State) -> dict[str, jax.Array]:
        """u, v and their x and y derivatives on the grid, one batched inverse transform."""
        u, v = self.velocity_hat(state)
        ikx = 1j * self.kx
        names = ("u", "v", "u_x", "u_y", "v_x", "v_y")
        return dict(zip(names, self._inverse(jnp.stack([u, v, ikx * u, self._dy(u), ikx * v, self._dy(v)])),
                        strict=True))

    def _drive(self, gradient: jax.Array | float, like: jax.Array) -> jax.Array:
        """The constant G as the mean flow's explicit term ``(2, Ny)``: G times T_0."""
        return jnp.zeros_like(like).at[0, 0].set(gradient)

    def explicit(self, state: flow.State, t: jax.Array) -> flow.State:
        """h_v and h_U of the module docstring (h_U without the drive)."""
        g = self._grid(state)
        h_u = -(g["u"] * g["u_x"] + g["v"] * g["u_y"])
        h_v = -(g["u"] * g["v_x"] + g["v"] * g["v_y"])
        hat = self._dealias() * self._forward(jnp.stack([h_u, h_v]))
        mean_u = jnp.real(jnp.sum(jnp.where(self.kx == 0, hat[0], 0.0), axis=(0, 1))) / self.fft.shape[1]
        mean = self._replicated(jnp.stack([mean_u, jnp.zeros_like(mean_u)]))
        return flow.State(-self.kx**2 * hat[1] - 1j * self.kx * self._dy(hat[0]), None, mean, state.scalars)

    def imex_step(self, state: flow.State, t: jax.Array, dt: jax.Array, params: Params) -> flow.State:
        core = self.core(params)
        if self.drive != "flux":
            gradient = self.gradient(params) if self.drive == "pressure" else 0.0

            def driven(x: flow.State, s: jax.Array) -> flow.State:
                h = self.explicit(x, s)
                return replace(h, mean=h.mean + self._drive(gradient, h.mean))

            return core.step(driven, dt)(state, t)
        moved = core.step(self.explicit, dt)(state, t)
        zero = jax.tree.map(jnp.zeros_like, state)
        response = core.step(lambda x, s: replace(zero, mean=self._drive(1.0, zero.mean)), dt)(zero, t).mean
        gradient = (params["flux"] - bulk_velocity(moved.mean)) / bulk_velocity(response)
        return replace(moved, mean=self._replicated(moved.mean + gradient * response))

    # ---- states and fields ------------------------------------------------------------------------------

    def heights(self) -> jax.Array:
        """y of the grid points, ``(1, 1, Ny)``: the Gauss-Lobatto points, both plates among them."""
        return jnp.asarray(Chebyshev(self.fft.shape[2], self.box[2]).points(), self.dtype)[None, None]

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> flow.State:
        """The state of ``velocity`` ``(3, 1, Nx, Ny)``: its v and the x-average of its u."""
        velocity = fields["velocity"].astype(self.dtype)
        w = self._forward(velocity[1])
        mean_u = jnp.mean(chebyshev.forward(velocity[0]), axis=(0, 1))
        mean = self._replicated(jnp.stack([mean_u, jnp.zeros_like(mean_u)]))
        return flow.State(w, None, mean, None)

    def fields(self, state: flow.State, params: Params) -> dict[str, jax.Array]:
        """The streamwise velocity, the vorticity and the velocity (u, v, 0), on the grid."""
        g = self._grid(state)
        return {"streamwise": g["u"], "vorticity": g["v_x"] - g["u_y"],
                "velocity": jnp.stack([g["u"], g["v"], jnp.zeros_like(g["u"])])}

    # ---- diagnostics, profiles and spectra -----------------------------------------------------------------

    def _weights(self) -> jax.Array:
        """Clenshaw-Curtis weights across the plates over the gap: a mean's ``(Ny,)``."""
        return jnp.asarray(chebyshev.weights(self.fft.shape[2], self.box[2]) / self.box[2], self.dtype)

    def _volume_mean(self, f: jax.Array) -> jax.Array:
        """The mean over the plane of a grid field ``(..., 1, Nx, Ny)``."""
        return jnp.sum(jnp.mean(f, axis=(-3, -2)) * self._weights(), axis=-1)

    def wall_stresses(self, state: flow.State, params: Params) -> tuple[jax.Array, jax.Array]:
        """The wall shear stress on the bottom plate, nu dU/dy at y = 0, and on the top one, -nu dU/dy at y = 2."""
        bottom, top = chebyshev.boundary_values(self._dy(state.mean[0]))
        return bottom / params["reynolds"], -top / params["reynolds"]

    def diagnostics(self, state: flow.State, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Kinetic energy, bulk velocity, the wall shear stresses, u_tau, Re_tau, divergence, slip, max |u|, CFL."""
        g = self._grid(state)
        tau_bottom, tau_top = self.wall_stresses(state, params)
        u_tau = jnp.sqrt((jnp.abs(tau_bottom) + jnp.abs(tau_top)) / 2)
        speed = self.plate_velocity(params)
        slip = jnp.stack([jnp.abs(g["u"][..., 0] + speed).max(), jnp.abs(g["u"][..., -1] - speed).max(),
                          jnp.abs(g["v"][..., [0, -1]]).max()]).max()
        y = np.asarray(Chebyshev(self.fft.shape[2], self.box[2]).points())
        gaps = np.diff(y)
        local = jnp.asarray(np.minimum(np.concatenate([gaps[:1], gaps]), np.concatenate([gaps, gaps[-1:]])), self.dtype)
        return {"kinetic_energy": 0.5 * self._volume_mean(g["u"] ** 2 + g["v"] ** 2),
                "bulk_velocity": bulk_velocity(state.mean),
                "tau_bottom": tau_bottom, "tau_top": tau_top, "u_tau": u_tau, "re_tau": u_tau * params["reynolds"],
                "divergence": jnp.max(jnp.abs(g["u_x"] + g["v_y"])),
                "slip": slip,
                "max_velocity": jnp.max(jnp.sqrt(g["u"] ** 2 + g["v"] ** 2)),
                "cfl": dt * jnp.max(jnp.abs(g["u"]) / self.spacing[1] + jnp.abs(g["v"]) / local)}

    def profiles(self, state: flow.State, params: Params) -> dict[str, jax.Array]:
        """Averages over x at each height y_j, each ``(Ny,)`` replicated (:mod:`simulator.output.profiles`): the mean
        velocity <u>, the Reynolds stresses <u'u'>, <v'v'>, <u'v'> and the total shear stress nu d<u>/dy - <u'v'>."""
        g = self._grid(state)
        mean_u = jnp.mean(g["u"], axis=(0, 1))
        du, dv = g["u"] - mean_u, g["v"] - jnp.mean(g["v"], axis=(0, 1))
        uv = jnp.mean(du * dv, axis=(0, 1))
        out = {"mean_velocity": mean_u, "reynolds_uu": jnp.mean(du**2, axis=(0, 1)),
               "reynolds_vv": jnp.mean(dv**2, axis=(0, 1)), "reynolds_uv": uv,
               "total_shear_stress": chebyshev.backward(self._dy(state.mean[0])) / params["reynolds"] - uv}
        return {k: self._replicated(v) for k, v in out.items()}

    def spectra(self, state: flow.State, params: Params) -> dict[str, jax.Array]:
        """The kinetic energy of the fluctuations per |k_x|, integrated over y with Clenshaw-Curtis weights."""
        u, v = self.velocity_hat(state)
        fluctuation = self.kx != 0
        columns = chebyshev.backward(jnp.stack([jnp.where(fluctuation, u, 0.0), v]))  # spectral in x, points in y
        power = 0.5 * jnp.sum(jnp.abs(columns) ** 2 * self._weights(), axis=(0, -1), keepdims=True)[0] \
            / self.fft.shape[1] ** 2
        k = (jnp.zeros_like(self.kx), self.kx, jnp.zeros_like(self.kx))
        return {"energy": spectra.shell_sum(power, k, self.fft.shape, self.box)}


def bulk_velocity(mean: jax.Array) -> jax.Array:
    """U_b = (1/2h) int U dy of the mean flow's Chebyshev coefficients ``(2, Ny)`` (the integrals of the T_k)."""
    return 0.5 * mean[0] @ jnp.asarray(chebyshev.integrals(mean.shape[-1]), mean.dtype)


def _laminar_profile(eq: Channel2D, params: Params) -> jax.Array:
    """The drive's laminar U at the grid's heights ``(1, 1, Ny)`` (y' = y - 1 from the centre line)."""
    y = eq.heights() - 1
    if eq.drive == "couette":
        return params["plate_velocity"] * y
    centre = eq.gradient(params) * params["reynolds"] / 2 if eq.drive == "pressure" else 1.5 * params["flux"]
    return centre * (1 - y**2)


def laminar(eq: Channel2D, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """The laminar profile plus v = A xi (y (2 - y))^2 (:class:`..Laminar`); u's fluctuation follows by continuity in
    the state, the first step imposing dv/dy = 0 at the plates."""
    y = eq.heights()
    v = ic.amplitude * white_noise(eq.fft, jax.random.key(ic.seed), eq.dtype) * (y * (eq.box[2] - y)) ** 2
    u = jnp.broadcast_to(_laminar_profile(eq, params), eq.fft.shape).astype(eq.dtype)
    return {"velocity": jnp.stack([u, v, jnp.zeros_like(u)])}


def _wave_profiles(reynolds: np.ndarray, amplitude: np.ndarray, alpha: float, y: np.ndarray) -> np.ndarray:
    """u' and v' of the Tollmien-Schlichting wave at x = 0 and x = pi / (2 alpha), ``(2, 2, Ny)``: the wave is
    u'(x) = u'(0) cos(alpha x) + u'(pi/2alpha) sin(alpha x), and so v'."""
    _, u, v = channel.tollmien_schlichting(np.array([0.0, np.pi / (2 * alpha)]), y, float(reynolds), alpha,
                                           float(amplitude))
    return np.stack([u, v])


def tollmien_schlichting(eq: Channel2D, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """Laminar Poiseuille flow with U_c = 1 plus the Tollmien-Schlichting wave (:class:`..TollmienSchlichting`);
    the Orr-Sommerfeld solve runs on the host at the run's Re, a traced parameter: a callback."""
    y = np.asarray(Chebyshev(eq.fft.shape[2], eq.box[2]).points()) - 1
    shape = jax.ShapeDtypeStruct((2, 2, y.size), eq.dtype)
    wave = jax.pure_callback(lambda re, a: _wave_profiles(re, a, ic.alpha, y).astype(shape.dtype), shape,
                             params["reynolds"], ic.amplitude)
    x = c[1]
    cos, sin = jnp.cos(ic.alpha * x), jnp.sin(ic.alpha * x)
    u = (1 - (eq.heights() - 1) ** 2) + wave[0, 0] * cos + wave[0, 1] * sin
    v = wave[1, 0] * cos + wave[1, 1] * sin
    u, v = jnp.broadcast_arrays(u, v)
    return {"velocity": jnp.stack([u, v, jnp.zeros_like(u)])}


Channel2D.builders = {"laminar": laminar, "tollmien_schlichting": tollmien_schlichting}
