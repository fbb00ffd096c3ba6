"""Per-process HDF5 shard files, the virtual-dataset index, and reading them back."""

import json
import xml.etree.ElementTree as ET

import h5py
import jax
import numpy as np
import pytest

from simulator.output import hdf5 as io
from simulator.output.xdmf import write_xdmf
from simulator.fft import BACKENDS
from simulator.runtime import build_mesh


def backend(name, n, devices, shape=(8, 16, 32), mesh=None):
    cls = BACKENDS[name]
    return cls(shape, build_mesh(cls, mesh, devices[:n]))


def sharded(fft, host, spectral=False):
    sharding = fft.spectral_sharding(host.ndim - 3) if spectral else fft.real_sharding(host.ndim - 3)
    return jax.make_array_from_callback(host.shape, sharding, lambda i: host[i])


@pytest.mark.parametrize("name, n, mesh", [("single", 1, None), ("slab", 2, None), ("slab", 8, None),
                                           ("jaxdecomp", 8, (2, 4)), ("pencil", 8, None)])
def test_index_read_with_plain_h5py_equals_the_field(tmp_path, devices, name, n, mesh):
    fft = backend(name, n, devices, mesh=mesh)
    u = np.random.default_rng(0).standard_normal((3, *fft.shape))
    rho = np.random.default_rng(1).standard_normal(fft.shape).astype(np.float32)
    k = fft.rfft(sharded(fft, u))
    index = io.write(tmp_path / "s0", {"u": io.Field(sharded(fft, u)), "rho": io.Field(sharded(fft, rho)),
                                       "u_hat": io.Field(k, fft.perm)}, {"step": 3, "time": 0.25, "config": {"a": 1}})
    assert sorted(p.name for p in (tmp_path / "s0").iterdir()) == ["p0000.h5"]  # one process, one file
    with h5py.File(index, "r") as f:  # plain h5py, no simulator code
        np.testing.assert_array_equal(f["u"][:], u)
        np.testing.assert_array_equal(f["rho"][:], rho)
        assert f["rho"].dtype == np.float32
        canonical_k = np.transpose(fft.reference_spectrum(u, True), np.argsort((0, *(1 + p for p in fft.perm))))
        np.testing.assert_allclose(f["u_hat"][:], canonical_k, rtol=0, atol=1e-12 * np.abs(canonical_k).max())
        assert f.attrs["step"] == 3 and json.loads(f.attrs["config"]) == {"a": 1}
        assert f.attrs["schema_version"] == io.SCHEMA_VERSION
    with h5py.File(tmp_path / "s0" / "p0000.h5", "r") as f:
        assert f.attrs["step"] == 3 and f.attrs["time"] == 0.25 and f.attrs["schema_version"] == io.SCHEMA_VERSION
        assert list(f["u"].attrs["global_shape"]) == list(u.shape)
        blocks = [ds for ds in f["u"].values()]
        # one dataset per distinct block (replicated blocks written once), each with its global offset
        assert len(blocks) == len(io.blocks(sharded(fft, u)))
        assert sum(ds.size for ds in blocks) == u.size


def test_a_plane_reads_only_what_it_needs_and_read_into_reshards(tmp_path, devices):
    src = backend("slab", 8, devices)
    u = np.random.default_rng(2).standard_normal((3, *src.shape))
    index = io.write(tmp_path / "s1", {"u": io.Field(sharded(src, u))}, {"step": 0, "time": 0.0})
    with io.Snapshot(index) as snap:
        np.testing.assert_array_equal(snap.read("u", (1, slice(None), slice(None), 5)), u[1, :, :, 5])
        assert snap.attrs["step"] == 0 and snap.fields == ["u"]
        for name, n, mesh in [("slab", 4, None), ("jaxdecomp", 8, (2, 4)), ("single", 1, None)]:
            dst = backend(name, n, devices, mesh=mesh)
            back = io.read_into(snap, "u", u.shape, dst.real_sharding(1))
            assert back.sharding == dst.real_sharding(1)
            np.testing.assert_array_equal(np.asarray(back), u)


def test_missing_or_incomplete_shards_are_refused(tmp_path, devices):
    fft = backend("slab", 4, devices)
    u = np.ones((2, *fft.shape))
    index = io.write(tmp_path / "s2", {"u": io.Field(sharded(fft, u))}, {"step": 0, "time": 0.0})
    shard = tmp_path / "s2" / "p0000.h5"
    with h5py.File(shard, "a") as f:
        f.attrs["complete"] = False
    with pytest.raises(io.IncompleteOutputError, match=r"p0000\.h5 is incomplete"):
        io.Snapshot(index)
    shard.unlink()
    with pytest.raises(io.IncompleteOutputError, match=r"p0000\.h5 is missing or unreadable"):
        io.Snapshot(index)
    shard.write_bytes(b"not hdf5")
    with pytest.raises(io.IncompleteOutputError, match=r"missing or unreadable"):
        io.Snapshot(index)
    with pytest.raises(io.IncompleteOutputError, match="does not exist"):
        io.Snapshot(tmp_path / "nope.h5")


def test_xdmf_points_at_the_index(tmp_path, devices):
    fft = backend("slab", 2, devices)
    index = io.write(tmp_path / "s3", {"v": io.Field(sharded(fft, np.zeros((3, *fft.shape)))),
                                       "rho": io.Field(sharded(fft, np.zeros(fft.shape)))}, {"step": 0, "time": 0.0})
    xdmf = write_xdmf(index, {"v": ((3, *fft.shape), 8), "rho": (fft.shape, 8)}, (1.0, 2.0, 4.0), 0.5)
    root = ET.parse(xdmf).getroot()
    grid = root.find("Domain/Grid")
    assert grid.find("Topology").get("Dimensions") == "8 16 32"
    assert grid.find("Time").get("Value") == "0.5"
    names = {a.get("Name"): a.get("AttributeType") for a in grid.findall("Attribute")}
    assert names == {"v": "Vector", "rho": "Scalar"}
    refs = [d.text for d in root.iter("DataItem") if d.get("Format") == "HDF"]
    assert refs and all(r.startswith("s3.h5:/") for r in refs)
