"""A spectrum evaluated at arbitrary points, without gathering it: the spectrally exact interpolation.

For a real field f with spectrum f_hat (NumPy's ``"backward"`` normalisation, :mod:`simulator.fft.base`)
the trigonometric interpolant at a point x is

    f(x) = Re( sum_k w_k f_hat_k exp(i k . x) ) / (Nx Ny Nz)

over the modes the backend stores: for a half spectrum (rfft along z, Nyquist plane dropped) w_k = 2
on the kz > 0 planes, which stand for themselves and their conjugates, and 1 on kz = 0; for a full
spectrum (jaxdecomp) w_k = 1. These are exactly the Parseval weights
(:meth:`simulator.fft.base.FFTBackend.parseval_weight`). On the grid points it reproduces the field
to round-off; between them it is the band-limited interpolant itself (no interpolation error for a
dealiased field, whose Nyquist modes are zero). Boyd, Chebyshev and Fourier Spectral Methods (2001),
§2.4; for particle tracking in DNS, Yeung & Pope 1988 (J. Comput. Phys. 79, 373) compared exactly
this sum with local polynomial interpolation.

Distribution: the points (``(Np, 3)``, every device holds all of them: fine up to ~1e6 particles)
are replicated; the spectrum stays sharded in the backend's k-space layout. Inside ``shard_map``
each device sums over its own block of modes for every point, and the partial sums are added with
one ``psum`` over the whole mesh: Np x batch numbers per device, whatever the grid. The sum is
separable: per chunk of C points it contracts the last spectral axis first (a GEMM of the local block
``(batch * n0 * n1, n2)`` by the phases ``(n2, C)``), then the middle axis, then the first, so the cost
is ~ batch * n0 * n1 * n2 * Np complex multiply-adds (the direct sum's, done as matrix products) and
the memory one chunk's ``batch * n0 * n1 * C`` partial sums. It is the exact reference. The same sum
by a type-2 NUFFT of each device's block (``method="nufft"``, FINUFFT through jax-finufft, an optional
dependency, CPU) costs O(n log n) per block plus O(w^3) per point (w ~ 16 at 1e-14) instead.

Differentiable in forward and reverse mode (in the spectrum and in the points: the phases are
ordinary JAX arithmetic, the psum transposes to itself) and batched under ``jax.vmap``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from simulator.fft.kernels import implementation, threads_for
from simulator.fft.plane import axis_names
from simulator.fft.stencils import STENCILS
from simulator.fft.window import Block, gather

#: complex partial sums held per chunk of points (batch * n0 * n1 * C): bounds the chunk's memory
CHUNK_ELEMENTS = 1 << 22


def _vector_spec(fft, spectral_axis: int, size: int) -> PartitionSpec:
    """The PartitionSpec of a broadcasting vector along ``spectral_axis`` (as the backend builds them)."""
    spec: list[str | None] = [None, None, None]
    if size > 1:
        spec[spectral_axis] = fft.spectral_spec()[spectral_axis]
    return PartitionSpec(*spec)


def chunk_size(batch: int, local_shape: Sequence[int], n_points: int) -> int:
    """Points per chunk so that ``batch * n0 * n1 * C`` complex partial sums fit :data:`CHUNK_ELEMENTS`."""
    per_point = max(1, batch * int(local_shape[0]) * int(local_shape[1]))
    return max(1, min(n_points, CHUNK_ELEMENTS // per_point))


def _local_sum(perm: tuple[int, int, int], axes: tuple[str, ...], spectrum: jax.Array, k0: jax.Array,
               k1: jax.Array, k2: jax.Array, weight: jax.Array, points: jax.Array) -> jax.Array:
    """One device's partial sums: ``spectrum`` its block ``(B, n0, n1, n2)``, ``k0, k1, k2`` the local
    wavenumbers along spectral axes 0, 1, 2 (of real axes ``perm``), ``points`` ``(Np, 3)`` all of them.
    Returns ``(B, Np)`` real, summed over the whole mesh."""
    kv = (k0.reshape(-1), k1.reshape(-1), k2.reshape(-1))
    f = spectrum * weight  # the Parseval weights: 2 on kz > 0 of a half spectrum, else 1
    b, n0, n1, _ = f.shape
    n_points = points.shape[0]
    c = chunk_size(b, (n0, n1), n_points)
    chunks = -(-n_points // c)
    padded = jnp.concatenate([points, jnp.zeros((chunks * c - n_points, 3), points.dtype)])
    ctype = f.dtype

    def phases(x: jax.Array, axis: int) -> jax.Array:
        """exp(i k x) of the chunk's coordinate along spectral ``axis``: ``(C, n_axis)``."""
        return jnp.exp(1j * (x[:, perm[axis], None] * kv[axis][None, :])).astype(ctype)

    def one(x: jax.Array) -> jax.Array:
        # z (the last spectral axis) first: one GEMM over the whole local block, then two cheap contractions
        t = jnp.einsum("bijk,ck->bijc", f, phases(x, 2))
        t = jnp.einsum("bijc,cj->bic", t, phases(x, 1))
        return jnp.real(jnp.einsum("bic,ci->bc", t, phases(x, 0)))

    out = jax.lax.map(one, padded.reshape(chunks, c, 3))  # (chunks, B, C): one chunk's memory at a time
    out = jnp.moveaxis(out, 1, 0).reshape(b, chunks * c)[:, :n_points]
    return jax.lax.psum(out, axes)


