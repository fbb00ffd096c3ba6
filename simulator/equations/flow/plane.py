"""The planar flows' implementation base: the plane's axes named once, the linear sinks, the CFL speed and the ring
sums (:class:`PlanarFlow`, any planar flow: a vorticity form or another, such as rotating shallow water's
(h, u, v)), and the skeleton of the flows of a stream function (:class:`VorticityFlow`: ``ns2d``, ``boussinesq2d``,
``mhd2d``): the velocity of the vorticity, its forcing, the kinetic energy, enstrophy and their dissipation, the
kinetic spectra and transfers, and the passive scalars (:mod:`simulator.equations.scalars`) they carry. Also the
random field of a chosen spectrum and the enstrophy cascade's dissipative scale. The declarations are
:mod:`.planar` (no JAX); the forcing's pattern on its band (:func:`.plane_forcing.pattern`) is any planar flow's.

Arrays: a plane runs as the box ``(1, Nx, Ny)`` (:mod:`simulator.fft.plane`): spectra are ``k_shape``, the
wavenumbers ``ops.k = (0, kx, ky)``; real fields are ``(1, Nx, Ny)``. The box's axes :data:`X` and :data:`Y` are
named here only: an equation reads ``eq.kx``, ``eq.ky``, ``eq.lengths``, ``eq.xy(c)``, never ``k[1]`` or ``box[2]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, ClassVar

import jax
import jax.numpy as jnp

from simulator.equations import resolution
from simulator.equations.base import Params, SemiLinearEquation
from simulator.equations.flow import plane_forcing
from simulator.equations.flow.velocity import FlowEquation
from simulator.equations.noise import white_noise
from simulator.equations.operators import SpectralOperators
from simulator.equations.scalars import terms as passive
from simulator.observables import spectra

#: the plane's x and y as axes of the box (1, Nx, Ny) it runs as (:mod:`simulator.fft.plane`)
X, Y = 1, 2


class PlanarFlow(FlowEquation, SemiLinearEquation):
    """Base of a planar flow on one FFT backend: ``physics`` a :class:`~.planar.PlanarParams`, ``ops`` its spectral
    operators (wavenumbers ``(0, kx, ky)``). A subclass declares ``info`` and the equation's terms."""

    def operators(self) -> SpectralOperators:
        """The spectral operators, wavenumbers ``(0, kx, ky)``: the plane's forcing is :mod:`.plane_forcing`'s."""
        return SpectralOperators(self.fft, self.box, self.dtype)

    # ---- the plane's axes --------------------------------------------------------------------------------

    @property
    def kx(self) -> jax.Array:
        """The wavenumbers along x, broadcasting against ``k_shape``."""
        return self.ops.k[X]

    @property
    def ky(self) -> jax.Array:
        """The wavenumbers along y, broadcasting against ``k_shape``."""
        return self.ops.k[Y]

    @property
    def mode_numbers(self) -> tuple[jax.Array, jax.Array]:
        """The integer mode numbers (m_x, m_y), broadcasting against ``k_shape``."""
        return self.ops.modes[X], self.ops.modes[Y]

    @property
    def lengths(self) -> tuple[float, float]:
        """The plane's sides (Lx, Ly)."""
        return self.box[X], self.box[Y]

    @staticmethod
    def xy(c: Sequence[jax.Array]) -> tuple[jax.Array, jax.Array]:
        """The plane's coordinates (x, y) of the box's coordinates ``c = (0, x, y)`` (an initial builder's)."""
        return c[X], c[Y]

    def kmax(self) -> float:
        """The 2/3 rule's cutoff (2/3) min pi N_i/L_i over the plane's two axes (the box's one-cell axis left out)."""
        return resolution.dealiased_kmax(self.fft.shape[X:], self.box[X:])

    def perp(self, f_hat: jax.Array) -> tuple[jax.Array, jax.Array]:
        """The in-plane vector (d f/dy, -d f/dx) of a z potential f: i (ky, -kx) f_hat (u of psi, B of A)."""
        return 1j * self.ky * f_hat, -1j * self.kx * f_hat

    def in_box(self, u_hat: jax.Array, v_hat: jax.Array) -> jax.Array:
        """An in-plane vector as the box's three components ``(3, *k_shape)``, (0, u, v) (what particles read)."""
        return self.ops.stack([jnp.zeros_like(u_hat), u_hat, v_hat])

    def as_field(self, u_hat: jax.Array, v_hat: jax.Array) -> jax.Array:
        """An in-plane vector as a snapshot's ``(3, *k_shape)``, (u, v, 0): a vector in ParaView and xarray."""
        return self.ops.stack([u_hat, v_hat, jnp.zeros_like(u_hat)])

    def speed(self, u: jax.Array, v: jax.Array) -> jax.Array:
        """|u|/dx + |v|/dy per point ``(1, Nx, Ny)``: the CFL number's speed, dt times its max."""
        return jnp.abs(u) / self.spacing[X] + jnp.abs(v) / self.spacing[Y]

    # ---- sinks, forcing and ring sums ----------------------------------------------------------------------

    def damping(self, params: Params, diffusivity: str = "viscosity", hyper: str = "hyperviscosity",
                flow: bool = True) -> jax.Array:
        """-L per mode of a field: ``diffusivity`` k^2 + ``hyper`` k^(2p), and for the flow (``flow``) the
        friction alpha and the hypoviscosity nu_m k^(-2m), each term only where the structure has it."""
        k2 = self.ops.k2
        out = params[diffusivity] * k2
        if flow:
            out = out + params["friction"]
        if self.physics.hyperviscous:
            out = out + params[hyper] * k2 ** self.physics.hyperviscosity_order
        if flow and self.physics.hypoviscous:
            out = out + params["hypoviscosity"] * self.ops.inv_k2 ** self.physics.hypoviscosity_order
        return out

    def exp_linear(self, state: jax.Array, tau: jax.Array, params: Params) -> jax.Array:
        """exp(L tau) state, mode by mode."""
        return state * jnp.exp(self.linear(params) * tau)

    @property
    def norm(self) -> jax.Array:
        """The Parseval weight of a mode in a ring sum: the half spectrum's weight over N^2."""
        return self.ops.weight / float(self.fft.size) ** 2

    def shell(self, power: jax.Array) -> jax.Array:
        """The ring sums of ``power`` (``k_shape``) over |k| (:func:`~simulator.observables.spectra.shell_sum`)."""
        return spectra.shell_sum(power, self.ops.k, self.fft.shape, self.box)


