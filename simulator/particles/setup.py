"""A flow equation made to carry the species of the ``particles`` config section (:class:`.flow.WithParticles`):
the checks a run starts with (the time step against the Stokes drag's stability limit, the grid planes per device an
interpolation or an owned species' halo needs, an owned species' capacity, the methods available here) and each
species' initial positions, placed on the host and laid out over the flow's mesh.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp

from simulator.equations.base import Equation
from simulator.fft import plane
from simulator.fft.particle_slots import check_capacity
from simulator.log import get_logger
from simulator.particles import initial_positions, owned as owning, wrap_bound
from simulator.particles.flow import WithParticles
from simulator.particles.interpolation import METHODS
from simulator.particles.species import Species, too_few_planes


def drag_limit(species: Sequence[Species], scheme: str) -> tuple[float, int | None]:
    """The largest time step at which ``scheme`` integrates the species' Stokes drag stably, and the index of
    the species that sets it (None and inf without inertial species).

    The drag dv/dt = -v/tau_p is integrated explicitly in the scheme's stages, with the flow (no
    integrating factor: one on -v/tau_p alone would keep v bounded but wrong, v ~ (dt/6 tau_p) u for
    classical RK4 at dt >> tau_p, and the coupled position has none). Explicit, it is stable for dt <=
    r tau_p, r the scheme's stability interval on the negative real axis
    (:func:`simulator.time.control.real_stability_limit`); beyond it the particles' velocities grow by
    orders of magnitude per step. So a fixed ``time.dt`` above the limit is refused at start-up
    (:func:`with_particles`), and an adaptive step is bounded by it (:mod:`simulator.run.loop`)."""
    from simulator.time.control import real_stability_limit

    inertial = [(s.tau_p, i) for i, s in enumerate(species) if s.inertial]
    if not inertial:
        return float("inf"), None
    tau_p, i = min(inertial)
    return real_stability_limit(scheme) * tau_p, i


def check_drag(species: Sequence[Species], time: Any) -> None:
    """Refuse a fixed ``time.dt`` (``time`` a run's time section) beyond the drag's stability limit
    (:func:`drag_limit`) in one line (ConfigError); an adaptive step is bounded by it instead."""
    from simulator.errors import ConfigError

    if time.cfl is not None:
        return
    limit, i = drag_limit(species, time.integrator)
    if time.dt > limit:
        s = species[i]
        raise ConfigError(f"particles[{i}].tau_p", s.tau_p, f"time.dt = {time.dt:g} exceeds {limit:.3g}, the "
                          f"stable limit of {time.integrator} on the Stokes drag ({limit / s.tau_p:.4g} tau_p, its "
                          "stability interval on the real axis): lower time.dt, or set time.cfl (the drag then "
                          "bounds every step)", "is too small for the time step")


def with_particles(flow: Equation, species: Sequence[Species], box: Sequence[float], time: Any = None
                   ) -> WithParticles:
    """``flow`` carrying ``species``: their initial positions placed on the host (the same on every
    process) and laid out replicated over the flow's mesh. ``time``: the run's time section; a fixed
    ``time.dt`` beyond the drag's stability limit (:func:`drag_limit`) is refused."""
    from simulator.errors import ConfigError

    if time is not None:
        check_drag(species, time)
    sizes = dict(zip(flow.fft.mesh.axis_names, flow.fft.mesh.devices.shape, strict=True))
    for i, s in enumerate(species):
        method = METHODS[s.interpolation]
        key, value, planes = ((f"particles[{i}].halo", s.halo, method.planes + s.halo) if s.owned
                              else (f"particles[{i}].interpolation", s.interpolation, method.planes))
        instead = too_few_planes(s.halo) if s.owned else f"{method.instead}, or fewer devices"
        for axis, name in enumerate(flow.fft.real_spec()):
            if name is not None and sizes[name] > 1 and flow.fft.shape[axis] // sizes[name] < planes:
                raise ConfigError(key, value, f"needs >= {planes} grid planes per device along "
                                  f"{plane.axis_names(flow.fft.shape)[axis]} "
                                  f"({flow.fft.shape[axis]} over {sizes[name]} devices): use {instead}",
                                  "is not available")
        if s.owned:
            check_capacity(f"particles[{i}].capacity", s.capacity, s.count, flow.fft.devices)
    for name in dict.fromkeys(s.interpolation for s in species):
        method = METHODS[name]
        why = method.unavailable(flow.fft) if method.unavailable is not None else None
        if why:
            i = next(i for i, s in enumerate(species) if s.interpolation == name)
            raise ConfigError(f"particles[{i}].interpolation", name, f"use {method.instead} ({why})",
                              "is not available")
    sharding = flow.fft.replicated_sharding()
    bound = wrap_bound(box, flow.fft.shape, "float64" if flow.dtype == jnp.float64 else "float32")
    start = {}
    for i, s in enumerate(species):
        host, outside = initial_positions(s, box, f"particles[{i}]", bound, plane.holds_plane(flow.fft.shape))
        host = host.astype(flow.dtype)
        if outside:
            get_logger().warning("particles[%d] (%s): %d of the %d positions in %s lie outside the box; wrapped "
                                 "into it", i, s.name, outside, s.count, s.path)
        start[s.name] = jax.make_array_from_callback(host.shape, sharding, lambda idx, h=host: h[idx],
                                                     dtype=host.dtype)
        if s.owned:  # laid out by owner once, here
            start[s.name] = owning.distribute(flow.fft, tuple(float(b) for b in box), s, start[s.name])
    return WithParticles(flow, species, start)
