"""The layout rules of every FFT backend, without JAX: mesh shapes, divisibility, shardings by axis name.

Config validation, sweeps and the memory planner check a grid against a decomposition before JAX
starts (or without it at all), so the rules live here as plain classes; each backend in
:mod:`simulator.fft` inherits its layout and adds the transforms.

Conventions shared by all layouts (see :mod:`simulator.fft.base` for the transforms):

* real-space arrays ``(*batch, Nx, Ny, Nz)``; only the three spatial axes are ever sharded;
* spectral arrays in the backend's axis order ``perm`` (spectral axis ``i`` holds the wavenumbers of
  real axis ``perm[i]``);
* a real-to-complex spectrum keeps ``kz = 0 .. Nz/2 - 1`` (Nyquist plane dropped), so Nz must be even
  and Nz/2 must divide over the devices sharding that axis; not a walled grid's (``grid.walls``), whose series
  across the plates take any length: its Nz divides over what shards it (:meth:`Layout.walled_spec`);
* or, in the *compact* layout (:meth:`Layout.compact_sizes`), only the modes the 2/3 rule keeps
  (|m_x|, |m_y| < N/3, 0 <= m_z < N/3), padded to sizes that divide over the mesh.
"""

from __future__ import annotations

import importlib.util
import math
from collections.abc import Iterator, Sequence
from typing import Any, ClassVar

from simulator.errors import ConfigError
from simulator.fft.plane import axis_names as box_axis_names, holds_plane

Shape3 = tuple[int, int, int]
Spec3 = tuple[str | None, str | None, str | None]


def _divisors(shape: Sequence[int]) -> list[int]:
    """The divisors of the product of ``shape``, ascending."""
    primes: dict[int, int] = {}
    for n in shape:
        p = 2
        while p * p <= n:
            while n % p == 0:
                primes[p] = primes.get(p, 0) + 1
                n //= p
            p += 1
        if n > 1:
            primes[n] = primes.get(n, 0) + 1
    divisors = [1]
    for p, e in primes.items():
        divisors = [d * p**k for d in divisors for k in range(e + 1)]
    return sorted(divisors)


