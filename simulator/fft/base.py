"""The one FFT interface every physics module uses, and what all backends share.

Conventions (all backends):

* Real-space arrays have shape ``(*batch, Nx, Ny, Nz)``: any number of leading batch axes (e.g. the
  three velocity components), then the three spatial axes. Only the spatial axes are ever sharded.
* Normalisation is NumPy's ``"backward"``: the forward transform is unnormalised,
  ``u_hat[k] = sum_x u[x] exp(-i k.x)``, and the inverse divides by ``Nx*Ny*Nz``.
* Spectral arrays are in the backend's own *k-space layout*: an axis order (``perm``: spectral axis
  ``i`` holds the wavenumbers of real axis ``perm[i]``) and a sharding. Physics never indexes
  spectral axes; it combines spectra with the wavenumbers from :meth:`FFTBackend.wavenumbers`, which
  broadcast against the spectral arrays and are sharded like them.
* Real-to-complex (``rfft``/``irfft``) keeps the half spectrum along z with ``kz = 0 .. Nz/2 - 1``:
  the Nyquist plane ``kz = -Nz/2`` is dropped, so the half axis has ``Nz/2`` planes and divides over
  devices, and ``irfft`` restores it as zero. That plane is zero in every dealiased (2/3-rule) field,
  so nothing physical is lost; a field with Nyquist content does not survive a round trip. Backends
  without a real transform (jaxdecomp) return the full complex spectrum instead; sums over modes use
  :meth:`FFTBackend.parseval_weight` so they are correct either way.
* A backend built with ``compact=True`` returns from ``rfft`` (and takes in ``irfft``) only the modes the
  2/3 rule keeps, ``(*batch, Kx, Ky, Kz)`` in the same axis order and sharding (:mod:`simulator.fft.compact`,
  sizes from :meth:`~simulator.fft.layouts.Layout.compact_sizes`); ``wavenumbers`` and ``parseval_weight``
  follow, so physics written with them runs unchanged. ``fft``/``ifft`` always use the full spectrum.
* Every transform is differentiable in forward and reverse mode (``jax.jvp``, ``jax.grad``,
  ``jax.jacfwd``...) and batches under ``jax.vmap``; the backward pass of a transform is the backend's
  transform in the other direction, so it costs the same communication (:mod:`simulator.fft.linear`).
"""

from __future__ import annotations

import abc
import functools
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec

from simulator.errors import ConfigError
from simulator.fft import linear, plane
from simulator.fft.bases import Fourier
from simulator.fft.domain import DomainSpectra
from simulator.fft.layouts import Layout, Shape3, Spec3
from simulator.fft.local import LocalFFT, resolve as resolve_local_fft
from simulator.fft.mesh import route_platform
from simulator.fft.walls import KINDS as WALL_KINDS, LAYOUT as WALLED_LAYOUT, WalledTransforms

T = TypeVar("T")


#: grid cells up to which a compact vector's components are inverse-transformed stacked on one device on
#: FFTW's path (:attr:`FFTBackend.stacks_inverse`). Measured (2026-11-25, 2-core CPU,
#: ``scripts/bench_layouts.py --parts inverse``: Navier-Stokes rk4 compact, float64, both forms in one process,
#: chunks interleaved): stacked against one at a time 0.96 of the wall time at 32^3, 0.97 at 48^3, 0.91-0.92
#: at 64^3 (CPU time 0.93-0.94), 0.93 at 80^3 (2^18.9 cells), 1.00 at 96^3, 1.05-1.06 at 128^3. The forward
#: transforms of the products stay one at a time (stacked: 1.05 of the CPU time at 64^3). On a slab of 2 the
#: stacked inverse also sends one all-to-all for three (0.93 of the wall time at 64^3, 1.01 at 128^3), but it
#: holds more memory (64^3 float64 rk4: 87.7 B/cell against 80.2), and the planner's stand-in for a
#: many-device run (simulator.planning.plan) then misses the run's own chunk by 6% instead of 4%: several devices keep
#: the components apart.
STACKED_INVERSE_CELLS = 1 << 19


