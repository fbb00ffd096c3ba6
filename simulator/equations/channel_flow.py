"""Plane Couette and Poiseuille flow between no-slip plates, in a plane or a box: the implementation
(:class:`ChannelFlow`), on the skeleton of the no-slip family (:class:`simulator.equations.noslip_flow.
NoSlipEquation`: the layout, the velocity, the explicit terms in rotational form, the step) and the flow core of
:mod:`simulator.walls.flow`.

The plates are across the grid's last axis, z in configs (the profiles and the budget below write the wall-normal
direction y, as channel papers do); a velocity's components are listed streamwise, [spanwise,] wall-normal. The
state is a :class:`simulator.walls.flow.State`: in a plane ``w`` ``(1, Nx, Nz)`` the wall-normal velocity and
``zeta`` None; in a box ``w`` and the wall-normal vorticity ``zeta`` = i k_x v - i k_y u ``(Nx, Ny, Nz)``; ``mean``
``(2, Nz)`` the periodic mean of the velocity along the plates (U, V) (V zero in a plane); ``scalars`` the passive
scalars ``(S, *grid)`` (:mod:`simulator.equations.wall_scalars`; None without any). The explicit terms are the
family's with the products in advective form, -(u . grad) u (:meth:`ChannelFlow._advected` says why), and the
drive's G on h_U.

Drives: ``couette`` moves the plates (the core's plate velocities -U, +U); ``pressure`` adds the fixed G to h_U;
``flux`` steps with G = 0 and then adds G R to the mean flow, R the same step's response to a unit gradient from rest
(the mean flow's solves alone: :meth:`simulator.walls.flow.NoSlipFlow.mean_response`) and G the one value that
restores the bulk velocity exactly (the usual correction of channel codes, of the scheme's order in time). Real
fields are a plane's ``(1, Nx, Nz)`` or a box's ``(Nx, Ny, Nz)`` on the periodic points and the Gauss-Lobatto
heights.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from simulator.equations import wall_scalar_terms
from simulator.equations.base import Params
from simulator.equations.channel_outputs import ChannelOutputs
from simulator.equations.channels import ChannelParams
from simulator.equations.noise import white_noise
from simulator.equations.noslip_flow import NoSlipEquation
from simulator.fft import FFTBackend
from simulator.observables import spectra
from simulator.walls import channel, flow
from simulator.walls.bases import Basis


class ChannelFlow(ChannelOutputs, NoSlipEquation):
    """A channel between no-slip plates, in a plane (:mod:`simulator.equations.channel2d`) or a box
    (:mod:`simulator.equations.channel`), whose classes give it their declaration (``info``):
    the components of a velocity are listed streamwise, [spanwise,] wall-normal."""

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, physics: ChannelParams | None = None):
        physics = self.info.params() if physics is None else physics
        super().__init__(fft, box, dtype, physics)

    @property
    def drive(self) -> str:
        """``physics.drive``: structure, kept in the compiled program."""
        return self.physics.drive

    def gradient(self, params: Params) -> jax.Array | float:
        """The fixed mean pressure gradient G of the drive ``pressure``: ``physics.pressure_gradient``, unset 2/Re
        (laminar Poiseuille flow's with U_c = 1; Re is traced)."""
        given = self.physics.pressure_gradient
        return 2 / params["reynolds"] if given is None else given

    def plate_velocity(self, params: Params) -> jax.Array:
        """U: the top plate's speed (the bottom one's is -U); zero unless the drive is ``couette``."""
        return params["plate_velocity"] if self.drive == "couette" else jnp.zeros((), self.dtype)

    def core(self, params: Params) -> flow.NoSlipFlow:
        """The flow core of these modes at nu = 1/Re, the plates at -U and +U along x, and the passive scalars'
        diffusivities and plates."""
        speed = self.plate_velocity(params)
        kx, ky = jnp.broadcast_arrays(self.kx[..., 0], self.ky[..., 0])
        conditions, values = wall_scalar_terms.plates(self.physics.scalars, self._cells)
        return flow.NoSlipFlow(kx, ky, self.fft.shape[2], self.box[2], 1 / params["reynolds"],
                               wall_scalar_terms.diffusivities(params),
                               flow.Plates(velocity=((-speed, 0.0), (speed, 0.0)), scalars=conditions, values=values),
                               hermitian=self.hermitian, basis=self.basis,
                               kept=self.kept_columns)

    def _grid(self, state: flow.State, in_turn: bool = False) -> tuple[list[jax.Array], list[list[jax.Array]]]:
        """The velocity's components c_i and their derivatives g_ij = d_j c_i on the grid (j over the components'
        directions), two batched inverse transforms: the CFL number, which a controlled run evaluates with every
        step, needs the components alone, and XLA drops the derivatives' batch there (3 inverse transforms a box's
        step, not 12). ``in_turn``: the derivatives one at a time (a loop), whose batch's spectra and work space
        would otherwise be the largest memory of a program run at output cadence (the diagnostics')."""
        hats = self.velocity_hat(state)
        slopes = self._slopes()
        m = len(hats)
        values = self._inverse(jnp.stack(hats))
        if in_turn:
            slope = self._in_turn(state, slopes, range(m * m))
        else:
            slope = self._inverse(jnp.stack([d(c) for c in hats for d in slopes]))
        return [values[i] for i in range(m)], [[slope[i * m + j] for j in range(m)] for i in range(m)]

    def _advected(self, state: flow.State) -> jax.Array:
        """-(u . grad) u and each passive scalar's -(u . grad) s on the grid, ``(C + S, *grid)``: the advective form,
        not the family's rotational one. In rotational form the channels tutorial's coarse run (16 x 16 x 24 at
        Re_tau 180, CFL 0.5) blew up at t = 23.5, which the advective form runs to t = 30: the mean shear's products
        alias across the plates, where truncating the Chebyshev coefficients does not dealias, and the rotational
        form's aliasing errors are the larger there (Zang 1991, Appl. Numer. Math. 7, 27)."""
        c, g = self._grid(state)
        m = len(c)
        advected = [-sum(c[j] * g[i][j] for j in range(m)) for i in range(m)]
        if state.scalars is not None:
            slopes = self._slopes()
            for s in state.scalars:
                gradient = self._inverse(jnp.stack([d(s) for d in slopes]))
                advected.append(-sum(c[j] * gradient[j] for j in range(m)))
        return jnp.stack(advected)

    def _drive(self, gradient: jax.Array | float, like: jax.Array) -> jax.Array:
        """The constant G as the mean flow's explicit term ``(2, Ny)``: G times T_0. A product with a constant, not
        an update of one entry: with the products in rotational form, a slab's compiled step (JAX 0.10.2 on CPU)
        read a wrong value at the first entry of the second device's half of a mean flow split along its
        coefficients where the entry was updated (1.9e-4 from the single device after one step); a product is
        partitioned as any elementwise operation."""
        unit = np.zeros(like.shape)
        unit[0, 0] = 1.0
        return jnp.asarray(gradient, like.dtype) * jnp.asarray(unit, like.dtype)

    def imex_step(self, state: flow.State, t: jax.Array, dt: jax.Array, params: Params, tableau: Any,
                  factored: flow.Factored | None = None) -> flow.State:
        core = self.core(params)
        if self.drive != "flux":
            gradient = self.gradient(params) if self.drive == "pressure" else 0.0

            def driven(x: flow.State, s: jax.Array) -> flow.State:
                h = self.explicit(x, s)
                return replace(h, mean=h.mean + self._drive(gradient, h.mean))

            return core.step(driven, dt, tableau, factored)(state, t)
        factored = core.factor(dt, tableau) if factored is None else factored  # one factorisation for the step and R
        moved = core.step(self.explicit, dt, tableau, factored)(state, t)
        response = core.mean_response(self._drive(1.0, state.mean), dt, tableau, factored)
        gradient = (params["flux"] - bulk_velocity(moved.mean, self.basis)) / bulk_velocity(response, self.basis)
        return replace(moved, mean=self._replicated(moved.mean + gradient * response))

    # ---- states and fields ------------------------------------------------------------------------------

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> flow.State:
        """The state of ``velocity`` ``(3, *shape)`` (its wall-normal component, a box's wall-normal vorticity and
        the periodic mean of the components along the plates) and the passive scalars ``scalar`` ``(S, *shape)``."""
        velocity = fields["velocity"].astype(self.dtype)
        along = [velocity[0]] if self.plane else [velocity[0], velocity[1]]
        forward = self._kept_spectrum
        # no mean flow across the plates (continuity with impermeable plates): the k = 0 column of w is zero
        w = jnp.where(self._mean_mode(), 0.0, forward(velocity[1] if self.plane else velocity[2]))
        zeta = None
        if not self.plane:
            u, v = forward(jnp.stack(along))
            zeta = 1j * self.kx * v - 1j * self.ky * u
        means = [jnp.mean(self.basis.forward(a), axis=(0, 1)) for a in along]
        mean = self._replicated(jnp.stack(means + [jnp.zeros_like(means[0])] * (2 - len(means))))
        scalars = forward(fields["scalar"].astype(self.dtype)) if self.physics.scalars else None
        return self.carried(flow.State(w, zeta, mean, scalars))

    def wall_series(self, name: str) -> tuple[str, ...]:
        """Every component of the velocity, and each passive scalar, is a series of the basis across the plates: a
        restart at another wall-normal resolution remaps it by its coefficients (:mod:`simulator.run.remap`)."""
        return (self.basis.name,) * (len(self.physics.scalars) if name == "scalar" else 3)

    def fields(self, state: flow.State, params: Params) -> dict[str, jax.Array]:
        """The streamwise velocity and the velocity, on the grid; a plane's vorticity dv/dx - du/dy; the passive
        scalars."""
        out = {} if state.scalars is None else {"scalar": self._inverse(state.scalars)}
        if self.plane:
            c, g = self._grid(state)
            return {**out, "streamwise": c[0], "vorticity": g[1][0] - g[0][1],
                    "velocity": jnp.stack([c[0], c[1], jnp.zeros_like(c[0])])}
        # a box's velocity alone: its gradient is no field of the snapshot, and a batch of all twelve would be
        # the program's largest memory
        velocity = self._inverse(jnp.stack(self.velocity_hat(state)))
        return {**out, "streamwise": velocity[0], "velocity": velocity}

    # ---- diagnostics, profiles and spectra -----------------------------------------------------------------

    def wall_stresses(self, state: flow.State, params: Params) -> tuple[jax.Array, jax.Array]:
        """The wall shear stress on the bottom plate, nu dU/dy there, and on the top one, -nu dU/dy."""
        bottom, top = self.basis.boundary_values(self._dz(state.mean[0]))
        return bottom / params["reynolds"], -top / params["reynolds"]

    def diagnostics(self, state: flow.State, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Kinetic energy, bulk velocity, the wall shear stresses, u_tau, Re_tau, divergence, slip, max |u|, CFL,
        and the kinetic-energy budget (:meth:`ChannelOutputs.energy_budget`)."""
        c, g = self._grid(state, in_turn=True)
        tau_bottom, tau_top = self.wall_stresses(state, params)
        u_tau = jnp.sqrt((jnp.abs(tau_bottom) + jnp.abs(tau_top)) / 2)
        speed = self.plate_velocity(params)
        slip = jnp.stack([jnp.abs(c[0][..., 0] + speed).max(), jnp.abs(c[0][..., -1] - speed).max()]
                         + [jnp.abs(f[..., [0, -1]]).max() for f in c[1:]]).max()
        y = self.points()
        gaps = np.diff(y)
        local = jnp.asarray(np.minimum(np.concatenate([gaps[:1], gaps]), np.concatenate([gaps, gaps[-1:]])), self.dtype)
        steps = [self.spacing[a] for a in self._axes]
        squared = sum(f**2 for f in c)
        # the grid's spacings in wall units against those of a resolved channel DNS (Moser, Kim & Mansour 1999 at
        # Re_tau = 180: dx+ 17.7, dz+ 5.9, the first point y+ 0.05, mid-channel dy+ 4.4): at least 1 where every one
        # is within dx+ <= 20, spanwise dz+ <= 8, first y+ <= 1, mid-channel dy+ <= 8
        viscous = (1 / params["reynolds"]) / jnp.maximum(u_tau, jnp.finfo(self.dtype).tiny)
        targets = [20.0, 8.0][:len(steps)]
        wall = jnp.min(jnp.stack([t * viscous / float(h) for t, h in zip(targets, steps, strict=True)]
                                 + [viscous / float(gaps[0]), 8.0 * viscous / float(gaps.max())]))
        out = {} if state.scalars is None else wall_scalar_terms.diagnostics(
            state.scalars, self._inverse(state.scalars), params, self._mean_mode(), self._cells, self.box[2],
            self._volume_mean, self.basis)
        return {**out, "kinetic_energy": 0.5 * self._volume_mean(squared),
                "wall_resolution": wall,
                "bulk_velocity": bulk_velocity(state.mean, self.basis),
                "tau_bottom": tau_bottom, "tau_top": tau_top, "u_tau": u_tau, "re_tau": u_tau * params["reynolds"],
                "divergence": jnp.max(jnp.abs(sum(g[j][j] for j in range(len(c))))),
                "slip": slip,
                "max_velocity": jnp.max(jnp.sqrt(squared)),
                "cfl": dt * jnp.max(sum(jnp.abs(f) / h for f, h in zip(c[:-1], steps, strict=True))
                                    + jnp.abs(c[-1]) / local),
                **self.energy_budget(c, g, params, tau_bottom, tau_top)}

    def profiles(self, state: flow.State, params: Params) -> dict[str, jax.Array]:
        """Averages over the periodic directions at each height, each ``(Ny,)`` replicated
        (:mod:`simulator.output.profiles`): the mean velocity <u>, the Reynolds stresses <u'u'>, <v'v'> (v across the
        plates), <u'v'>, a box's spanwise <w'w'>, the total shear stress nu d<u>/dy - <u'v'>, and each passive scalar
        (``scalar{i}``)."""
        c, _ = self._grid(state)
        prime = [f - jnp.mean(f, axis=(0, 1)) for f in c]
        uv = jnp.mean(prime[0] * prime[-1], axis=(0, 1))
        out = {"mean_velocity": jnp.mean(c[0], axis=(0, 1)), "reynolds_uu": jnp.mean(prime[0] ** 2, axis=(0, 1)),
               "reynolds_vv": jnp.mean(prime[-1] ** 2, axis=(0, 1)), "reynolds_uv": uv,
               "total_shear_stress": self.basis.backward(self._dz(state.mean[0])) / params["reynolds"] - uv}
        if not self.plane:
            out["reynolds_ww"] = jnp.mean(prime[1] ** 2, axis=(0, 1))
        if state.scalars is not None:
            out.update(wall_scalar_terms.profiles(self._inverse(state.scalars)))
        return {k: self._replicated(v) for k, v in out.items()}

    def spectra(self, state: flow.State, params: Params) -> dict[str, jax.Array]:
        """The kinetic energy of the fluctuations per horizontal |k|, integrated across the plates with
        Clenshaw-Curtis weights, of the grid's velocity (:meth:`ChannelOutputs.fluctuation_columns`): its sum is the
        diagnostic ``fluctuation_energy``."""
        squared = jnp.abs(self.fluctuation_columns(state)) ** 2
        power = 0.5 * jnp.sum(squared * self._weights(), axis=(0, -1), keepdims=True)[0] / self._cells**2
        k = (jnp.zeros_like(self.kx), self.kx, jnp.zeros_like(self.kx)) if self.plane else \
            (self.kx, self.ky, jnp.zeros_like(self.kx))
        return {"energy": spectra.shell_sum(power, k, self.fft.shape, self.box)}


def bulk_velocity(mean: jax.Array, basis: Basis) -> jax.Array:
    """U_b = (1/2h) int U dy of the mean flow's coefficients ``(2, Ny)`` in ``basis`` (the integrals of its
    polynomials)."""
    return 0.5 * mean[0] @ jnp.asarray(basis.integrals(mean.shape[-1]), mean.dtype)


def _laminar_profile(eq: ChannelFlow, params: Params) -> jax.Array:
    """The drive's laminar U at the grid's heights ``(1, 1, Ny)`` (y' = y - 1 from the centre line)."""
    y = eq.heights() - 1
    if eq.drive == "couette":
        return params["plate_velocity"] * y
    centre = eq.gradient(params) * params["reynolds"] / 2 if eq.drive == "pressure" else 1.5 * params["flux"]
    return centre * (1 - y**2)


def laminar(eq: ChannelFlow, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """The laminar profile plus v = A xi (y (2 - y))^2 (:class:`..Laminar`); u's fluctuation follows by continuity in
    the state, the first step imposing dv/dy = 0 at the plates."""
    y = eq.heights()
    v = ic.amplitude * white_noise(eq.fft, jax.random.key(ic.seed), eq.dtype) * (y * (eq.box[2] - y)) ** 2
    u = jnp.broadcast_to(_laminar_profile(eq, params), eq.fft.shape).astype(eq.dtype)
    return {"velocity": jnp.stack([u, v, jnp.zeros_like(u)] if eq.plane else [u, jnp.zeros_like(u), v])}


def _wave_profiles(reynolds: np.ndarray, amplitude: np.ndarray, alpha: float, y: np.ndarray) -> np.ndarray:
    """u' and v' of the Tollmien-Schlichting wave at x = 0 and x = pi / (2 alpha), ``(2, 2, Ny)``: the wave is
    u'(x) = u'(0) cos(alpha x) + u'(pi/2alpha) sin(alpha x), and so v'."""
    _, u, v = channel.tollmien_schlichting(np.array([0.0, np.pi / (2 * alpha)]), y, float(reynolds), alpha,
                                           float(amplitude))
    return np.stack([u, v])


def tollmien_schlichting(eq: ChannelFlow, c: Sequence[jax.Array], ic: Any, params: Params) -> dict[str, jax.Array]:
    """Laminar Poiseuille flow with U_c = 1 plus the Tollmien-Schlichting wave (:class:`..TollmienSchlichting`);
    the Orr-Sommerfeld solve runs on the host at the run's Re, a traced parameter: a callback."""
    y = eq.points() - 1
    shape = jax.ShapeDtypeStruct((2, 2, y.size), eq.dtype)
    wave = jax.pure_callback(lambda re, a: _wave_profiles(re, a, ic.alpha, y).astype(shape.dtype), shape,
                             params["reynolds"], ic.amplitude)
    x = c[1] if eq.plane else c[0]
    cos, sin = jnp.cos(ic.alpha * x), jnp.sin(ic.alpha * x)
    u = (1 - (eq.heights() - 1) ** 2) + wave[0, 0] * cos + wave[0, 1] * sin
    v = wave[1, 0] * cos + wave[1, 1] * sin
    u, v = (jnp.broadcast_to(f, eq.fft.shape).astype(eq.dtype) for f in (u, v))
    return {"velocity": jnp.stack([u, v, jnp.zeros_like(u)] if eq.plane else [u, jnp.zeros_like(u), v])}


ChannelFlow.builders = {"laminar": wall_scalar_terms.with_scalars(laminar),
                        "tollmien_schlichting": wall_scalar_terms.with_scalars(tollmien_schlichting)}