def kept_modes(shape: Sequence[int]) -> Shape3:
    """How many modes the 2/3 rule keeps per axis of a real-to-complex spectrum of ``shape``: ``c = ceil(N/3)``
    non-negative mode numbers ``0 .. c-1`` (|m| < N/3), so ``2c - 1`` on the signed x and y axes, ``c`` on z."""
    c = [-(-int(n) // 3) for n in shape]
    return 2 * c[0] - 1, 2 * c[1] - 1, c[2]


def near_square(n: int) -> tuple[int, int]:
    """Factor n = p0 * p1 with p0 >= p1 as close to square as possible (pencil meshes: see
    :meth:`PencilLayout.mesh_shape` for why the larger factor comes first)."""
    p1 = math.isqrt(n)
    while n % p1:
        p1 -= 1
    return n // p1, p1


class Layout:
    """How a backend lays a grid over a device mesh. Class-level only: nothing here needs devices."""

    name: ClassVar[str]
    axis_names: ClassVar[tuple[str, ...]]
    #: spectral axis i holds the wavenumbers of real axis perm[i]
    perm: ClassVar[tuple[int, int, int]] = (0, 1, 2)
    #: True when rfft returns the half spectrum along z (Nz/2 planes); False: full spectrum
    has_real_transform: ClassVar[bool] = True
    #: whether it takes a plane's box (1, Nx, Ny) (:mod:`simulator.fft.plane`): one that splits one axis does
    takes_plane: ClassVar[bool] = False
    #: whether its last axis may be bounded by plates (``grid.walls``, :mod:`simulator.fft.walls`): the real-to-real
    #: transform of that axis runs where it is whole on each device, before the exchange
    takes_walls: ClassVar[bool] = False
    #: spatial axis -> mesh axis name that shards it, in real space and in k-space (backend order)
    real_axes: ClassVar[Spec3]
    spectral_axes: ClassVar[Spec3]

    @classmethod
    def mesh_shape(cls, n_devices: int, requested: Sequence[int] | None) -> tuple[int, ...]:
        """The mesh shape this backend uses for ``n_devices`` devices, or for an explicit request."""
        raise NotImplementedError(cls.name)  # every concrete layout defines it

    @classmethod
    def check_mesh_request(cls, requested: Sequence[int] | None, key: str = "fft.mesh") -> None:
        """Reject a requested mesh shape of the wrong rank for this backend (any rank by default)."""
        return None

    @classmethod
    def check_installed(cls, key: str = "fft.backend") -> None:
        """Raise ConfigError when a package this backend runs on cannot be imported (none by default)."""
        return None

    @classmethod
    def divisibility(cls, shape: Shape3, mesh_shape: tuple[int, ...], walls: bool = False
                     ) -> list[tuple[str, int, int]]:
        """(what, size, divisor) pairs that must divide evenly for this layout, ``what`` in a box's or a plane's
        words (:func:`simulator.fft.plane.axis_names`: a plane's box ``(1, Nx, Ny)`` says ``Nx``, ``Ny``, ``Ny/2``);
        ``walls``: of a walled grid, whose spectra are sharded as :meth:`walled_spec` says (no half axis)."""
        sizes, names = dict(zip(cls.axis_names, mesh_shape, strict=True)), box_axis_names(shape)
        out = []
        spectral = cls.walled_spec(shape) if walls else cls.spectral_axes_real()
        for axis, (real_name, spec_name) in enumerate(zip(cls.real_axes, spectral, strict=True)):
            if real_name is not None and sizes[real_name] > 1:
                out.append((f"N{names[axis]}", shape[axis], sizes[real_name]))
            if spec_name is not None and sizes[spec_name] > 1:
                size = shape[axis]
                out.append((f"N{names[axis]}", size, sizes[spec_name]))
                if axis == 2 and cls.has_real_transform and not walls:
                    out.append((f"N{names[axis]}/2", size // 2, sizes[spec_name]))
        return list(dict.fromkeys(out))

    @classmethod
    def walled_spec(cls, shape: Sequence[int]) -> Spec3:
        """The mesh axis sharding each spatial axis of a walled spectrum of ``shape`` (real-axis order), where walls are
        taken (:class:`simulator.fft.walls.WalledTransforms`): real space's by default (:mod:`simulator.fft.pencil`)."""
        return cls.real_axes

    @classmethod
    def check_walls_layout(cls, shape: Sequence[int], mesh_shape: tuple[int, ...], key: str = "grid.shape") -> None:
        """Raise ConfigError unless a walled grid ``shape`` (``grid.walls``) decomposes over ``mesh_shape`` beyond
        :meth:`check_layout`'s sizes (none by default: a slab's walled transform splits what its periodic one does)."""
        return None

    @classmethod
    def compact_sizes(cls, shape: Sequence[int], mesh_shape: tuple[int, ...],
                      at_least: Sequence[int] | None = None) -> Shape3 | None:
        """Sizes (Kx, Ky, Kz) of the compact real-to-complex spectrum on this mesh, or None where it is
        not smaller than the half spectrum or the layout cannot hold it.

        The 2/3 rule keeps ``c = ceil(N/3)`` non-negative mode numbers ``0 .. c-1`` per axis (|m| < N/3), so
        a signed axis keeps ``2c - 1`` and the half axis ``c``. Each compact signed axis of size K holds the
        modes of a K-point FFT in NumPy's order (``fftfreq(K) * K``: ``0 .. ceil(K/2)-1, -(K//2) .. -1``);
        K is the smallest size >= 2c - 1 (a signed axis) or >= c (the half axis) that the mesh axis sharding
        it divides. The extra modes are outside the 2/3 rule, so a dealiased field is zero there. ``at_least``:
        sizes to hold at the least (the planner's smaller stand-in run holds the spectrum per device of the
        run it stands in for).
        """
        if not cls.has_real_transform:
            return None
        sizes = dict(zip(cls.axis_names, mesh_shape, strict=True))
        kept = kept_modes(shape)
        out = []
        for axis, name in enumerate(cls.spectral_axes_real()):
            n, p = int(shape[axis]), sizes[name] if name is not None else 1
            need = max(kept[axis], int(at_least[axis])) if at_least is not None else kept[axis]
            k, full = -(-need // p) * p, (n // 2 if axis == 2 else n)
            if k > full:
                return None
            out.append(k)
        if out[0] * out[1] * out[2] >= shape[0] * shape[1] * (shape[2] // 2):
            return None
        return tuple(out)  # type: ignore[return-value]

    @classmethod
    def spectral_axes_real(cls) -> Spec3:
        """Mesh axis sharding each REAL axis's wavenumbers (the spectral spec put back in x, y, z order)."""
        out: list[str | None] = [None, None, None]
        for i, real_axis in enumerate(cls.perm):
            out[real_axis] = cls.spectral_axes[i]
        return tuple(out)  # type: ignore[return-value]

    @classmethod
    def device_counts(cls, shape: Sequence[int], walls: bool = False) -> Iterator[int]:
        """The device counts whose mesh (:meth:`mesh_shape` of the count) ``shape`` (``walls``: walled) takes."""
        for count in _divisors(shape):  # a mesh axis divides a grid axis: a count divides the cells
            mesh = cls.mesh_shape(count, None)
            if math.prod(mesh) != count:  # the single layout: one device whatever the count
                continue
            try:
                cls.check_layout(shape, mesh, walls=walls)
            except ConfigError:
                continue
            yield count

    @classmethod
    def check_layout(cls, shape: Sequence[int], mesh_shape: tuple[int, ...], key: str = "grid.shape", *,
                     walls: bool = False) -> None:
        """Raise ConfigError unless ``shape`` decomposes over ``mesh_shape`` for both r2c and c2c; ``walls``: a walled
        grid, its last axis of any size what shards it divides (:meth:`walled_spec`, :meth:`check_walls_layout`)."""
        shape3 = tuple(int(n) for n in shape)
        flat = holds_plane(shape3)  # a plane's box (1, Nx, Ny), said in the plane's words (simulator.fft.plane)
        last = f"N{box_axis_names(shape3)[2]}"
        if cls.has_real_transform and shape3[2] % 2 and not walls:
            raise ConfigError(
                key, list(shape3[1:]) if flat else list(shape3),
                f"{last} must be even: the real-to-complex transform keeps {last}/2 planes (Nyquist dropped)",
                f"has an odd {last}",
            )
        for what, size, div in cls.divisibility(shape3, mesh_shape, walls):  # type: ignore[arg-type]
            if size % div:
                raise ConfigError(
                    key, list(shape3[1:]) if flat else list(shape3),
                    f"{cls.name} on mesh {list(mesh_shape)} needs {what} = {size} divisible by {div}; "
                    f"choose sizes that are multiples of the device counts",
                    "does not divide over the mesh",
                )


def spectral_layout(requested: str, physics_veto: str | None, layout: type[Layout], shape: Sequence[int],
                    mesh_shape: tuple[int, ...]) -> tuple[bool, str]:
    """Whether a run uses the compact spectral layout, and why, in a phrase for the log and the planner.

    ``requested``: ``fft.layout`` (``auto``, ``compact``, ``full``); ``physics_veto``: the equation's
    ``compact_spectra()`` (None: its spectra are all on the 2/3 rule's modes). ``compact`` where the
    backend cannot hold it on this mesh raises ConfigError.
    """
    sizes = layout.compact_sizes(shape, mesh_shape) if physics_veto is None else None
    if requested == "full":
        return False, "fft.layout = full"
    if sizes is None:
        why = physics_veto or (f"{layout.name} has no real-to-complex transform" if not layout.has_real_transform
                               else f"grid {list(shape)} on mesh {list(mesh_shape)} leaves no smaller layout")
        if requested == "compact":
            raise ConfigError("fft.layout", "compact", f"auto or full: {why}", "is not possible")
        return False, f"the half spectrum: {why}"
    share = math.prod(sizes) / (shape[0] * shape[1] * (shape[2] // 2))
    return True, (f"{'fft.layout = compact' if requested == 'compact' else 'auto'}: the 2/3 rule keeps "
                  f"{'x'.join(map(str, sizes))} modes, {share:.0%} of the half spectrum")


SLAB = "slab"
P0, P1 = "p0", "p1"


class SlabLayout(Layout):
    """1D mesh ``[P]``: real space sharded along y, k-space (kx, ky, kz) along kz."""

    name: ClassVar[str] = "slab"
    takes_plane: ClassVar[bool] = True
    takes_walls: ClassVar[bool] = True
    axis_names: ClassVar[tuple[str, ...]] = (SLAB,)
    real_axes: ClassVar[Spec3] = (None, SLAB, None)
    spectral_axes: ClassVar[Spec3] = (None, None, SLAB)

    @classmethod
    def walled_spec(cls, shape: Sequence[int]) -> Spec3:
        """A box's walled spectrum (kx, ky, n) is split along kx, a plane's along n (:mod:`simulator.fft.slab`)."""
        return (None, None, SLAB) if holds_plane(tuple(int(n) for n in shape)) else (SLAB, None, None)

    @classmethod
    def mesh_shape(cls, n_devices: int, requested: Sequence[int] | None) -> tuple[int, ...]:
        return tuple(requested) if requested is not None else (n_devices,)

    @classmethod
    def check_mesh_request(cls, requested: Sequence[int] | None, key: str = "fft.mesh") -> None:
        if requested is not None and len(requested) != 1:
            raise ConfigError(
                key, tuple(requested),
                "the slab backend uses a 1D mesh [P]; use backend pencil or jaxdecomp for [P0, P1]",
                "has the wrong rank",
            )


class PencilLayout(Layout):
    """2D mesh ``[P0, P1]``: real space (x/P0, y/P1, z), k-space (kx, ky/P0, kz/P1); a walled grid's k-space
    (kx/P0, ky/P1, z), as real space (:mod:`simulator.fft.pencil`)."""

    name: ClassVar[str] = "pencil"
    takes_walls: ClassVar[bool] = True
    axis_names: ClassVar[tuple[str, ...]] = (P0, P1)
    real_axes: ClassVar[Spec3] = (P0, P1, None)
    spectral_axes: ClassVar[Spec3] = (None, P0, P1)

    @classmethod
    def mesh_shape(cls, n_devices: int, requested: Sequence[int] | None) -> tuple[int, ...]:
        """The request, else the near-square mesh with ``P0 >= P1`` (8 devices: ``[4, 2]``).

        Why the smaller factor is ``P1``: the forward transform's first all-to-all (over ``P1``, after the z
        transform) carries ``Kz/(Nz/2)`` of the half spectrum in the compact layout, about 2/3, and its
        second (over ``P0``) about 4/9, so the larger exchange goes to the smaller group, where a smaller
        share of it leaves each device ((P1 - 1)/P1): a step's bytes sent, lsrk4 float32 at 128^3 on 8
        devices, 0.50 of the half spectrum's on ``[4, 2]`` against 0.53 on ``[2, 4]``, and on 2 devices
        0.41 on ``[2, 1]`` against 0.61 on ``[1, 2]`` (``scripts/bench_compact.py --parts exchange``). A
        mesh's last axis holds consecutive devices (the GPUs of one node first), so the larger exchange
        also stays on the faster links. The half spectrum's two exchanges are the same size either way."""
        return tuple(requested) if requested is not None else near_square(n_devices)

    @classmethod
    def check_walls_layout(cls, shape: Sequence[int], mesh_shape: tuple[int, ...], key: str = "grid.shape") -> None:
        """A walled field's (x, y) transform runs on (x, y)-planes, the bounded axis split over all ``P0 P1``
        devices between the two exchanges: ``Nz`` (a plane's ``Ny``) must divide by the device count."""
        count, nz = math.prod(mesh_shape), int(shape[2])
        if nz % count:
            last = f"N{box_axis_names(tuple(int(n) for n in shape))[2]}"
            raise ConfigError(key, list(shape), f"{cls.name} with grid.walls on mesh {list(mesh_shape)} needs {last} = "
                              f"{nz} divisible by {count}, the device count (the bounded direction is split over every "
                              "device while the periodic ones are transformed); choose a multiple",
                              "does not divide over the mesh")

    @classmethod
    def check_mesh_request(cls, requested: Sequence[int] | None, key: str = "fft.mesh") -> None:
        if requested is not None and len(requested) != 2:
            raise ConfigError(key, tuple(requested), "the pencil backend uses a 2D mesh [P0, P1]",
                              "has the wrong rank")


class JaxDecompLayout(Layout):
    """jaxdecomp's 2D mesh ``[1, P]`` (slab) or ``[P0, P1]``: real (x/P0, y/P1, z), k-space
    transposed (ky/P0, kz/P1, kx), complex only."""

    name: ClassVar[str] = "jaxdecomp"
    axis_names: ClassVar[tuple[str, ...]] = (P0, P1)
    perm: ClassVar[tuple[int, int, int]] = (1, 2, 0)
    has_real_transform: ClassVar[bool] = False
    real_axes: ClassVar[Spec3] = (P0, P1, None)
    spectral_axes: ClassVar[Spec3] = (P0, P1, None)

    @classmethod
    def mesh_shape(cls, n_devices: int, requested: Sequence[int] | None) -> tuple[int, ...]:
        if requested is None:
            return (1, n_devices)
        return (1, requested[0]) if len(requested) == 1 else tuple(requested)

    @classmethod
    def check_installed(cls, key: str = "fft.backend") -> None:
        # a dependency of the project, but an environment put together by hand (PYTHONPATH on a GPU node)
        # can lack it: say so in one line instead of failing at the first transform
        if importlib.util.find_spec("jaxdecomp") is None:
            raise ConfigError(key, cls.name, "pip install jaxdecomp, or choose another fft.backend",
                              "needs the jaxdecomp package, which is not installed")

    @classmethod
    def check_mesh_request(cls, requested: Sequence[int] | None, key: str = "fft.mesh") -> None:
        if requested is not None and len(requested) not in (1, 2):
            raise ConfigError(key, tuple(requested), "jaxdecomp takes [P] (slab) or [P0, P1] (pencil)",
                              "has the wrong rank")
        if requested is not None and len(requested) == 2 and requested[0] > 1 and requested[1] == 1:
            # jaxdecomp 0.3 transposes such a slab into another k-space layout than (ky/P0, kz/P1, kx): its
            # transforms fail to partition (custom_partitioner: spec P(None, 'p0', None) does not match the mesh)
            raise ConfigError(key, list(requested), f"jaxdecomp's slab is [1, {requested[0]}] (or [{requested[0]}]); "
                              "[P0, P1] with P1 > 1 is a pencil", "is not available for jaxdecomp")


class SingleLayout(Layout):
    """One device: nothing sharded; k-space in NumPy's order."""

    name: ClassVar[str] = "single"
    takes_plane: ClassVar[bool] = True
    takes_walls: ClassVar[bool] = True
    axis_names: ClassVar[tuple[str, ...]] = ("single",)
    real_axes: ClassVar[Spec3] = (None, None, None)
    spectral_axes: ClassVar[Spec3] = (None, None, None)

    @classmethod
    def mesh_shape(cls, n_devices: int, requested: Sequence[int] | None) -> tuple[int, ...]:
        return (1,)

    @classmethod
    def check_mesh_request(cls, requested: Sequence[int] | None, key: str = "fft.mesh") -> None:
        if requested is not None and tuple(requested) != (1,):
            raise ConfigError(key, tuple(requested), "the single backend runs on one device: use [1] or null",
                              "is not allowed")


#: every backend's layout by name: the registry config validation reads (the transforms are in BACKENDS)
LAYOUTS: dict[str, type[Layout]] = {cls.name: cls for cls in (SlabLayout, PencilLayout, JaxDecompLayout, SingleLayout)}


# ---- what a config says of its mesh before start-up (config checks of grid-local methods) ----------------


def known_mesh(cfg: Any) -> tuple[int, ...] | None:
    """The mesh shape of a run of ``cfg`` where it is known before start-up (a single process's virtual CPU
    devices, or an explicit ``fft.mesh``), else None."""
    n_devices = cfg.runtime.cpu_devices if cfg.runtime.coordinator is None else None
    if not (cfg.fft.mesh or n_devices):
        return None
    return tuple(LAYOUTS[cfg.fft.backend].mesh_shape(n_devices or 1, cfg.fft.mesh))


def known_devices(cfg: Any) -> int | None:
    """The device count of a run of ``cfg`` where it is known before start-up (:func:`known_mesh`), else None
    (the checks that need it run again on the mesh a run starts on)."""
    mesh = known_mesh(cfg)
    return None if mesh is None else math.prod(mesh)


def check_planes(cfg: Any, key: str, value: str, planes: int, instead: str) -> None:
    """A grid-local method (``value`` of ``key``) takes ``planes`` planes from a neighbour: every sharded axis
    needs as many per device (checked where the device count is known before start-up, as the grid's own
    layout checks are; :func:`simulator.particles.setup.with_particles` checks the mesh a run starts on)."""
    layout = LAYOUTS[cfg.fft.backend]
    mesh = known_mesh(cfg)
    if mesh is None:
        return
    sizes = dict(zip(layout.axis_names, mesh, strict=True))
    for axis, name in enumerate(layout.real_axes):
        if name is not None and cfg.grid.cells[axis] // sizes[name] < planes:
            raise ConfigError(key, value, f"needs >= {planes} grid planes per device along "
                              f"{box_axis_names(cfg.grid.cells)[axis]} (grid.shape {list(cfg.grid.shape)} over "
                              f"{sizes[name]} devices): use {instead}", "is not available")
