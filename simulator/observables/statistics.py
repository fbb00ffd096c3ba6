"""Eulerian small-scale statistics of a flow, computed distributed at output cadence (JAX).

What turbulence papers report beside the spectra (Pope, Turbulent Flows, 2000, §6.2-6.5; Sreenivasan &
Antonia 1997, Annu. Rev. Fluid Mech. 29, 435; Ishihara, Gotoh & Kaneda 2009, Annu. Rev. Fluid Mech. 41,
165), for any equation with a ``velocity`` field (Navier-Stokes with or without passive scalars,
Boussinesq, MHD, and every planar flow):

* the skewness <s^3>/<s^2>^(3/2) and flatness <s^4>/<s^2>^2 of each longitudinal derivative
  s = du/dx, dv/dy, dw/dz, and of the three pooled (moments averaged over the three directions, then
  the ratio), the derivatives taken spectrally (i k_j u_hat_j, inverse FFT);
* histograms (PDFs) of the longitudinal derivatives over fixed bins in units of their rms, and of the
  longitudinal increments du(r) = u_a(x + r e_a) - u_a(x) at chosen separations, each axis in units of
  its own rms increment, pooled over the axes;
* longitudinal and transverse structure functions S_p(r) = <|du|^p> along each axis at separations of
  r grid cells (the transverse one averages the two components normal to the axis), and the signed
  longitudinal third moment <du_L^3> (the 4/5 law: -4/5 eps r in the inertial range);
* with passive scalars, the skewness and flatness of each gradient component d theta/dx_j, pooled, and
  of the gradient along the scalar's mean gradient G (NaN where G = 0).

Layout: the velocity ``(3, Nx, Ny, Nz)`` and scalars ``(n, Nx, Ny, Nz)`` are real-space arrays in the FFT
backend's real layout (sharded along one or two of x, y, z); spectra in its k-space layout. Everything is
a mean over the box: jnp reductions of sharded arrays inside jit, which XLA completes with an all-reduce
of the few numbers each device summed; histograms are scatter-adds into short replicated vectors (as the
shell sums of :mod:`simulator.observables.spectra`). No field is gathered.

Increments: the field shifted by r cells along an axis is built by rolling it one cell at a time in a
``fori_loop`` (r = 1, 2, ..., r_max), or, for a sparse set of separations, by a static roll of each gap.
On a sharded axis a roll by g cells compiles to a collective-permute of g planes per device (checked in
the tests from the HLO), so all separations up to N/2 move half a field in total; the spectral
alternative (multiply by e^{i k r dx} and transform back) is exact too but costs a whole distributed
inverse FFT (all-to-alls of the whole field) per separation and axis. Rolling is also exact (no
round-off), so the increments are the same numbers on any device layout. One velocity component is
shifted at a time, so the program's peak memory is about that of a chunk of time steps (64^3 on 2 CPU
devices: 22 one-component fields per device against the RK4 chunk's 21; 24 against 25 with a scalar).

A plane (:mod:`simulator.fft.plane`) runs as the box ``(1, Nx, Ny)`` with the velocity ``(u, v, 0)``: its
statistics are over its own two axes x and y (the box's second and third, :data:`PLANE`): the derivatives du/dx,
dv/dy pooled over the two, the vorticity's skewness and flatness (omega = dv/dx - du/dy, the plane's one
component; 2D turbulence's moments beside the derivatives'), structure functions along x and y (the transverse one
is the other in-plane component), the increment PDFs pooled over x and y; the one-cell axis has no increments.

The velocity and scalars are taken from the equation's ``fields`` (its public contract; inside jit the
fields not used, e.g. the vorticity, are never computed) and transformed forward once for the gradients.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

#: derivative names of the longitudinal gradients, by axis
DERIVATIVES = ("dudx", "dvdy", "dwdz")
#: the axes the statistics are over, each (name, velocity component, axis of a component's (Nx, Ny, Nz) array and of
#: the wavenumbers ``ops.k``): a box's x, y, z; a plane's x and y, the box (1, Nx, Ny)'s second and third axes with
#: the components u and v of its velocity (u, v, 0)
BOX = (("x", 0, 0), ("y", 1, 1), ("z", 2, 2))
PLANE = (("x", 0, 1), ("y", 1, 2))


@dataclass(frozen=True)
class StatisticsLayout:
    """The static structure of the statistics (hashable: part of the compiled program).

    ``orders``: the p of S_p; ``separations``: per axis of the grid (a box's x, y, z; a plane's x, y), the
    separations in cells (ascending, each 1 <= r <= N_a/2); ``edges``: histogram bin edges in units of the rms
    (ascending); ``pdf_separations``: the separations (cells) of the increment PDFs.
    """

    orders: tuple[int, ...]
    separations: tuple[tuple[int, ...], ...]
    edges: tuple[float, ...]
    pdf_separations: tuple[int, ...]

    @property
    def bins(self) -> int:
        return len(self.edges) - 1

    @property
    def plane(self) -> bool:
        """Whether the layout is a plane's (separations along two axes)."""
        return len(self.separations) == 2

    @property
    def frame(self) -> tuple[tuple[str, int, int], ...]:
        """The axes the statistics are over (:data:`BOX` or :data:`PLANE`)."""
        return PLANE if self.plane else BOX


