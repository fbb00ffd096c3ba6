"""A state from a file written on any grid: ``initial.name: file`` and restarts at another resolution.

The file's state becomes real-space state fields on the grid it was written on, over this run's
devices: a checkpoint is restored there (any backend, device or process count wrote it) and its
fields computed; a snapshot's fields are read there (:meth:`Equation.state_fields_from_snapshot`
rebuilds the state fields, e.g. psi from |psi| and arg psi). On this run's grid that is the answer.
On another grid each field is transformed there (full complex spectrum), written as a temporary
spectral file in the scratch directory (per-process shards and a virtual-dataset index, like every
output), read back into this grid's spectrum mode by mode (:mod:`simulator.output.resample`: zero
padding or truncation, Nyquist modes split or summed) and transformed back. No process holds more than
its own blocks of any array, and no global array is gathered. The state fields a checkpoint holds as
particle arrays (the cold particles' positions and momenta, :meth:`Equation.stored_fields`) do not depend
on the grid: they are carried over exactly. The equation's ``from_fields`` then makes the state on this grid
(its dealiasing, projection, potential).

Between plates (``grid.walls``) the bounded axis is no periodic series: each field is first remapped across the
plates, on the stored grid's periodic sizes, by its own series (:meth:`Equation.wall_series`: a sine or cosine series'
modes, a Chebyshev series' coefficients; :func:`simulator.fft.bases.resample_matrix`, one matrix product along that
axis), less the profile the equation holds apart from its series (:meth:`Equation.wall_lift`: a scalar's linear
profile between free-slip plates of nonzero values), then along the plates as above, where the bounded axis, now of
this run's size, maps identically.

Exact for a band-limited state: the field of a finer grid equals the one computed there to round-off.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Mapping
from functools import partial
from pathlib import Path

import jax
import jax.numpy as jnp

from simulator.equations.base import Equation, ImexEquation, Params
from simulator.errors import ConfigError
from simulator.fft import complex_dtype
from simulator.fft.bases import resample_matrix
from simulator.fft.relayout import on_grid
from simulator.log import get_logger
from simulator.output import checkpoints, hdf5
from simulator.output.resample import read_remapped
from simulator.output.sources import Source
from simulator.run.signals import agree


def _stored_grid_fields(source: Source, eq: Equation, params: Params) -> dict[str, jax.Array]:
    """The state fields of ``source`` on its own grid (``eq`` is the equation on that grid): a checkpoint's
    fields of its state, and those it holds as particle arrays (:meth:`Equation.stored_fields`)."""
    names = eq.state_fields
    if source.checkpoint is not None:
        template = eq.zero_state(params)
        try:  # particles kept by owner are laid out again where this grid divides the devices otherwise
            state, failed = checkpoints.restore(source.checkpoint, template, eq.fft, eq.leaf_spaces(template),
                                                eq.reslot), None
        except (OSError, RuntimeError) as err:  # h5py: a block failed its checksum or could not be read
            state, failed = None, err
        if agree([int(failed is not None)])[0]:  # every process refuses together
            _refuse_damaged(source.checkpoint, failed)
        fields = _fields(eq, state, params)
        if any(name not in fields for name in names):
            fields = {**fields, **_stored_particle_fields(eq, source.checkpoint)}
        return {name: fields[name] for name in names}
    # state fields that are no grid field (the cold particles' positions and momenta): only a checkpoint holds them
    particles = [name for name in names if name not in eq.field_info]
    if particles:
        raise ConfigError("initial.path", str(source.index), "give a checkpoint (checkpoints/cNNNNNNNN.json) or a "
                          f"run directory: a field snapshot holds no {', '.join(particles)}",
                          "is a snapshot of cold particles")
    wanted = eq.snapshot_sources or names
    with hdf5.IndexedFile(source.index) as snap:
        missing = [name for name in wanted if name not in snap.fields]
        if missing:
            raise ConfigError("initial.path", str(source.index), f"give a snapshot holding {', '.join(wanted)} (or a "
                              "checkpoint)", f"has no {', '.join(missing)}")
        read = {}
        for name in wanted:
            shape = snap.shape(name)
            read[name] = hdf5.read_into(snap, name, shape, eq.fft.real_sharding(len(shape) - 3), (0, 1, 2), eq.dtype)
    return _from_snapshot(eq, read)


def _refuse_damaged(ckpt: checkpoints.Checkpoint, failed: Exception | None) -> None:
    """ConfigError naming the damage in ``ckpt``'s data (as a restore of the run's own checkpoint finds
    it) and the previous intact checkpoint of its run, to start from instead."""
    where = checkpoints.damage(ckpt) or f"{ckpt.index}: {hdf5.describe_os_error(failed) if failed else 'unreadable'}"
    previous = checkpoints.find(ckpt.index.parent.parent, before=ckpt.step, warn=False)
    instead = (f"start from the previous intact checkpoint of that run, {previous.index.with_suffix('.json')}"
               if previous else "that run has no earlier intact checkpoint")
    raise ConfigError("checkpoint", str(ckpt.index.with_suffix(".json")), instead, f"is damaged ({where})")


def _stored_particle_fields(eq: Equation, ckpt: checkpoints.Checkpoint) -> dict[str, jax.Array]:
    """The state fields ``ckpt`` holds as particle arrays (:meth:`Equation.stored_fields`), given every
    particle-space dataset of it (its marker's names and spaces) by leaf name, read by the equation while open."""
    spaces = dict(zip(ckpt.meta.get("names") or (), ckpt.meta.get("spaces") or (), strict=False))
    with hdf5.IndexedFile(ckpt.index) as snap:
        return eq.stored_fields({name: snap.file[name] for name in snap.fields
                                 if spaces.get(name) == checkpoints.PARTICLES})


# jitted: one program each (run eagerly, every operation in them would compile its own)
_fields = jax.jit(lambda eq, state, params: eq.fields(state, params))
_from_snapshot = jax.jit(lambda eq, fields: eq.state_fields_from_snapshot(fields))
_forward = jax.jit(lambda eq, f: eq.fft.fft(f.astype(complex_dtype(eq.dtype))))
_inverse = jax.jit(lambda eq, spectrum, real: jnp.real(eq.fft.ifft(spectrum)) if real else eq.fft.ifft(spectrum),
                   static_argnums=2)


def _interpolate(fields: Mapping[str, jax.Array], stored: Equation, eq: Equation,
                 scratch: Path) -> dict[str, jax.Array]:
    """``fields`` on ``stored``'s grid interpolated onto ``eq``'s grid through a temporary spectral file."""
    spectrum_dtype = complex_dtype(eq.dtype)
    temporary = scratch / (f".remap-{os.getpid()}" if jax.process_count() == 1 else ".remap")
    try:
        spectra = {name: hdf5.Field(_forward(stored, f), stored.fft.perm) for name, f in fields.items()}
        index = hdf5.write(temporary / "spectra", spectra, {"step": 0, "time": 0.0})
        del spectra
        out = {}
        with hdf5.IndexedFile(index) as snap:
            for name, f in fields.items():
                nb = f.ndim - 3
                shape = (*f.shape[:nb], *eq.fft.spectral_shape(real=False))
                spectrum = read_remapped(snap, name, shape, eq.fft.spectral_sharding(nb), eq.fft.perm, spectrum_dtype)
                out[name] = _inverse(eq, spectrum, not eq.field_info[name].complex)
        return out
    finally:
        hdf5.barrier("remap read")  # every process has read its blocks before the file goes
        if jax.process_index() == 0:
            shutil.rmtree(temporary, ignore_errors=True)


def _across_plates(fields: Mapping[str, jax.Array], stored: Equation,
                   eq: Equation) -> tuple[Equation, dict[str, jax.Array]]:
    """``fields`` on ``stored``'s grid remapped across the plates to ``eq``'s wall-normal size, each component by its
    own series (:meth:`Equation.wall_series`, :func:`simulator.fft.bases.resample_matrix`), the periodic axes as
    they are: the equation on that intermediate grid (on ``eq``'s devices) and the fields there. The periodic
    interpolation that follows maps the bounded axis, now of the same size, identically."""
    shape = (*stored.fft.shape[:2], eq.fft.shape[2])
    fft = on_grid(eq.fft, shape)
    if fft is None:
        raise ConfigError("grid.shape", list(eq.fft.shape), f"a grid whose remap through {list(shape)} (the stored "
                          f"sizes along the plates, this run's across them) decomposes over the {jax.device_count()} "
                          "devices of this run", "cannot be reached from the stored state")
    across = type(eq)(fft, eq.box, eq.dtype, eq.physics)
    out = {}
    for name, f in fields.items():
        series = stored.wall_series(name)
        matrices = jnp.stack([jnp.asarray(resample_matrix(s, stored.fft.shape[2], shape[2]), f.dtype) for s in series])
        nb = f.ndim - 3
        lift = stored.wall_lift(name)
        out[name] = _resample_z(matrices, f if lift is None else f - lift, fft.real_sharding(nb))
        if lift is not None:
            out[name] = out[name] + across.wall_lift(name)
    return across, out


@partial(jax.jit, static_argnums=2)
def _resample_z(matrices: jax.Array, f: jax.Array, sharding: jax.sharding.Sharding) -> jax.Array:
    """Each component of ``f`` ``(*batch, Nx, Ny, Nz)`` (a scalar: no batch) times its matrix of ``matrices``
    ``(components, Nz', Nz)`` along the last axis, laid out by ``sharding``: ``(*batch, Nx, Ny, Nz')``."""
    stacked = f.reshape(-1, *f.shape[-3:])
    out = jnp.einsum("cxyk,cjk->cxyj", stacked, matrices, precision=jax.lax.Precision.HIGHEST)
    return jax.lax.with_sharding_constraint(out.reshape(*f.shape[:-1], matrices.shape[1]), sharding)


def state_fields(source: Source, eq: Equation, params: Params, scratch: Path) -> dict[str, jax.Array]:
    """The real-space state fields of ``source`` on ``eq``'s grid and layout (see the module docstring);
    ``scratch``: a directory every process can write and read (the run directory)."""
    if tuple(source.shape) == tuple(eq.fft.shape):
        # the fields are what is read, not a multistep scheme's history (which a checkpoint may lack)
        return _stored_grid_fields(source, eq.carrying(None) if isinstance(eq, ImexEquation) else eq, params)
    fft = on_grid(eq.fft, source.shape)
    if fft is None:
        raise ConfigError("initial.path", str(source.index), f"a state whose grid decomposes over the "
                          f"{jax.device_count()} devices of this run", f"holds grid {list(source.shape)}")
    stored = type(eq)(fft, eq.box, eq.dtype, eq.physics)
    fields = _stored_grid_fields(source, stored, params)
    if eq.info.walls != "none" and fft.shape[2] != eq.fft.shape[2]:
        stored, fields = _across_plates(fields, stored, eq)
    grid = {name: f for name, f in fields.items() if name in stored.field_info}  # particle arrays stay as they are
    if tuple(stored.fft.shape) != tuple(eq.fft.shape):
        fields = {**fields, **_interpolate(grid, stored, eq, scratch)}
    get_logger().info("remapped %s from %s to %s", source.describe(), "x".join(map(str, source.shape)),
                      "x".join(map(str, eq.fft.shape)))
    return fields
