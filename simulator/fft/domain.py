"""The domain a backend runs on (:mod:`simulator.fft.bases`): its bases, and what each gives the spectra, placed in
the backend's spectral layout.

The backend names its bounded basis (:attr:`DomainSpectra.basis`, a key of :data:`simulator.fft.bases.BOUNDED`,
None on a periodic box) and builds the bases from its grid and the box's lengths (:meth:`DomainSpectra.domain`, once
per box). The vectors below are each 3D, of size 1 except along their own spectral axis, sharded like the spectra:

* a periodic box's spectrum is the backend's real-to-complex one (its axis order ``perm``, a half or compact last
  axis: :meth:`~simulator.fft.base.FFTBackend.mode_numbers`);
* a walled one holds the full complex spectrum of the periodic axes and every mode of the bounded one, in real-axis
  order (:mod:`simulator.fft.walls`).

Every number is the basis's own (its wavenumbers, its 2/3 rule, its Parseval weights): the code asks the axis, not
which kind of wall it has.
"""

from __future__ import annotations

from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from simulator.fft import bases as bases_mod
from simulator.fft.bases import Basis
from simulator.fft.walls import runs_of


class DomainSpectra:
    """The domain of a backend (:class:`simulator.fft.base.FFTBackend` inherits it): the bases of its grid and their
    vectors in its spectral layout (module docstring)."""

    #: the bounded basis's name (a key of :data:`simulator.fft.bases.BOUNDED`) of a walled run (set with the
    #: transforms: :func:`simulator.runtime.make_fft`); None on a periodic box
    basis: str | None = None

    def domain(self, box: Sequence[float]) -> tuple[Basis, Basis, Basis]:
        """The bases of the grid over ``box`` (the lengths of the box the grid runs as), one per axis: Fourier on
        the periodic axes, the bounded basis across the plates of a walled run; built once per box."""
        lengths = tuple(float(b) for b in box)
        built = self.__dict__.setdefault("_domains", {})
        if lengths not in built:
            if self.walls and self.basis is None:
                raise ValueError(f"a walled {self.name} backend names its bounded basis (one of "
                                 f"{tuple(bases_mod.BOUNDED)}) before its domain is built")
            built[lengths] = bases_mod.domain(self.shape, lengths, self.basis if self.walls else None)
        return built[lengths]

    def held_modes(self, axis: int, basis: Basis) -> np.ndarray:
        """The mode numbers the spectra hold along real axis ``axis`` of ``basis``: every one of a walled spectrum,
        the real-to-complex layout's of a periodic one (:meth:`~simulator.fft.base.FFTBackend.mode_numbers`)."""
        return basis.modes() if self.walls else self.mode_numbers(axis, real=True)

    def spectral_axis(self, axis: int) -> int:
        """The spectral axis holding real axis ``axis``: a walled spectrum is in real-axis order."""
        return axis if self.walls else self.perm.index(axis)

    def domain_wavenumbers(self, box: Sequence[float], dtype: jnp.dtype = jnp.float32
                           ) -> tuple[jax.Array, jax.Array, jax.Array]:
        """``(k_0, k_1, k_2)``: each axis's wavenumbers of the modes the spectra hold (``2 pi m / L`` of a Fourier
        axis, ``n pi / H`` of the sine and cosine series); a Chebyshev axis has none (its derivative is a matrix)."""
        out = []
        for axis, basis in enumerate(self.domain(box)):
            if not hasattr(basis, "wavenumbers"):
                raise ValueError(f"the {type(basis).__name__} basis has no wavenumbers: its derivative is not diagonal")
            out.append(self._broadcast_vector(basis.wavenumbers(self.held_modes(axis, basis)),
                                              self.spectral_axis(axis), dtype))
        return out[0], out[1], out[2]

    def domain_keep(self, box: Sequence[float], dtype: jnp.dtype = jnp.float32) -> tuple[jax.Array, ...]:
        """Each axis's 2/3 rule, 1 on the modes it keeps and 0 elsewhere (:meth:`~simulator.fft.bases.Fourier.keep`
        and the bounded bases'); their product is the dealiasing mask."""
        return tuple(self._broadcast_vector(basis.keep(self.held_modes(axis, basis)), self.spectral_axis(axis), dtype)
                     for axis, basis in enumerate(self.domain(box)))

    def kept_columns(self, box: Sequence[float]) -> tuple[tuple[tuple[int, int], ...] | None, ...]:
        """Per periodic axis of a walled spectrum (real axes 0 and 1), the runs ``[start, stop)`` of entries (NumPy's
        FFT order) whose modes the 2/3 rule keeps, for solves that hold those columns alone; None where the axis
        keeps every entry or is split between devices in the real layout, the one the walled equations hold their
        spectra in: a selection along a split axis would keep unequal counts per device (two blocks at the ends of
        the axis), so it is left whole there. Static, from the grid and the mesh."""
        from simulator.fft.owned import sharded_axes

        split = {axis for axis, _, _ in sharded_axes(self)}
        out: list[tuple[tuple[int, int], ...] | None] = []
        for axis, basis in enumerate(self.domain(box)[:2]):
            keep = basis.keep(self.held_modes(axis, basis))
            if axis in split or keep.all():
                out.append(None)
                continue
            out.append(runs_of(keep))
        return tuple(out)

    def domain_weight(self, box: Sequence[float], dtype: jnp.dtype = jnp.float32) -> jax.Array:
        """Parseval's weights ``w`` with ``sum(w |u_hat|**2) / N**2 == mean(u**2)``: the bounded basis's
        (:meth:`~simulator.fft.bases.SinCos.parseval_weights`) across the plates, else the half axis's of a
        real-to-complex spectrum (1 everywhere on a full one)."""
        last = self.domain(box)[2]
        if last.bounded:
            if not hasattr(last, "parseval_weights"):
                raise ValueError(f"the {type(last).__name__} basis has no Parseval weights: its modes are not "
                                 "orthogonal on its points")
            return self._broadcast_vector(last.parseval_weights(), 2, dtype)
        return self.parseval_weight(real=True, dtype=dtype)
