"""The toy equation's implementation: all of it is the linear operator (exact integrating factor)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar, final

import jax
import jax.numpy as jnp

from simulator.equations.base import SemiLinearEquation
from simulator.observables import spectra

from toy_equation import INFO


@final
class AdvectionDiffusion(SemiLinearEquation):
    info = INFO
    space = "spectral"
    _LEAVES: ClassVar[tuple[str, ...]] = ("k", "weight")

    def __init__(self, fft, box, dtype, physics=None):
        super().__init__(fft, box, dtype, physics or INFO.params())
        self.k = tuple(fft.wavenumbers(self.box, real=True, dtype=self.dtype))
        self.weight = fft.parseval_weight(real=True, dtype=self.dtype)

    def linear(self, params):
        kx, ky, kz = self.k
        c = (params["velocity_x"], params["velocity_y"], params["velocity_z"])
        return -1j * (c[0] * kx + c[1] * ky + c[2] * kz) - params["diffusivity"] * (kx**2 + ky**2 + kz**2)

    def nonlinear(self, u, t, params):
        return jnp.zeros_like(u)

    def from_fields(self, fields: Mapping[str, jax.Array], params):
        return self.fft.rfft(fields["theta"].astype(self.dtype))

    def fields(self, state, params):
        return {"theta": self.fft.irfft(state)}

    def diagnostics(self, state, dt, params):
        variance = jnp.sum(self.weight * jnp.abs(state) ** 2) / float(self.fft.size) ** 2
        speed = sum(jnp.abs(params[f"velocity_{a}"]) / h for a, h in zip("xyz", self.spacing, strict=True))
        return {"variance": variance, "cfl": dt * speed}

    def spectra(self, state, params):
        power = self.weight * jnp.abs(state) ** 2 / float(self.fft.size) ** 2
        return {"variance": spectra.shell_sum(power, self.k, self.fft.shape, self.box)}


def _wave(eq, c, ic, params):
    phase = sum(2 * jnp.pi * m / length * x for m, length, x in zip(ic.modes, eq.box, c, strict=True))
    return {"theta": jnp.broadcast_to(ic.amplitude * jnp.sin(phase), eq.fft.shape)}


AdvectionDiffusion.builders = {"wave": _wave}