def complex_dtype(dtype: jnp.dtype) -> jnp.dtype:
    """The complex dtype matching a real or complex dtype (float32 -> complex64, float64 -> complex128)."""
    return jnp.result_type(dtype, jnp.complex64)


def real_dtype(dtype: jnp.dtype) -> jnp.dtype:
    """The real dtype matching a real or complex dtype (complex64 -> float32)."""
    return jnp.finfo(dtype).dtype


class FFTBackend(Layout, WalledTransforms, DomainSpectra, abc.ABC):
    """A distributed 3D FFT over a fixed global grid and device mesh.

    Concrete backends are final; each inherits its layout rules (mesh, shardings, k-space axis order:
    :mod:`simulator.fft.layouts`) and defines the four transforms.
    """

    #: whether the backend's local transforms are this package's (False: they are inside a library)
    owns_local_transforms = True
    #: why the run uses this spectral layout (set by whoever chose it: :func:`simulator.runtime.make_fft`)
    layout_reason = "the half spectrum"
    #: whether a step's fields are transformed one at a time off the CPU (``fft.in_turn`` true: :meth:`in_turn`;
    #: ``auto`` is resolved to true or false by the run's memory check, :func:`simulator.planning.plan.auto_in_turn`)
    step_in_turn = False

    def __init__(self, shape: Sequence[int], mesh: Mesh, local_fft: str | None = None,
                 fft_threads: int | None = None, compact: bool | Sequence[int] = False, walls: bool = False,
                 basis: str | None = None):
        """``local_fft`` (``auto``, ``fftw``, ``xla``; default ``$SIMULATOR_FFT``) and ``fft_threads`` choose the
        per-device transforms (:mod:`simulator.fft.local`); ``compact`` the 2/3 rule's modes only (module conventions),
        at least the sizes given for True (:meth:`~simulator.fft.layouts.Layout.compact_sizes`); ``walls`` plates across
        the last axis (:attr:`walls`), of the bounded ``basis`` (:attr:`simulator.fft.domain.DomainSpectra.basis`)."""
        shape = tuple(int(n) for n in shape)
        if len(shape) != 3:
            raise ConfigError("grid.shape", shape, "expected three sizes (Nx, Ny, Nz)", "has the wrong length")
        if tuple(mesh.axis_names) != self.axis_names:
            raise ValueError(f"{self.name} needs a mesh with axes {self.axis_names}, got {mesh.axis_names}")
        self.check_layout(shape, tuple(mesh.devices.shape), walls=walls)
        self.shape: Shape3 = shape  # type: ignore[assignment]
        self.mesh = mesh
        #: sizes (Kx, Ky, Kz) of the compact real-to-complex spectrum, in real-axis order; None: the half spectrum
        self.compact: Shape3 | None = None
        if compact:
            at_least = None if compact is True else tuple(compact)
            self.compact = self.compact_sizes(shape, tuple(mesh.devices.shape), at_least)
            if self.compact is None:
                raise ConfigError("fft.layout", "compact",
                                  f"full: the {self.name} backend cannot hold a compact spectrum of grid "
                                  f"{list(shape)} on mesh {list(mesh.devices.shape)}", "is not possible here")
        if self.owns_local_transforms:
            here = sum(d.process_index == jax.process_index() for d in mesh.devices.flat)
            platform = next(iter(mesh.devices.flat)).platform
            self.local: LocalFFT = resolve_local_fft(local_fft, here, fft_threads, platform=platform)
        else:
            self.local = LocalFFT("xla", f"{self.name} runs its own transforms, inside its package")
        self.walls, self.basis = walls, basis

    # ---- shardings ---------------------------------------------------------------------------

    def real_spec(self) -> Spec3:
        """PartitionSpec entries of the three spatial axes of a real-space array."""
        return self.real_axes

    def spectral_spec(self) -> Spec3:
        """PartitionSpec entries of the three spectral axes (in the backend's axis order)."""
        return self.spectral_axes

    def real_sharding(self, batch_ndim: int = 0) -> NamedSharding:
        """Sharding of a real-space array with ``batch_ndim`` leading (unsharded) batch axes."""
        return NamedSharding(self.mesh, PartitionSpec(*([None] * batch_ndim), *self.real_spec()))

    def spectral_sharding(self, batch_ndim: int = 0) -> NamedSharding:
        """Sharding of a spectral array with ``batch_ndim`` leading (unsharded) batch axes."""
        return NamedSharding(self.mesh, PartitionSpec(*([None] * batch_ndim), *self.spectral_spec()))

    def replicated_sharding(self) -> NamedSharding:
        """Sharding of an array every device holds whole (scalars handed to compiled code)."""
        return NamedSharding(self.mesh, PartitionSpec())

    def replicated(self, host: np.ndarray, dtype: Any) -> jax.Array:
        """A host array, the same on every process, as an array of ``dtype`` every device holds whole."""
        host = np.asarray(host).astype(dtype)
        return jax.make_array_from_callback(host.shape, self.replicated_sharding(), lambda idx: host[idx],
                                            dtype=host.dtype)

    def real_jit(self, fn: Callable[..., jax.Array], batch_ndim: int = 0) -> Callable[..., jax.Array]:
        """``fn`` jitted with its output laid out as a real-space array with ``batch_ndim`` batch axes.

        For building fields from :meth:`coordinates`: each device computes only its own block, even
        when the formula depends on an unsharded axis alone (which eagerly would give a replicated,
        global array).
        """
        return jax.jit(fn, out_shardings=self.real_sharding(batch_ndim))

    def spectral_shape(self, real: bool) -> Shape3:
        """Global shape of the spatial part of a spectral array, in the backend's axis order."""
        sizes = list(self.shape)
        if real and self.compact is not None:
            sizes = list(self.compact)
        elif real and self.has_real_transform:
            sizes[2] //= 2
        return tuple(sizes[a] for a in self.perm)  # type: ignore[return-value]

    @property
    def size(self) -> int:
        """Number of real-space grid points, Nx*Ny*Nz (the inverse transform's normalisation)."""
        return int(np.prod(self.shape))

    @property
    def devices(self) -> int:
        """Number of devices the arrays are spread over (each holds 1/devices of every field)."""
        return int(self.mesh.devices.size)

    # ---- transforms ----------------------------------------------------------------------------
    # Backends implement the underscored methods; the public ones bind them as one linear primitive
    # (simulator.fft.linear) that gives every backend forward- and reverse-mode derivatives and vmap.
    # Called eagerly, the primitive runs the jitted implementation, because custom_partitioning
    # lowered eagerly, primitive by primitive, aborts XLA's SPMD partitioner.

    @abc.abstractmethod
    def _rfft(self, x: jax.Array) -> jax.Array: ...

    @abc.abstractmethod
    def _irfft(self, k: jax.Array) -> jax.Array: ...

    @abc.abstractmethod
    def _fft(self, x: jax.Array) -> jax.Array: ...

    @abc.abstractmethod
    def _ifft(self, k: jax.Array) -> jax.Array: ...

    @functools.cached_property
    def _jitted(self) -> dict[str, Callable[[jax.Array], jax.Array]]:
        return {name: jax.jit(getattr(self, f"_{name}")) for name in ("rfft", "irfft", "fft", "ifft", *WALL_KINDS)}

    @functools.cached_property
    def _traced(self) -> dict:
        """Implementations traced per (transform, input shape, dtype): see simulator.fft.linear."""
        return {}

    def rfft(self, x: jax.Array) -> jax.Array:
        """Forward real-to-complex 3D FFT over the last three axes (see the module conventions).

        Real space ``(*batch, Nx, Ny, Nz)`` in :meth:`real_sharding` -> k-space in
        :meth:`spectral_sharding`, half spectrum in z for backends with a real transform.
        """
        return linear.apply(self, "rfft", x)

    def irfft(self, k: jax.Array) -> jax.Array:
        """Inverse of :meth:`rfft`: a real array ``(*batch, Nx, Ny, Nz)`` in :meth:`real_sharding`."""
        return linear.apply(self, "irfft", k)

    def fft(self, x: jax.Array) -> jax.Array:
        """Forward complex-to-complex 3D FFT over the last three axes (full spectrum)."""
        return linear.apply(self, "fft", x)

    def ifft(self, k: jax.Array) -> jax.Array:
        """Inverse complex-to-complex 3D FFT over the last three axes (divides by Nx*Ny*Nz)."""
        return linear.apply(self, "ifft", k)

    @property
    def route(self) -> str:
        """The platform whose route this backend's programs take (:func:`simulator.fft.mesh.route_platform`)."""
        return route_platform(self.mesh)

    @property
    def stacks_inverse(self) -> bool:
        """Whether a compact vector's components are inverse-transformed as one stacked ``(3, ...)`` transform
        rather than one at a time (:class:`simulator.equations.flow.components.Transforms`): on FFTW's path, one
        device, grids of at most :data:`STACKED_INVERSE_CELLS` cells. There the calls and the kernels between
        them, not their bytes, are what the components' inverse transforms cost."""
        return (self.route == "cpu" and self.local.name == "fftw" and self.devices == 1
                and self.size <= STACKED_INVERSE_CELLS)

    def in_turn(self, transform: Callable[[jax.Array], jax.Array], inputs: T, count: int,
                make: Callable[[int, T], jax.Array], step: bool = True) -> list[jax.Array]:
        """``[transform(make(j, inputs)) for j in range(count)]``: the transforms of ``count`` fields, each made
        from ``inputs`` (any pytree) by ``make``, at once or one at a time.

        One at a time, field ``j`` is made only once field ``j - 1``'s transform exists
        (``lax.optimization_barrier`` on ``inputs`` and that result): XLA's GPU scheduler otherwise forms every
        field first and holds them all (the five components of the traceless stress: 20 B/cell in float32).
        That is what a program at output cadence does off the CPU (``step`` False: a flow's fields, as the output
        tasks and :meth:`~simulator.run.simulation.Simulation.fields` compute them; the snapshot fields took 51.9 ->
        39.7 B/cell on one H100 at 128^3 so, before a run's snapshots went one component per call), and a step
        with ``fft.in_turn`` (:attr:`step_in_turn`). Compiled for
        an H100 (``scripts/bench_compact.py --target h100``), Navier-Stokes's lsrk4 float32 chunk at 128^3 then
        takes 30.7 B/cell instead of 35.4, and a 512^3 rk4 step moves 834 bytes per cell through memory instead
        of 655: by default a step makes its fields at once, and on several devices XLA runs one field's
        all-to-all while it transforms the next (a barrier would wait for the exchange). On a CPU the fields are
        always made at once: the barrier made the 64^3 float64 step 5-10% slower."""
        if self.route == "cpu" or (step and not self.step_in_turn):
            return [transform(make(j, inputs)) for j in range(count)]
        out: list[jax.Array] = []
        for j in range(count):
            if out:
                inputs, out[-1] = jax.lax.optimization_barrier((inputs, out[-1]))
            out.append(transform(make(j, inputs)))
        return out

    # ---- k-space helpers -------------------------------------------------------------------------

    def mode_numbers(self, real_axis: int, real: bool) -> np.ndarray:
        """Signed mode numbers of the entries of a spectral axis (real axis ``real_axis``) in this layout: NumPy's
        ``fftfreq(n) * n`` order on a signed axis, ``0 ..`` on the half axis of a real-to-complex spectrum."""
        n = self.shape[real_axis]
        if real and self.compact is not None:
            n = self.compact[real_axis]
            if real_axis == 2:
                return np.arange(n, dtype=np.float64)
        elif real_axis == 2 and real and self.has_real_transform:
            return np.arange(n // 2, dtype=np.float64)
        return np.fft.fftfreq(n, 1.0 / n)

    def _broadcast_vector(self, values: np.ndarray, spectral_axis: int, dtype: jnp.dtype,
                          spec3: Spec3 | None = None) -> jax.Array:
        """A 1D vector placed along ``axis`` (size 1 elsewhere), sharded like the spectra (or ``spec3``).

        Built per shard with make_array_from_callback: each process fills only its own devices.
        """
        spec3 = self.spectral_spec() if spec3 is None else spec3
        shape = [1, 1, 1]
        shape[spectral_axis] = values.size
        spec: list[str | None] = [None, None, None]
        if values.size > 1:
            spec[spectral_axis] = spec3[spectral_axis]
        sharding = NamedSharding(self.mesh, PartitionSpec(*spec))
        host = values.reshape(shape).astype(dtype)
        return jax.make_array_from_callback(tuple(shape), sharding, lambda idx: host[idx], dtype=host.dtype)

    def wavenumbers(
        self, box: Sequence[float], real: bool = True, dtype: jnp.dtype = jnp.float32
    ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """Physical wavenumbers (kx, ky, kz) = 2*pi*m/L in the backend's k-space layout.

        Each is a 3D array of ones except along its own spectral axis, so ``kx * u_hat`` broadcasts
        against a spectral array (with any leading batch axes) and stays sharded like it.
        ``real`` selects the layout of :meth:`rfft` (half spectrum in z) or of :meth:`fft`; the numbers are the
        Fourier bases' (:meth:`~simulator.fft.bases.Fourier.wavenumbers`).
        """
        out = [self._broadcast_vector(Fourier(n, box[a]).wavenumbers(self.mode_numbers(a, real)), self.perm.index(a),
                                      dtype) for a, n in enumerate(self.shape)]
        return out[0], out[1], out[2]

    def coordinates(self, box: Sequence[float], dtype: jnp.dtype = jnp.float32) -> tuple[jax.Array, ...]:
        """Grid-point coordinates (x, y, z) = i*L/N, sharded like real-space arrays.

        Each is 3D with size 1 except along its own axis, so ``jnp.sin(x) * jnp.cos(y)`` builds a
        sharded field without any global array.
        """
        return tuple(
            self._broadcast_vector(np.arange(n) * (float(box[a]) / n), a, dtype, self.real_spec())
            for a, n in enumerate(self.shape)
        )

    def parseval_weight(self, real: bool = True, dtype: jnp.dtype = jnp.float32) -> jax.Array:
        """Weights w such that ``sum(w * |u_hat|**2) / N**2 == sum(u**2) / N`` (mean of u**2).

        For a half spectrum every kz > 0 plane stands for itself and its conjugate (w = 2), kz = 0
        for itself alone (w = 1); for a full spectrum w = 1.
        """
        half = real and self.has_real_transform  # the Fourier basis's weights of the half axis, else ones
        w = Fourier(self.shape[2], 1.0).parseval_weights(self.mode_numbers(2, real), True) if half else np.ones(1)
        return self._broadcast_vector(w, self.perm.index(2) if half else 0, dtype)

    def evaluate_at(self, spectrum: jax.Array, points: jax.Array, wavenumbers: Sequence[jax.Array],
                    weight: jax.Array, method: str = "direct", box: Sequence[float] | None = None) -> jax.Array:
        """The real field of a real-to-complex ``spectrum`` ``(*batch, K0, K1, K2)`` at ``points`` ``(Np, 3)``
        (replicated), exactly, as ``(*batch, Np)``: each device sums its own modes, one psum adds them
        (:mod:`simulator.fft.points`; ``wavenumbers``/``weight`` as :meth:`wavenumbers` and
        :meth:`parseval_weight` give them; ``method`` ``direct`` or ``nufft``, which needs ``box``)."""
        from simulator.fft import points as _points

        return _points.evaluate_at(self, spectrum, points, wavenumbers, weight, method, box)

    def interpolate_local(self, field: jax.Array, points: jax.Array, box: Sequence[float],
                          window: str = "lagrange4", owned: bool = False, reach: int = 0,
                          live: jax.Array | None = None) -> jax.Array:
        """A real-space ``field`` ``(*batch, Nx, Ny, Nz)`` at ``points`` ``(Np, 3)`` (replicated) by a window of
        grid nodes (tricubic Lagrange by default; ``cic``, ``tsc``), each point on the device owning its cell
        (a halo from the neighbours, one psum): ``(*batch, Np)`` (:func:`simulator.fft.points.interpolate_local`);
        ``owned``: points sharded by owner (:mod:`simulator.fft.owned`), values sharded like them; ``reach``: how
        many cells outside its owner's block an owned point may lie (further: NaN); ``live`` ``(Np,)`` bool: an
        owned point's slot occupied (an empty one gives 0, and costs nothing)."""
        from simulator.fft import points as _points

        return _points.interpolate_local(self, field, points, box, window, owned, reach, live)

    def deposit(self, points: jax.Array, weights: jax.Array, box: Sequence[float], window: str,
                dtype: jnp.dtype, owned: bool = False) -> jax.Array:
        """The particle-mesh assignment of ``weights`` ``(Np,)`` at ``points`` ``(Np, 3)`` (replicated) onto the
        grid nodes, ``(Nx, Ny, Nz)`` in the real layout: the transpose of :meth:`interpolate_local` with the
        same ``window`` (:func:`simulator.fft.points.deposit`); ``owned``: points and weights sharded by owner."""
        from simulator.fft import points as _points

        return _points.deposit(self, points, weights, box, window, dtype, owned)

    # ---- a NumPy reference in this layout (tests, self-checks, checkpoint conversion) -------------

    def reference_spectrum(self, x: np.ndarray, real: bool) -> np.ndarray:
        """``numpy.fft`` of a host array, arranged in this backend's k-space layout (global shape)."""
        axes = (-3, -2, -1)
        if real and self.has_real_transform:
            k = np.fft.rfftn(x, axes=axes)[..., : self.shape[2] // 2]
            if self.compact is not None:
                for a in range(3):
                    k = np.take(k, self.mode_numbers(a, True).astype(np.int64), axis=a - 3)
        else:
            k = np.fft.fftn(x, axes=axes)
        nb = x.ndim - 3
        return np.transpose(k, tuple(range(nb)) + tuple(nb + a for a in self.perm))

    def describe(self) -> str:
        """One line: backend, mesh, where real and spectral arrays are sharded, and the local FFT path."""
        mesh = "x".join(str(s) for s in self.mesh.devices.shape)
        names = plane.axis_names(self.shape)  # a plane's box (1, Nx, Ny) is (z, x, y) (simulator.fft.plane)
        return (
            f"{self.name} fft on mesh {mesh} {tuple(self.mesh.axis_names)}; real ({','.join(names)}) sharded "
            f"{self.real_spec()}, k-space ({','.join('k' + names[a] for a in self.perm)}) sharded "
            f"{self.spectral_spec()}{self.describe_layout()} ({self.layout_reason}); "
            f"local FFT: {self.local.describe(self.mesh.devices.flat[0].platform)}"
            f"{'; a vector inverse-transformed stacked (a small grid)' if self.compact and self.stacks_inverse else ''}"
        )

    def describe_layout(self) -> str:
        """``, compact KxxKyxKz``, ``, half spectrum``, ``, full spectrum`` or the walled one: the spectral layout."""
        if self.compact is None:  # a walled spectrum is never compact (its equation keeps every mode)
            return WALLED_LAYOUT if self.walls else ", half spectrum" if self.has_real_transform else ", full spectrum"
        return f", compact {'x'.join(map(str, self.compact))}"


def batch_ndim(x: jax.Array) -> int:
    """Number of leading batch axes in front of the three spatial axes."""
    if x.ndim < 3:
        raise ValueError(f"expected an array with at least 3 axes (..., X, Y, Z), got shape {x.shape}")
    return x.ndim - 3
