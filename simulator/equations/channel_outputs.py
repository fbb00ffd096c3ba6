"""What a channel run reports beyond its wall stresses: the kinetic-energy budget of the mean flow and of the
fluctuations (time series) and the one-dimensional spectra along the periodic directions at each height (the
``wall_spectra`` output kind, :mod:`simulator.output.wall_spectra`), computed on the devices from the state of
:class:`simulator.equations.channel_flow.ChannelFlow`, which takes them from :class:`ChannelOutputs`.

Layout (the channel's): grid fields ``(1, Nx, Ny)`` in a plane or ``(Nx, Ns, Ny)`` in a box, the heights y_j the
ascending Gauss-Lobatto points last; velocity components listed streamwise, [spanwise,] wall-normal. Averages <.>
over the periodic directions make profiles of y; primes are departures from them; volume means weigh the heights
with Clenshaw-Curtis weights (:func:`simulator.walls.chebyshev.weights`), exact for the grid's polynomials.

The budget (Pope 2000, §7.3; per unit volume, h the half gap 1, L = 2h the gap, U_i = <u_i> the mean flow, v the
wall-normal velocity): with E_mean = <U_i U_i>/2 and E' = <u_i' u_i'>/2 over the volume,

    dE_mean/dt = G U_b + W - P - eps_mean,    dE'/dt = P - eps,

production P = -<u_i'v'> dU_i/dy, dissipation eps = nu <d_j u_i' d_j u_i'> (equal to 2 nu <s_ij' s_ij'> over
the volume between no-slip plates), the mean flow's eps_mean = nu (dU_i/dy)^2, the work of the mean pressure
gradient G U_b and the plates' W = U_w (tau_bottom - tau_top) / L (the force each plate exerts on the fluid, the
opposite of the fluid's stress on it, times its velocity -U_w or +U_w; zero unless the plates move). Under a fixed
flux G is the gradient that holds the bulk velocity: the mean momentum balance dU_b/dt = G - (tau_bottom + tau_top)
/ L at dU_b/dt = 0.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np


class ChannelOutputs:
    """The energy budget and the wall spectra of a channel (module docstring); mixed into
    :class:`simulator.equations.channel_flow.ChannelFlow`, whose grid, weights and drives they use."""

    def energy_budget(self: Any, c: list[jax.Array], g: list[list[jax.Array]], params: Any,
                      tau_bottom: jax.Array, tau_top: jax.Array) -> dict[str, jax.Array]:
        """The budget's terms of the module docstring from the velocity's components ``c`` and their gradients
        ``g[i][j] = d_j c_i`` on the grid (:meth:`ChannelFlow._grid`) and the wall stresses: ``mean_energy``,
        ``fluctuation_energy``, ``production``, ``dissipation``, ``mean_dissipation``, ``pressure_work`` and
        ``wall_work``, each a volume mean (a scalar)."""
        nu = 1 / params["reynolds"]
        mean = [jnp.mean(f, axis=(0, 1)) for f in c]  # (Ny,) each: U, [V,] and the zero wall-normal mean
        slope = [jnp.mean(row[-1], axis=(0, 1)) for row in g]  # dU_i/dy
        prime = [f - m for f, m in zip(c, mean, strict=True)]
        # the fluctuations' gradients: only the wall-normal derivative of the mean flow is not zero
        squared = sum((row[j] - (slope[i] if j == len(row) - 1 else 0.0)) ** 2
                      for i, row in enumerate(g) for j in range(len(row)))
        stress = [jnp.mean(p * prime[-1], axis=(0, 1)) for p in prime]  # <u_i' v'>

        def volume(profile: jax.Array) -> jax.Array:
            return self._weights() @ profile

        gap = self.box[2]
        if self.drive == "flux":
            gradient = (tau_bottom + tau_top) / gap  # the momentum balance at a held bulk velocity
        else:
            gradient = self.gradient(params) if self.drive == "pressure" else 0.0
        return {"mean_energy": 0.5 * volume(sum(m**2 for m in mean)),
                "fluctuation_energy": 0.5 * self._volume_mean(sum(p**2 for p in prime)),
                "production": -volume(sum(s * d for s, d in zip(stress, slope, strict=True))),
                "dissipation": nu * self._volume_mean(squared),
                "mean_dissipation": nu * volume(sum(d**2 for d in slope)),
                "pressure_work": gradient * volume(mean[0]),
                "wall_work": self.plate_velocity(params) * (tau_bottom - tau_top) / gap}

    def fluctuation_columns(self: Any, state: Any) -> jax.Array:
        """The velocity's fluctuations per periodic mode at each height ``(C, A, B, Ny)``, components as
        :meth:`ChannelFlow.velocity_hat` lists them: the unnormalised spectrum of the velocity on the grid, its
        Chebyshev columns on the Gauss-Lobatto points, the mean mode zero. The grid's velocity, not the state's
        spectrum: a Nyquist mode the state holds unlike a real field's (the continuity solve's i k at k = -N/2) is
        what the grid, and so the profiles and the energies, keep of it."""
        hats = self._forward(self._inverse(jnp.stack(self.velocity_hat(state))))
        return self.basis.backward(jnp.where(self._mean_mode(), 0.0, hats))

    def wall_spectra(self: Any, state: Any, params: Any) -> dict[str, jax.Array]:
        """One-dimensional spectra of the velocity's fluctuations at each height ``(N_a/2 + 1, Ny)``, replicated
        (:mod:`simulator.output.wall_spectra`): ``uu_kx``, ``vv_kx`` (v across the plates) and a box's ``ww_kx``
        (spanwise) along the streamwise wavenumbers, and a box's ``uu_ky``, ``vv_ky``, ``ww_ky`` along the
        spanwise ones. Each mode's |u_hat(k_x, k_s; y_j)|^2 / N^2 (:meth:`fluctuation_columns`) summed over the
        other periodic direction and over +-m, so that the sum over k is the profiles' Reynolds stress at y_j
        (Parseval)."""
        power = jnp.abs(self.fluctuation_columns(state)) ** 2 / self._cells**2  # (C, A, B, Ny): a plane's A is 1
        names = ("uu", "vv") if self.plane else ("uu", "ww", "vv")  # the state's order: along, [spanwise,] across
        out = {}
        for wavenumber, axis in zip(("kx", "ky"), self._axes, strict=False):
            n = self.fft.shape[axis]
            # (C, n, Ny): a box's power summed over the other periodic axis (power's axes 1 and 2)
            line = power[:, 0] if self.plane else jnp.sum(power, axis=2 - axis)
            folded = np.abs(np.fft.fftfreq(n, 1.0 / n)).astype(np.int32)  # mode m's one-sided bin |m|
            bins = jnp.zeros((line.shape[0], n // 2 + 1, line.shape[-1]), line.dtype).at[:, folded].add(line)
            out.update({f"{name}_{wavenumber}": self._replicated(bins[i]) for i, name in enumerate(names)})
        return out