class VorticityFlow(passive.CarriesScalars, PlanarFlow):
    """Base of a planar flow of a stream function carrying passive scalars: the state is the spectra of the
    equation's own fields (``info.state_fields`` but ``scalar``; row 0 the vorticity), then the n scalars',
    ``(m + n, *k_shape)``; the velocity u = (d psi/dy, -d psi/dx), psi_hat = omega_hat / k^2; the forcing acts on the
    vorticity. The parameters are a :class:`~.planar.PlanarParams` with a ``scalars`` list."""

    #: the ``physics.*`` keys of the diffusivity and the hyperdiffusivity of each own field after the vorticity
    diffusive: ClassVar[tuple[tuple[str, str], ...]] = ()

    @property
    def rows(self) -> int:
        """m, the number of the equation's own fields in the state (structure)."""
        return sum(1 for name in self.info.state_fields if name != "scalar")

    def scalars_of(self, state: jax.Array) -> jax.Array | None:
        """The scalars' spectra ``(n, *k_shape)``, or None without any."""
        return state[self.rows:] if self.n_scalars else None

    def gradients(self, params: Params) -> list[dict[str, jax.Array]]:
        """The scalars' traced parameters with the mean gradient (Gx, Gy, 0) as the box's (0, Gx, Gy)."""
        return [{**s, "mean_gradient": jnp.roll(s["mean_gradient"], 1)} for s in params["scalars"]]

    def linear_rows(self, rates: Sequence[jax.Array], params: Params) -> jax.Array:
        """L of the state: -``rates`` (-L of each own field, ``k_shape``), then -kappa_i k^2 of scalar i;
        ``k_shape`` for a single field without scalars, else ``(m + n, *k_shape)``."""
        if len(rates) == 1 and not self.n_scalars:
            return -rates[0]
        rows = self.ops.stack(list(jnp.broadcast_arrays(*rates)))
        if not self.n_scalars:
            return -rows
        kappa = passive.diffusivities(params["scalars"])
        return -self.ops.concatenate([rows, kappa[:, None, None, None] * self.ops.k2])

    def rates(self, params: Params) -> tuple[jax.Array, ...]:
        """-L per mode of each of the equation's own fields, ``k_shape``: the vorticity's sinks, nu k^2 + alpha +
        nu_p k^(2p) + nu_m k^(-2m), then each further field's, kappa k^2 + kappa_p k^(2p) by its keys in
        :attr:`diffusive` (:meth:`~PlanarFlow.damping`)."""
        fields = (self.damping(params, kappa, hyper, flow=False) for kappa, hyper in self.diffusive)
        return (self.damping(params), *fields)

    def linear(self, params: Params) -> jax.Array:
        """The diagonal L of the state, the own fields' (:meth:`rates`) then the scalars' (:meth:`linear_rows`)."""
        return self.linear_rows(list(self.rates(params)), params)

    def transport(self, hats: list[jax.Array], state: jax.Array,
                  products: Callable[[jax.Array], list[jax.Array]]) -> tuple[jax.Array, jax.Array | None]:
        """The equation's quadratic products and the scalars' advection in one batched inverse transform of
        ``hats`` (spectra, u_hat and v_hat first) and the scalars, and one batched forward transform of
        ``products(real)`` (real-space products of the ``(len(hats) + n, 1, Nx, Ny)`` fields) and the fluxes u theta_i,
        v theta_i: (the products' spectra ``(p, *k_shape)``, undealiased; -div(u theta_i) dealiased
        ``(n, *k_shape)``, or None without scalars)."""
        n, first = self.n_scalars, len(hats)
        theta_hat = self.scalars_of(state)
        real = self.fft.irfft(self.ops.stack(hats + [theta_hat[i] for i in range(n)]))
        own = products(real)
        u, v = real[0], real[1]
        flux = self.fft.rfft(jnp.stack(own + [f for q in real[first:] for f in (u * q, v * q)]))
        if not n:
            return flux, None
        p = len(own)
        div = [self.kx * flux[p + 2 * i] + self.ky * flux[p + 2 * i + 1] for i in range(n)]
        return flux[:p], -1j * self.ops.dealias * self.ops.stack(div)

    def with_scalars(self, own: jax.Array, advected: jax.Array | None, state: jax.Array, params: Params
                     ) -> jax.Array:
        """The right-hand side ``own`` of the equation's fields ``(m, *k_shape)`` followed by the scalars',
        -div(u theta_i) - u . G_i (``advected`` the first term, from :meth:`transport`)."""
        if advected is None:
            return own
        source = passive.mean_gradient_source(self.ops, self.velocity_spectrum(state), self.gradients(params))
        return self.ops.concatenate([own, advected + source])

    def state_from(self, fields: Mapping[str, jax.Array]) -> jax.Array:
        """The dealiased spectra of the own fields (each ``(1, Nx, Ny)``) and, with scalars, of ``scalar``
        ``(n, 1, Nx, Ny)``: :meth:`from_fields`."""
        real = jnp.stack([fields[name] for name in self.info.state_fields if name != "scalar"])
        if self.n_scalars:
            real = jnp.concatenate([real, fields["scalar"]])
        return self.ops.dealias * self.fft.rfft(real.astype(self.dtype))

    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> jax.Array:
        """The state of the real-space fields (:meth:`state_from`)."""
        return self.state_from(fields)

    def scalar_diagnostics(self, state: jax.Array, params: Params, eta: jax.Array) -> dict[str, jax.Array]:
        """The scalars' diagnostics (:func:`~simulator.equations.scalars.terms.diagnostics`) and their resolution
        in a flow whose smallest scale is ``eta``; {} without scalars."""
        theta_hat = self.scalars_of(state)
        if theta_hat is None:
            return {}
        scalars = self.gradients(params)
        # the Batchelor/Obukhov-Corrsin scales of a flow whose smallest scale is eta
        return {**passive.diagnostics(self.ops, self.velocity_spectrum(state), theta_hat, scalars),
                **passive.resolution_diagnostics(self.kmax(), eta, params["viscosity"], scalars)}

    def scalar_spectra(self, state: jax.Array, advected: jax.Array | None, params: Params) -> dict[str, jax.Array]:
        """The scalars' spectra (:func:`~simulator.equations.scalars.terms.spectra`); {} without scalars."""
        theta_hat = self.scalars_of(state)
        if theta_hat is None:
            return {}
        return passive.spectra(self.ops, self.velocity_spectrum(state), theta_hat, advected, self.gradients(params),
                               self.shell)

    def velocity_hat(self, omega_hat: jax.Array) -> tuple[jax.Array, jax.Array]:
        """(u_hat, v_hat) = i (ky, -kx) psi_hat, psi_hat = omega_hat / k^2 (0 at k = 0)."""
        return self.perp(omega_hat * self.ops.inv_k2)

    def velocity_spectrum(self, state: jax.Array) -> jax.Array:
        """The velocity as the box's three components ``(3, *k_shape)``: (0, u, v) (what particles read)."""
        return self.in_box(*self.velocity_hat(state[0]))

    def flow_fields(self) -> dict[str, Callable[[jax.Array], jax.Array]]:
        """The velocity ``(3, ...)`` (u, v, 0), the stream function and the scalars, as spectra of a state."""
        out = {"velocity": lambda s: self.as_field(*self.velocity_hat(s[0])),
               "stream_function": lambda s: s[0] * self.ops.inv_k2}
        if self.n_scalars:
            out["scalar"] = lambda s: s[self.rows:]
        return out

    def settle(self, state: jax.Array, t: jax.Array, dt: jax.Array, params: Params) -> jax.Array:
        """After a whole step: the random forcing's kick of the vorticity (:func:`.plane_forcing.kick`), or the
        state as it is."""
        return plane_forcing.kick(self, state, t, dt, params) if self.physics.forcing == "random" else state

    def forced(self, terms: jax.Array, params: Params, row: int | None = None) -> jax.Array:
        """A right-hand side with the Kolmogorov forcing's term, if any: ``terms`` the vorticity's (``k_shape``),
        or with ``row`` the state's ``(n, *k_shape)`` whose row ``row`` is the vorticity's."""
        f_hat = plane_forcing.steady(self, params)
        if f_hat is None:
            return terms
        return terms + f_hat if row is None else terms.at[row].add(f_hat)

    def flow_diagnostics(self, omega_hat: jax.Array, rate: jax.Array, names: Sequence[str], params: Params
                         ) -> dict[str, jax.Array]:
        """The kinetic energy, the enstrophy and the kinetic energy's dissipation by ``rate`` (-L of the vorticity)
        as Parseval means, named ``names``, and a forced run's injection (:func:`.plane_forcing.injection`)."""
        ops = self.ops
        power = jnp.abs(omega_hat) ** 2
        energy, enstrophy, dissipation = names
        return {energy: 0.5 * ops.mean(power * ops.inv_k2), enstrophy: 0.5 * ops.mean(power),
                dissipation: ops.mean(rate * power * ops.inv_k2),
                **plane_forcing.injection(self, omega_hat, params)}

    def flow_spectra(self, omega_hat: jax.Array, n_omega: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Ring sums of the kinetic energy E(k), its transfer by the vorticity's nonlinear term ``n_omega``
        (without the forcing) and, with the Kolmogorov forcing, its injection."""
        ops = self.ops
        out = {"energy": self.shell(0.5 * self.norm * jnp.abs(omega_hat) ** 2 * ops.inv_k2),
               "transfer_energy": self.shell(jnp.real(jnp.conj(omega_hat) * n_omega) * self.norm * ops.inv_k2)}
        f_hat = plane_forcing.steady(self, params)
        if f_hat is not None:
            out["injection_energy"] = self.shell(self.norm * jnp.real(jnp.conj(omega_hat) * f_hat) * ops.inv_k2)
        return out


def random_spectrum(eq: PlanarFlow, seed: jax.Array, k_peak: Any, slope: Any) -> jax.Array:
    """A random field's dealiased spectrum: white noise drawn in real space from ``seed``
    (:func:`~simulator.equations.noise.white_noise`: the same on any layout), shaped to |f_hat|^2 ~ m^(s+1)
    exp(-(s/2) (m/k_peak)^2), m = |k| max(L)/2pi: as a vorticity, a ring of radius m holding m modes and |u_hat|^2 =
    |f_hat|^2/k^2, its energy spectrum is E(m) ~ m^s exp(-(s/2) (m/k_peak)^2), peaked at k_peak. Unnormalised."""
    ops = eq.ops
    m = jnp.sqrt(ops.k2) * (max(eq.box) / (2 * jnp.pi))
    shape = m ** ((slope + 1) / 2) * jnp.exp(-(slope / 4) * (m / k_peak) ** 2)
    return ops.dealias * shape * eq.fft.rfft(white_noise(eq.fft, jax.random.key(seed), eq.dtype))


def enstrophy_scale(params: Params, physics: Any, chi: jax.Array) -> jax.Array:
    """The smallest scale of the enstrophy cascade dissipating ``chi``: (nu^3/chi)^(1/6) (Kraichnan 1967), or with
    hyperviscosity the larger of it and (nu_p^3/chi)^(1/(6p)), each formed without underflow in float32
    (:func:`~simulator.equations.resolution.cube_root_scale`); chi = 0 gives a large finite scale, not inf."""
    eta = resolution.cube_root_scale(params["viscosity"], chi, 1 / 6, jnp)
    if physics.hyperviscous:
        eta = jnp.maximum(eta, hyperdiffusive_scale(params["hyperviscosity"], chi, physics.hyperviscosity_order))
    return eta


def hyperdiffusive_scale(coefficient: jax.Array, chi: jax.Array, order: int) -> jax.Array:
    """The enstrophy cascade's end (c^3/chi)^(1/(6p)) under a hyperdiffusion c (-lap)^p (p = ``order``)."""
    return resolution.cube_root_scale(coefficient, chi, 1 / (6 * order), jnp)