def layout(shape: Sequence[int], orders: Sequence[int], separations: Sequence[int] | None, bins: int,
           extent: float, pdf_separations: Sequence[int] | None) -> StatisticsLayout:
    """The layout of a grid of ``shape`` (a box's (Nx, Ny, Nz) or a plane's (Nx, Ny), as the config gives it)
    from the ``output.statistics`` keys (validated by the config): ``separations`` None = every r = 1..N_a/2 on
    each axis; ``pdf_separations`` None = 1, N/8 and N/2 of the smallest axis N; ``bins`` equal bins over
    [-extent, extent] rms."""
    if separations is None:
        per_axis = tuple(tuple(range(1, n // 2 + 1)) for n in shape)
    else:
        per_axis = tuple(tuple(sorted(set(int(r) for r in separations))) for _ in shape)
    if pdf_separations is None:
        n = min(shape)
        pdf_separations = sorted({1, max(1, n // 8), n // 2})
    edges = tuple(float(e) for e in np.linspace(-extent, extent, bins + 1))
    return StatisticsLayout(tuple(int(p) for p in orders), per_axis, edges, tuple(int(r) for r in pdf_separations))


def _moments(x: jax.Array, axes: tuple[int, ...]) -> tuple[jax.Array, jax.Array, jax.Array]:
    """<x^2>, <x^3>, <x^4> over ``axes`` (box means: mesh reductions)."""
    x2 = x * x
    return jnp.mean(x2, axis=axes), jnp.mean(x2 * x, axis=axes), jnp.mean(x2 * x2, axis=axes)


def _skew_flat(m2: jax.Array, m3: jax.Array, m4: jax.Array) -> tuple[jax.Array, jax.Array]:
    return m3 / m2**1.5, m4 / m2**2


def histogram(x: jax.Array, scale: jax.Array, edges: Sequence[float]) -> jax.Array:
    """Counts of ``x / scale`` in the equal bins of ``edges`` (values outside are not counted), as ``x``'s
    float dtype: a scatter-add into a replicated vector, each device adding its own points (then one
    all-reduce). Counted in int32 (a float32 count stops growing at 2^24, which one bin of a 256^3 field
    passes): exact while a bin holds fewer than 2^31 points of ``x`` (any bin of a field up to 1290^3; call
    it per component of a vector)."""
    lo, hi, bins = float(edges[0]), float(edges[-1]), len(edges) - 1
    z = (x / scale - lo) * (bins / (hi - lo))
    inside = (z >= 0) & (z < bins)
    index = jnp.clip(jnp.floor(jnp.where(inside, z, 0.0)).astype(jnp.int32), 0, bins - 1)
    return jnp.zeros(bins, jnp.int32).at[index].add(inside.astype(jnp.int32)).astype(x.dtype)


def flow_fields(eq: Any, state: Any, params: Mapping[str, Any]) -> tuple[jax.Array, jax.Array | None]:
    """(velocity ``(3, Nx, Ny, Nz)``, scalars ``(n, Nx, Ny, Nz)`` or None) of a flow equation's state, in
    real space; a ValueError for an equation without a velocity."""
    fields = eq.fields(state, params)
    if "velocity" not in fields:
        raise ValueError(f"{eq.info.name} has no velocity field: its flow statistics are undefined")
    return fields["velocity"], fields.get("scalar")


def _spectral_gradient(eq: Any, f_hat: jax.Array, frame: Sequence[tuple[str, int, int]],
                       vector: bool = False) -> jax.Array:
    """Per axis of ``frame``: with ``vector``, the longitudinal derivative d f_c / d x_a of the vector spectrum
    ``f_hat`` (its component c along the axis a), else the gradient of the scalar spectrum ``f_hat``; real space
    ``(len(frame), *real shape)``."""
    k = eq.ops.k
    if vector:
        return eq.fft.irfft(1j * eq.ops.stack([k[a] * f_hat[c] for _, c, a in frame]))
    return eq.fft.irfft(1j * eq.ops.stack([k[a] * f_hat for _, _, a in frame]))


def _derivative_statistics(eq: Any, u: jax.Array, lay: StatisticsLayout) -> dict[str, jax.Array]:
    frame = lay.frame
    u_hat = eq.fft.rfft(u)
    d = _spectral_gradient(eq, u_hat, frame, vector=True)  # (axes, Nx, Ny, Nz): du/dx, dv/dy(, dw/dz)
    m2, m3, m4 = _moments(d, (1, 2, 3))
    skew, flat = _skew_flat(m2, m3, m4)
    out = {}
    for a, name in enumerate(DERIVATIVES[:len(frame)]):
        out[f"skewness_{name}"], out[f"flatness_{name}"] = skew[a], flat[a]
    pooled = [jnp.mean(m) for m in (m2, m3, m4)]
    out["skewness"], out["flatness"] = _skew_flat(*pooled)
    out["derivative_variance"] = pooled[0]
    if lay.plane:  # the plane's vorticity omega = dv/dx - du/dy (its one component, normal to it)
        (_, u_c, x), (_, v_c, y) = frame
        omega = eq.fft.irfft(1j * (eq.ops.k[x] * u_hat[v_c] - eq.ops.k[y] * u_hat[u_c]))
        out["skewness_vorticity"], out["flatness_vorticity"] = _skew_flat(*_moments(omega, (0, 1, 2)))
    counts = sum(histogram(d[a], jnp.sqrt(pooled[0]), lay.edges) for a in range(len(frame)))
    out["pdf_dudx"] = counts / (d.size * (lay.edges[1] - lay.edges[0]))
    out["pdf_dudx_outside"] = (d.size - jnp.sum(counts)) / d.size  # exact: counts are integers
    return out


def _scalar_statistics(eq: Any, theta: jax.Array, scalars: Sequence[Mapping[str, jax.Array]],
                       frame: Sequence[tuple[str, int, int]]) -> dict[str, jax.Array]:
    """Per scalar i: ``scalar{i}_gradient_{skewness,flatness}_<a>`` for each axis a of ``frame``, pooled
    ``..._{skewness,flatness}``, and along the mean gradient ``..._parallel`` (NaN without one; its components
    as the velocity's: a plane's (Gx, Gy, 0))."""
    out = {}
    for i, s in enumerate(scalars):
        g = _spectral_gradient(eq, eq.fft.rfft(theta[i]), frame)  # (axes, Nx, Ny, Nz): one scalar at a time
        m2, m3, m4 = _moments(g, (1, 2, 3))
        skew, flat = _skew_flat(m2, m3, m4)
        name = f"scalar{i}_gradient"
        for a, (axis, _, _) in enumerate(frame):
            out[f"{name}_skewness_{axis}"], out[f"{name}_flatness_{axis}"] = skew[a], flat[a]
        out[f"{name}_skewness"], out[f"{name}_flatness"] = _skew_flat(*(jnp.mean(m) for m in (m2, m3, m4)))
        G = s["mean_gradient"]
        norm = jnp.sqrt(jnp.sum(G**2))
        along = sum(g[a] * G[c] for a, (_, c, _) in enumerate(frame)) / jnp.where(norm > 0, norm, 1.0)
        ps, pf = _skew_flat(*_moments(along, (0, 1, 2)))
        out[f"{name}_skewness_parallel"] = jnp.where(norm > 0, ps, jnp.nan)
        out[f"{name}_flatness_parallel"] = jnp.where(norm > 0, pf, jnp.nan)
    return out


def _increment_pdf(du: jax.Array, edges: Sequence[float]) -> jax.Array:
    rms = jnp.sqrt(jnp.mean(du**2))
    return histogram(du, jnp.where(rms > 0, rms, 1.0), edges)


def _component_increments(f: jax.Array, axis: int, wanted: list[int], orders: Sequence[int],
                          pdf_separations: Sequence[int], edges: Sequence[float]
                          ) -> tuple[jax.Array, jax.Array, jax.Array]:
    """For one component ``f`` ``(Nx, Ny, Nz)`` and its increments df(r) = f(x + r e_axis) - f(x) at the
    separations ``wanted`` (ascending): (<|df|^p> ``(len(wanted), orders)``, <df^3> ``(len(wanted),)``,
    histograms of df/rms(df) ``(len(pdf_separations), bins)`` at those of ``pdf_separations`` wanted).

    When ``wanted`` is every r = 1..r_max, the field is shifted one cell per iteration of a ``fori_loop``
    (one small program; the PDFs' separations picked by a ``cond``); otherwise (a sparse set, e.g.
    log-spaced) by static rolls of each gap, unrolled, so a few separations cost a few shifts however far
    apart. One component at a time: the loop holds one shifted field, not three."""
    moments = jnp.zeros((len(wanted), len(orders)), f.dtype)
    signed = jnp.zeros(len(wanted), f.dtype)
    pdf = jnp.zeros((len(pdf_separations), len(edges) - 1), f.dtype)

    def measure(shifted: jax.Array, row: Any, moments: jax.Array, signed: jax.Array) -> tuple[jax.Array, jax.Array]:
        d = shifted - f
        return (moments.at[row].set(jnp.stack([jnp.mean(jnp.abs(d) ** p) for p in orders])),
                signed.at[row].set(jnp.mean(d**3)))

    if wanted == list(range(1, wanted[-1] + 1)):
        slot = np.full(wanted[-1] + 1, -1, np.int32)  # which PDF (if any) separation r fills
        for j, r in enumerate(pdf_separations):
            if r <= wanted[-1]:
                slot[r] = j
        slot = jnp.asarray(slot)

        def body(r, carry):
            shifted, moments, signed, pdf = carry
            shifted = jnp.roll(shifted, -1, axis=axis)  # f(x + r e_axis): one plane moves per device
            moments, signed = measure(shifted, r - 1, moments, signed)
            if pdf_separations:
                pdf = jax.lax.cond(slot[r] >= 0, lambda p: p.at[slot[r]].add(_increment_pdf(shifted - f, edges)),
                                   lambda p: p, pdf)
            return shifted, moments, signed, pdf

        _, moments, signed, pdf = jax.lax.fori_loop(1, wanted[-1] + 1, body, (f, moments, signed, pdf))
        return moments, signed, pdf
    shifted, previous = f, 0
    for i, r in enumerate(wanted):
        shifted = jnp.roll(shifted, previous - r, axis=axis)  # by the gap: r - previous planes move
        previous = r
        moments, signed = measure(shifted, i, moments, signed)
        if r in pdf_separations:
            pdf = pdf.at[list(pdf_separations).index(r)].add(_increment_pdf(shifted - f, edges))
    return moments, signed, pdf


def _increment_statistics(u: jax.Array, lay: StatisticsLayout) -> dict[str, jax.Array]:
    """Structure functions along each axis (longitudinal: the component along it; transverse: the mean of
    the others of the frame, normal to it: a box's two, a plane's one), and the PDFs of the longitudinal
    increments, pooled over the axes."""
    out = {}
    frame = lay.frame
    pdf = jnp.zeros((len(lay.pdf_separations), lay.bins), u.dtype)
    for (name, c, axis), seps in zip(frame, lay.separations, strict=True):
        half = u.shape[axis + 1] // 2
        wanted = sorted({*seps, *(r for r in lay.pdf_separations if r <= half)})
        if not wanted:
            continue
        longi, signed, counts = _component_increments(u[c], axis, wanted, lay.orders, lay.pdf_separations,
                                                      lay.edges)
        pdf = pdf + counts
        if not seps:
            continue
        trans = sum(_component_increments(u[b], axis, list(seps), lay.orders, (), lay.edges)[0]
                    for _, b, _ in frame if b != c) / (len(frame) - 1)
        index = np.asarray([wanted.index(r) for r in seps])
        out[f"structure_longitudinal_{name}"] = longi[index].T  # (orders, separations)
        out[f"structure_transverse_{name}"] = trans.T
        out[f"structure_signed3_{name}"] = signed[index]
    # each axis that reaches a separation contributes its N^3 (a plane's Nx Ny) points to its PDF
    reach = np.asarray([sum(r <= u.shape[axis + 1] // 2 for _, _, axis in frame) for r in lay.pdf_separations],
                       np.float64)
    points = jnp.asarray(np.maximum(reach, 1.0) * np.prod(u.shape[1:]), u.dtype)[:, None]
    out["pdf_increment"] = pdf / (points * (lay.edges[1] - lay.edges[0]))
    out["pdf_increment_outside"] = (points[:, 0] - jnp.sum(pdf, axis=1)) / points[:, 0]
    return out


def statistics(eq: Any, state: Any, params: Mapping[str, Any], lay: StatisticsLayout) -> dict[str, jax.Array]:
    """Every statistic of the module docstring for one state (replicated scalars and short vectors)."""
    u, theta = flow_fields(eq, state, params)
    out = _derivative_statistics(eq, u, lay)
    out.update(_increment_statistics(u, lay))
    if theta is not None:
        out.update(_scalar_statistics(eq, theta, params["scalars"], lay.frame))
    return out


def layout_of(cfg: Any) -> StatisticsLayout:
    """The statistics layout of a run of ``cfg`` (its grid and ``output.statistics``)."""
    section = cfg.output.section("statistics")
    return layout(cfg.grid.shape, section.orders, section.separations, section.pdf_bins, section.pdf_range,
                  section.pdf_separations)


def program(sim: Any, eq: Any, state: Any, params: Mapping[str, Any], t: Any, dt: Any) -> dict[str, jax.Array]:
    """The ``statistics`` output kind's device program (:mod:`simulator.output.statistics`): :func:`statistics`
    of the equation at run time t (see :meth:`simulator.equations.base.Equation.at`), in the layout of the
    run's ``output.statistics``."""
    return statistics(eq.at(t), state, params, layout_of(sim.cfg))
