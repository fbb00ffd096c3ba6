"""Two processes x 2 devices write one snapshot; both check it against the field they built.

Run by tests/test_multiprocess.py through simulator.launch with the output directory as argument.
The field is a known function of the global index, so every process can build the expected global
array without any exchange; each writes only its own blocks through simulator.output.hdf5.write, then reads
the index back with plain h5py (the whole field) and compares. The same field written as a snapshot
(stored in ParaView's axis order) reads back in canonical order through Snapshot, on both processes.
Written a component at a time (``hdf5.Parts``, as a run's snapshots are), it is the same file. Exit 0 when
both agree exactly.
"""

import sys
from pathlib import Path

import numpy as np

from simulator import runtime

runtime.configure_devices(2, "float64")
from simulator.config import load  # noqa: E402

runtime.initialize_processes(load(None))

import h5py  # noqa: E402
import jax  # noqa: E402

from simulator.fft import BACKENDS  # noqa: E402
from simulator.output import hdf5 as io  # noqa: E402
from simulator.output.snapshots import write_snapshot  # noqa: E402

shape = (3, 8, 12, 16)
expected = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
out = Path(sys.argv[1])
for name in ("slab", "jaxdecomp"):
    cls = BACKENDS[name]
    fft = cls(shape[1:], runtime.build_mesh(cls, None))
    field = jax.make_array_from_callback(shape, fft.real_sharding(1), lambda idx: expected[idx])
    index = io.write(out / name, {"u": io.Field(field)}, {"step": 0, "time": 0.0})
    files = sorted(p.name for p in (out / name).iterdir())
    with h5py.File(index, "r") as f:
        got = f["u"][:]
    assert files == ["p0000.h5", "p0001.h5"], files
    assert np.array_equal(got, expected), (name, jax.process_index())
    print(f"process {jax.process_index()}: {name} snapshot equals the field", flush=True)
    index = write_snapshot(out / f"{name}_snapshot" / "s00000000", {"u": field}, {"step": 0}, (1.0, 1.0, 1.0), 0.0)
    with io.Snapshot(index) as snap, h5py.File(index, "r") as f:
        assert np.array_equal(snap.read("u"), expected), (name, jax.process_index())
        assert np.array_equal(f["u"][:], expected.transpose(3, 2, 1, 0)), (name, jax.process_index())
    if jax.process_index() == 0:
        assert (index.parent / "series.xdmf").is_file() and index.with_suffix(".xdmf").is_file()
    print(f"process {jax.process_index()}: {name} snapshot in ParaView order reads back canonical", flush=True)
    # the same field given a component at a time (a run's snapshots: hdf5.Parts), one collective call each: the
    # same shard file, byte for byte, and an index of the same field (its bytes hold the second it was written)
    take = jax.jit(lambda a, i: a[i], static_argnums=1, out_shardings=fft.real_sharding(0))
    parts = io.Parts(shape, field.dtype, fft.real_sharding(1), lambda i, take=take, field=field: take(field, i))
    again = write_snapshot(out / f"{name}_parts" / "s00000000", {"u": parts}, {"step": 0}, (1.0, 1.0, 1.0), 0.0)
    shard = f"s00000000/p{jax.process_index():04d}.h5"
    assert (again.parent / shard).read_bytes() == (index.parent / shard).read_bytes(), name
    with h5py.File(again, "r") as f:
        assert np.array_equal(f["u"][:], expected.transpose(3, 2, 1, 0)), (name, jax.process_index())
    print(f"process {jax.process_index()}: {name} snapshot written a component at a time is the same file", flush=True)