def _local_nufft(perm: tuple[int, int, int], axes: tuple[str, ...], shift: tuple[bool, bool, bool],
                 box: tuple[float, float, float], spectrum: jax.Array, k0: jax.Array, k1: jax.Array, k2: jax.Array,
                 weight: jax.Array, points: jax.Array) -> jax.Array:
    """One device's partial sums by a type-2 NUFFT of its block (FINUFFT through jax-finufft; Barnett,
    Magland & af Klinteberg 2019, SIAM J. Sci. Comput. 41, C479). The block's modes along each axis are a
    contiguous range a .. a + n - 1 (an unsharded full axis, in FFT order, is first rotated so: ``shift``),
    so sum_j f_j e^{i (a + j) t} = e^{i (a + n//2) t} sum_{j'} f_{j' + n//2} e^{i j' t}, a centred
    NUFFT of the block times one phase per point (t = 2 pi x / L, wrapped into [-pi, pi))."""
    from jax._src.interpreters import batching
    from jax_finufft import nufft2

    if not hasattr(batching, "not_mapped"):
        # jax-finufft 1.3.1's vmap rule (used by its own jvp, and by ensembles) reads batching.not_mapped,
        # which JAX >= 0.8 no longer defines; it was None, the marker JAX still passes for an unmapped axis
        batching.not_mapped = None
    f = spectrum * weight
    kv = [k0.reshape(-1), k1.reshape(-1), k2.reshape(-1)]
    for i in range(3):
        if shift[i]:
            f = jnp.fft.fftshift(f, axes=i + 1)
            kv[i] = jnp.fft.fftshift(kv[i])
    theta, offset = [], 0.0
    for i in range(3):
        length = box[perm[i]]
        m = kv[i] * (length / (2 * jnp.pi))  # the block's integer mode numbers, ascending
        t = 2 * jnp.pi / length * points[:, perm[i]]
        theta.append(jnp.mod(t + jnp.pi, 2 * jnp.pi) - jnp.pi)
        offset = offset + (jnp.round(m[0]) + m.shape[0] // 2) * theta[-1]
    eps = 1e-14 if f.dtype == jnp.complex128 else 1e-6
    sums = nufft2(f, theta[0], theta[1], theta[2], iflag=1, eps=eps)  # (B, Np)
    return jax.lax.psum(jnp.real(jnp.exp(1j * offset).astype(f.dtype) * sums), axes)


def nufft_available() -> str | None:
    """None when the NUFFT path can run here, else why not (one line)."""
    try:
        import jax_finufft  # noqa: F401
    except ImportError as err:
        return f"jax-finufft is not installed ({err}); pip install 'simulator[nufft]'"
    return None


def check_nufft(fft) -> str | None:
    """None when ``fft``'s local blocks suit the NUFFT path, else why not: every block must hold a contiguous
    range of mode numbers, so a sharded signed axis (modes in FFT order) needs its wrap, entry N/2, on a block
    boundary. N is the size of the axis the spectrum holds: the grid's, or a compact spectrum's K."""
    sizes = dict(zip(fft.mesh.axis_names, fft.mesh.devices.shape, strict=True))
    held = fft.spectral_shape(real=True)
    for i, name in enumerate(fft.spectral_spec()):
        real_axis = fft.perm[i]
        half = real_axis == 2 and fft.has_real_transform
        if name is None or half or sizes[name] == 1:
            continue
        n = held[i]
        if (n // 2) % (n // sizes[name]):
            return (f"the k{axis_names(fft.shape)[real_axis]} blocks of {n} modes over {sizes[name]} devices "
                    "straddle the +-N/2 wrap (use an even device count along that axis)")
    if next(iter(fft.mesh.devices.flat)).platform != "cpu":
        return "the installed jax-finufft runs on CPU only"
    return None


def evaluate_at(fft, spectrum: jax.Array, points: jax.Array, wavenumbers: Sequence[jax.Array],
                weight: jax.Array, method: str = "direct", box: Sequence[float] | None = None) -> jax.Array:
    """The real field of ``spectrum`` at ``points``, exactly (see the module docstring).

    ``spectrum``: ``(*batch, K0, K1, K2)`` in ``fft``'s real-to-complex k-space layout and sharding (what
    :meth:`~simulator.fft.base.FFTBackend.rfft` returns); ``points``: ``(Np, 3)`` physical coordinates
    (any real numbers: the sum is periodic), replicated; ``wavenumbers``: ``(kx, ky, kz)`` and ``weight``
    the Parseval weights as the backend hands them out (an equation's ``ops.k`` and ``ops.weight``:
    leaves of the equation, so no array is closed over). Returns ``(*batch, Np)``, replicated.

    ``method``: ``direct`` (the separable sum, any backend and device) or ``nufft`` (a type-2 NUFFT of each
    device's block, to ~1e-14 relative in float64 and 1e-6 in float32: needs jax-finufft, ``box``, and
    :func:`check_nufft`).
    """
    nb = spectrum.ndim - 3
    batch = spectrum.shape[:nb]
    flat = spectrum.reshape((math.prod(batch), *spectrum.shape[nb:]))
    perm = tuple(fft.perm)
    by_spectral_axis = [wavenumbers[perm[i]] for i in range(3)]
    wshape = tuple(weight.shape)
    waxis = max(range(3), key=lambda i: wshape[i])
    specs = (PartitionSpec(None, *fft.spectral_spec()),
             *(_vector_spec(fft, i, by_spectral_axis[i].shape[i]) for i in range(3)),
             _vector_spec(fft, waxis, wshape[waxis]), PartitionSpec())
    axes = tuple(fft.mesh.axis_names)
    if method == "nufft":
        sizes = dict(zip(fft.mesh.axis_names, fft.mesh.devices.shape, strict=True))
        spec = fft.spectral_spec()
        shift = tuple(not (perm[i] == 2 and fft.has_real_transform) and (spec[i] is None or sizes[spec[i]] == 1)
                      for i in range(3))
        body = functools.partial(_local_nufft, perm, axes, shift, tuple(float(b) for b in box))
    else:
        body = functools.partial(_local_sum, perm, axes)
    mapped = jax.shard_map(body, mesh=fft.mesh, in_specs=specs, out_specs=PartitionSpec())
    real = jnp.finfo(spectrum.dtype).dtype
    out = mapped(flat, *by_spectral_axis, weight, points.astype(real))
    return out.reshape((*batch, points.shape[0])) / float(fft.size)


# ---- the local path: a window of grid nodes around each point (interpolation, and its adjoint the deposit) -----


def _halo(x: jax.Array, axis: int, mesh_axis: str, size: int, below: int, above: int) -> jax.Array:
    """``x`` extended along ``axis`` by ``below`` planes below and ``above`` above, taken periodically from
    the neighbouring devices along ``mesh_axis`` of ``size`` devices."""
    n = x.shape[axis]
    parts = [x]
    if below:  # my last planes are my right neighbour's lower halo
        low = jax.lax.slice_in_dim(x, n - below, n, axis=axis)
        parts.insert(0, jax.lax.ppermute(low, mesh_axis, [(i, (i + 1) % size) for i in range(size)]))
    if above:  # my first planes are my left neighbour's upper halo
        high = jax.lax.slice_in_dim(x, 0, above, axis=axis)
        parts.append(jax.lax.ppermute(high, mesh_axis, [(i, (i - 1) % size) for i in range(size)]))
    return jnp.concatenate(parts, axis=axis)


def _local_window(window: str, real_axes: tuple[str | None, str | None, str | None], sizes: tuple[int, int, int],
                  block: Block, axes: tuple[str, ...] | None, impl: str, threads: int, field: jax.Array,
                  points: jax.Array, live: jax.Array | None = None) -> jax.Array:
    """One device's share: ``field`` its real-space block ``(B, nx, ny, nz)``, ``points`` ``(Np, 3)``; returns
    ``(B, Np)``. With ``axes`` (replicated points) every point whose cell (floor(x / dx)) lies in this block is
    evaluated here from the block and its halo, the others give 0, and one psum over ``axes`` completes them
    all. Without (owned points) every point is this device's and the values stay here: with ``block.reach`` 0
    (the cold dark matter's case) its cell lies in this block; with a reach it may lie up to that many cells
    outside along a sharded axis (a Runge-Kutta stage's provisional position: the halo is ``reach`` planes
    wider on each side), and a point beyond gives NaN (its owner cannot evaluate it: the caller counts it).
    Along an axis the block holds whole, the window's nodes wrap around it (no halo, no copy of the block);
    along a sharded one the neighbours' planes extend it (:func:`_halo`). The windowed sum itself is
    :func:`simulator.fft.window.gather` (its transpose the deposit's scatter); ``live`` (owned points): the
    occupied slots, an empty one giving 0 without being evaluated."""
    w = STENCILS[window]
    ext = field
    starts = []
    for a in range(3):
        if block.cut[a]:
            ext = _halo(ext, a + 1, real_axes[a], sizes[a], w.below + block.reach, w.above + block.reach)
            starts.append(jax.lax.axis_index(real_axes[a]) * field.shape[a + 1])
        else:
            starts.append(0)
    out = gather(ext, points, jnp.stack([jnp.asarray(v, jnp.int32) for v in starts]), window=window, block=block,
                 impl=impl, threads=threads, live=live)
    return out if axes is None else jax.lax.psum(out, axes)  # another device's point gave 0: its owner adds it


def interpolate_local(fft, field: jax.Array, points: jax.Array, box: Sequence[float],
                      window: str = "lagrange4", owned: bool = False, reach: int = 0,
                      live: jax.Array | None = None) -> jax.Array:
    """A real-space ``field`` ``(*batch, Nx, Ny, Nz)`` (``fft``'s real layout and sharding) at ``points``
    ``(Np, 3)`` (replicated, any real coordinates: periodic) by the tensor product of a 1D ``window``
    (:data:`simulator.fft.stencils.STENCILS`; the default the tricubic 4-point Lagrange interpolant, which
    Yeung & Pope 1988 compare with the exact sum; ``cic`` and ``tsc`` the particle-mesh interpolations).
    Each device evaluates the points whose cell lies in its block, from its block and a halo (the window's
    planes below and above along each sharded axis: ``ppermute`` with its neighbours); one psum assembles
    them. Cost per point: width^3 x batch multiply-adds, on the owner only. Returns ``(*batch, Np)``.

    ``owned``: the points are sharded by owner (:mod:`simulator.fft.owned`), each device's slots in its own block
    (:func:`migrate` keeps them there): no psum, the values sharded like the points. ``reach`` (owned only):
    a point's cell may lie up to that many cells outside its owner's block along a sharded axis (the halo
    is as much wider: ``reach`` + the window's planes must not exceed a block); a point further out gives
    NaN, for the caller to count (a Runge-Kutta stage's position that left the halo). ``live`` (owned only)
    ``(Np,)`` bool, sharded like the points: the occupied slots; an empty one gives 0 and costs no window (at a
    capacity of twice a device's share, half the slots: half the interpolation's time on several devices)."""
    if reach and not owned:
        raise ValueError("interpolate_local: reach applies to owned points only")
    if live is not None and not owned:
        raise ValueError("interpolate_local: live applies to owned points only")
    nb = field.ndim - 3
    batch = field.shape[:nb]
    flat = field.reshape((math.prod(batch), *field.shape[nb:]))
    real_axes = tuple(fft.real_spec())
    mesh_sizes = dict(zip(fft.mesh.axis_names, fft.mesh.devices.shape, strict=True))
    sizes = tuple(mesh_sizes[m] if m is not None else 1 for m in real_axes)
    # an axis held whole shorter than the window (a plane's one cell, :mod:`simulator.fft.plane`; a thin box's few):
    # the window's nodes wrap around it as around any axis held whole, no copy of the field
    shape = tuple(int(n) for n in fft.shape)
    spacing = tuple(float(length) / n for length, n in zip(box, shape, strict=True))
    axes = tuple(fft.mesh.axis_names)
    # an owned point at reach 0 is inside by construction: no check (nor a select in the deposit, its transpose)
    outside = "zero" if not owned else ("nan" if reach else "none")
    block = Block(shape, spacing, tuple(m is not None and n > 1 for m, n in zip(real_axes, sizes, strict=True)),
                  reach, outside)
    here = sum(d.process_index == jax.process_index() for d in fft.mesh.devices.flat)
    local_points = points.shape[0] // fft.devices if owned else points.shape[0]
    body = functools.partial(_local_window, window, real_axes, sizes, block, None if owned else axes,
                             implementation(fft.route), threads_for(local_points, here))
    spread = PartitionSpec(axes) if owned else PartitionSpec()
    operands = (flat, points.astype(field.dtype)) + (() if live is None else (live.astype(bool),))
    specs = (PartitionSpec(None, *real_axes), spread, spread)[:len(operands)]
    mapped = jax.shard_map(body, mesh=fft.mesh, in_specs=specs, out_specs=PartitionSpec(None, *spread))
    out = mapped(*operands)
    return out.reshape((*batch, points.shape[0]))


def deposit(fft, points: jax.Array, weights: jax.Array, box: Sequence[float], window: str,
            dtype: jnp.dtype, owned: bool = False) -> jax.Array:
    """The particle-mesh assignment: sum_p weights_p W(x_i - x_p) on every grid node x_i, a real-space field
    ``(Nx, Ny, Nz)`` in ``fft``'s real layout and sharding, for ``points`` ``(Np, 3)`` and ``weights``
    ``(Np,)`` replicated. It is the adjoint (transpose) of :func:`interpolate_local` with the same ``window``,
    computed by JAX from it: each device assigns the points of its own cells to its block and halo, and the
    halo planes are added to the neighbours' blocks (the transposed ``ppermute``). Being the transpose of the
    interpolation, the force it implies on the particles conserves momentum (Hockney & Eastwood 1988,
    §5-5): the same window both ways. ``owned``: points and weights sharded by owner (:func:`migrate`)."""
    template = jax.ShapeDtypeStruct(tuple(fft.shape), dtype, sharding=fft.real_sharding())
    points = points.astype(dtype)

    def gather(field: jax.Array) -> jax.Array:
        return interpolate_local(fft, field, points, box, window, owned)

    (field,) = jax.linear_transpose(gather, template)(weights.astype(dtype))
    return field

