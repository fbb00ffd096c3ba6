"""Snapshots in a real ParaView: Debian's 5.11, run headless through ``pvpython tests/paraview_probe.py``.

What a user of ParaView needs: the default reader (``OpenDataFile``, Xdmf3) and the legacy "XDMF Reader"
both load every field; ParaView's x, y, z and a vector's components are this code's (the value at each
of ParaView's points is the field there); ParaView's own Gradient filter finds the Taylor-Green velocity
divergence-free and its curl equal to the stored vorticity, to finite-difference accuracy (a mirrored or
left-handed frame fails both by order one); ``snapshots/series.xdmf`` is a time series.

When pvpython is missing, ``scripts/paraview_local.sh`` installs it (apt, root only); elsewhere these
tests skip and say why. ``.ci/run`` sets SIMULATOR_REQUIRE_PARAVIEW=1, which turns that skip into a
failure, so CI cannot pass without having run them.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import h5py
import jax
import numpy as np
import pytest

from simulator.fft import BACKENDS
from simulator.output import hdf5 as io
from simulator.output.snapshots import write_snapshot
from simulator.runtime import build_mesh

from support import unavailable

ROOT = Path(__file__).parents[1]
PROBE = Path(__file__).with_name("paraview_probe.py")
LEGACY = Path(__file__).parent / "data" / "legacy_v1" / "ns_run" / "snapshots" / "s00000010.xdmf"
# Every axis its own grid spacing and wavenumber, so that no swap of axes goes unnoticed. Central
# differences of sin(k x) carry a relative error of about (k dx)^2 / 6: here at most 2.6 %, so 5 % of
# max |omega| passes correct files; mirrored or left-handed ones are off by 40 % to 200 %.
SHAPE, BOX = (16, 20, 24), (2 * np.pi, 3.0, 4.0)
TOLERANCE = 0.05

pytestmark = pytest.mark.paraview


def _unavailable(reason):
    unavailable("ParaView tests", "SIMULATOR_REQUIRE_PARAVIEW", reason)


@pytest.fixture(scope="module")
def pvpython():
    found = shutil.which("pvpython")
    if found:
        return found
    if os.geteuid() != 0:
        _unavailable("pvpython is not installed and installing it needs root (`sudo bash scripts/paraview_local.sh`)")
    if shutil.which("apt-get") is None:
        _unavailable("pvpython is not installed and there is no apt-get to install it")
    done = subprocess.run(["bash", str(ROOT / "scripts" / "paraview_local.sh")], capture_output=True, text=True,
                          timeout=1200)
    if done.returncode != 0:
        _unavailable(f"scripts/paraview_local.sh failed: {(done.stderr or done.stdout).strip()[-500:]}")
    return done.stdout.strip().splitlines()[-1]


def probe(pvpython, xdmf, reader, tmp_path):
    """What ParaView sees of ``xdmf`` through ``reader`` ("default" or "legacy"): see paraview_probe.py."""
    out = tmp_path / f"{xdmf.stem}_{reader}.npz"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}  # ParaView's own Python
    done = subprocess.run([pvpython, str(PROBE), str(xdmf), reader, str(out)], capture_output=True, text=True,
                          timeout=300, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    with np.load(out) as found:
        seen = {key: found[key] for key in found.files}
    seen["arrays"] = set(seen["arrays"].tolist())
    return seen


def gradient_errors(seen):
    """ParaView's max |div u| and max |curl u - omega| on the interior points (the filter differences
    one-sidedly on the boundary, which it does not know is periodic), both over max |omega|."""
    points = seen["points"]
    lo, hi = points.min(axis=0), points.max(axis=0)
    inside = np.all((points > lo + 1e-9 * (hi - lo)) & (points < hi - 1e-9 * (hi - lo)), axis=1)
    omega = seen["array_vorticity"]
    scale = np.abs(omega).max()
    return (float(np.abs(seen["div"][inside]).max() / scale),
            float(np.abs(seen["curl"] - omega)[inside].max() / scale))


def taylor_green(x, y, z):
    """A divergence-free Taylor-Green field in the anisotropic box and its curl, each (3, ...)."""
    a, b, c = (2 * np.pi / length for length in BOX)
    big_a, big_b = 1.0, -a / b  # big_a a + big_b b = 0: divergence-free
    sx, cx, sy, cy, sz, cz = np.sin(a * x), np.cos(a * x), np.sin(b * y), np.cos(b * y), np.sin(c * z), np.cos(c * z)
    u = np.stack([big_a * sx * cy * cz, big_b * cx * sy * cz, 0 * x])
    omega = np.stack([big_b * c * cx * sy * sz, -big_a * c * sx * cy * sz, (big_a * b - big_b * a) * sx * sy * cz])
    return u, omega


def write(tmp_path, devices, step, fields, box=BOX, stacked=()):
    """``fields`` (host arrays) as snapshot ``step`` written from 2 devices (2 shard blocks); its XDMF path."""
    fft = BACKENDS["slab"](next(iter(fields.values())).shape[-3:], build_mesh(BACKENDS["slab"], None, devices[:2]))
    sharded = {name: jax.make_array_from_callback(v.shape, fft.real_sharding(v.ndim - 3), lambda i, v=v: v[i])
               for name, v in fields.items()}
    return write_snapshot(tmp_path / f"s{step:08d}", sharded, {"step": step}, box, 0.0,
                          stacked=stacked).with_suffix(".xdmf")


def test_a_stack_of_scalar_fields_is_one_array_of_n_components(pvpython, devices, tmp_path):
    """Passive scalars (n, Nx, Ny, Nz), stored as a stack: both readers give one array of n components,
    component i at ParaView's point (X, Y, Z) being scalar i at this code's grid point there."""
    x, y, z = np.meshgrid(*(np.arange(n) * length / n for n, length in zip(SHAPE, BOX)), indexing="ij")
    theta = np.stack([x + 10 * y + 100 * z, np.sin(x) * y, -z])
    xdmf = write(tmp_path, devices, 0, {"scalar": theta}, stacked=["scalar"])
    spacing = np.array(BOX) / np.array(SHAPE)
    for reader in ("default", "legacy"):
        seen = probe(pvpython, xdmf, reader, tmp_path)
        i, j, k = np.rint(seen["points"] / spacing).astype(int).T
        np.testing.assert_array_equal(seen["array_scalar"], theta[:, i, j, k].T)


def test_both_readers_load_this_codes_frame_and_paraviews_gradient_agrees(pvpython, devices, tmp_path):
    x, y, z = np.meshgrid(*(np.arange(n) * length / n for n, length in zip(SHAPE, BOX)), indexing="ij")
    u, omega = taylor_green(x, y, z)
    xdmf = write(tmp_path, devices, 0, {"velocity": u, "vorticity": omega, "phi": x + 10 * y + 100 * z})
    for reader, name in (("default", "Xdmf3ReaderS"), ("legacy", "XdmfReader")):
        seen = probe(pvpython, xdmf, reader, tmp_path)
        assert str(seen["reader"]) == name and seen["arrays"] == {"velocity", "vorticity", "phi"}, (reader, seen)
        # ParaView's point (X, Y, Z) is grid point (X/dx, Y/dy, Z/dz) (its coordinates are single precision),
        # and the values there are this code's, components in this code's order
        spacing = np.array(BOX) / np.array(SHAPE)
        i, j, k = np.rint(seen["points"] / spacing).astype(int).T
        np.testing.assert_allclose(seen["points"], np.stack([i, j, k], axis=1) * spacing, rtol=1e-6, atol=1e-6)
        assert (i.max(), j.max(), k.max()) == tuple(n - 1 for n in SHAPE)
        np.testing.assert_array_equal(seen["array_phi"], (x + 10 * y + 100 * z)[i, j, k])
        np.testing.assert_array_equal(seen["array_velocity"], u[:, i, j, k].T)
        np.testing.assert_array_equal(seen["array_vorticity"], omega[:, i, j, k].T)
        div, curl = gradient_errors(seen)
        print(f"{reader} reader: ParaView max |div u| = {div:.3g}, max |curl u - omega| = {curl:.3g} (of max |omega|)")
        assert div < TOLERANCE and curl < TOLERANCE, (reader, div, curl)


def test_the_gradient_check_fails_mirrored_and_left_handed_frames(pvpython, devices, tmp_path):
    """The check above can fail: the files written before (ParaView's x was this code's z) give div u of
    order one in the legacy reader and no vectors at all in the default one; reversing the components of
    such files makes u divergence-free but its curl the opposite of the vorticity (a left-handed frame)."""
    old = {reader: probe(pvpython, LEGACY, reader, tmp_path) for reader in ("default", "legacy")}
    assert "velocity" not in old["default"]["arrays"]
    div, curl = gradient_errors(old["legacy"])
    print(f"schema-1 files, legacy reader: max |div u| = {div:.3g}, max |curl u - omega| = {curl:.3g}")
    assert div > 8 * TOLERANCE and curl > 8 * TOLERANCE
    # the same mirrored frame with the components reversed, written through today's writer
    x, y, z = np.meshgrid(*(np.arange(n) * length / n for n, length in zip(SHAPE, BOX)), indexing="ij")
    u, omega = taylor_green(x, y, z)
    mirror = {"velocity": u[::-1].transpose(0, 3, 2, 1), "vorticity": omega[::-1].transpose(0, 3, 2, 1)}
    seen = probe(pvpython, write(tmp_path, devices, 1, mirror, BOX[::-1]), "default", tmp_path)
    div, curl = gradient_errors(seen)
    print(f"left-handed frame: max |div u| = {div:.3g}, max |curl u - omega| = {curl:.3g}")
    assert div < TOLERANCE and curl > 1.5


def test_a_plane_between_plates_is_a_plane_at_its_heights_in_paraview(pvpython, devices, tmp_path):
    """A walled x-z plane stored as a plane ((Nz, Nx), vectors (Nz, Nx, 2)): both readers lay it one point deep in
    ParaView's X-Y plane, x along X and z along Y at the Gauss-Lobatto heights, each value at its point, and read its
    vectors with three components, the third zero, from padded/velocity (the zero is not stored). The probe reads the
    pipeline's own output: ParaView's Fetch gave a rectilinear grid's Y and Z the X coordinates."""
    from simulator.fft.bases import BOUNDED, Fourier

    shape, box = (1, 16, 8), (4.0, 4.0, 1.0)
    along = [Fourier(16, box[1]).points(), BOUNDED["chebyshev"](8, box[2]).points()]
    x, z = np.meshgrid(*along, indexing="ij")
    u = np.stack([np.sin(x) * z, np.cos(x) + 3 * z, 0 * x])[:, None]
    phi = (x + 10 * z)[None]
    fft = BACKENDS["slab"](shape, build_mesh(BACKENDS["slab"], None, devices[:2]))
    fields = {name: jax.make_array_from_callback(v.shape, fft.real_sharding(v.ndim - 3), lambda i, v=v: v[i])
              for name, v in {"velocity": u, "phi": phi}.items()}
    index = write_snapshot(tmp_path / "s00000000", fields, {"step": 0}, box, 0.0, bounded="chebyshev")
    with h5py.File(index, "r") as f:
        assert f["velocity"].shape == (8, 16, 2)
    for reader in ("default", "legacy"):
        seen = probe(pvpython, index.with_suffix(".xdmf"), reader, tmp_path)
        assert seen["arrays"] == {"velocity", "phi"}, (reader, seen["arrays"])
        points = seen["points"]
        i = np.abs(points[:, :1] - along[0][None]).argmin(axis=1)
        j = np.abs(points[:, 1:2] - along[1][None]).argmin(axis=1)
        np.testing.assert_allclose(points, np.stack([along[0][i], along[1][j], 0 * i], axis=1), atol=1e-6)
        assert len(points) == 16 * 8 and len(set(zip(i, j))) == 16 * 8  # every grid point once
        np.testing.assert_array_equal(seen["array_phi"], phi[0, i, j])
        np.testing.assert_array_equal(seen["array_velocity"], u[:, 0, i, j].T)


@pytest.mark.slow
def test_a_taylor_green_run_is_a_time_series_in_paraview(pvpython, tmp_path):
    """A tiny run through the CLI: series.xdmf has every snapshot's time, in both readers, and at the last
    one ParaView's velocity is the stored one and its curl the stored vorticity."""
    cmd = [sys.executable, "-m", "simulator", "run", str(ROOT / "configs" / "taylor_green.yaml"), "--cpu-devices", "2",
           "--set", "precision=float64", "--set", "grid.shape=[16,16,24]", "--set", "grid.box=[2*pi,2*pi,4*pi]",
           "--set", "time.t_end=0.3", "--set", "output.chunk=10", "--set", "output.snapshots.every=10", "--out", "run"]
    done = subprocess.run(cmd, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    indexes = sorted((tmp_path / "run" / "snapshots").glob("s*.h5"))
    times = []
    for index in indexes:
        with io.Snapshot(index) as snap:
            times.append(snap.attrs["time"])
    with io.Snapshot(indexes[-1]) as snap:
        velocity = snap.read("velocity")
    assert len(times) == 4
    for reader in ("default", "legacy"):
        seen = probe(pvpython, tmp_path / "run" / "snapshots" / "series.xdmf", reader, tmp_path)
        np.testing.assert_allclose(seen["times"], times, rtol=1e-15)
        # ParaView's point (X, Y, Z) is grid point (X/dx, Y/dy, Z/dz) of the last snapshot
        ijk = np.rint(seen["points"] / (2 * np.pi / np.array([16, 16, 12]))).astype(int).T
        np.testing.assert_array_equal(seen["array_velocity"], velocity[:, ijk[0], ijk[1], ijk[2]].T)
        div, curl = gradient_errors(seen)
        print(f"run, {reader} reader at t = {times[-1]}: max |div u| = {div:.3g}, max |curl u - omega| = {curl:.3g}")
        assert div < TOLERANCE and curl < TOLERANCE, (reader, div, curl)


def test_particle_snapshots_are_a_point_cloud_time_series_in_paraview(pvpython, devices, tmp_path):
    """particles/series.xdmf: both readers load one vertex per particle at its stored position, with its
    velocity, id and species, at every snapshot's time."""
    from simulator.output.particles import Share, gather_rows, write_particles

    rng = np.random.default_rng(3)
    box = (2 * np.pi, 3.0, 4.0)
    rows = {}
    for step, t in ((0, 0.0), (10, 0.5)):
        shares = {"a": Share(np.arange(7), rng.uniform(-2, 9, (7, 3)), rng.normal(size=(7, 3))),
                  "b": Share(np.arange(4), rng.uniform(0, 3, (4, 3)), rng.normal(size=(4, 3)))}
        rows[t] = gather_rows(["a", "b"], shares, [0, 7], box)
        write_particles(tmp_path / "particles" / f"s{step:08d}", shares, {"a": 7, "b": 4}, box, {"step": step}, t)
    for reader in ("default", "legacy"):
        seen = probe(pvpython, tmp_path / "particles" / "series.xdmf", reader, tmp_path)
        assert bool(seen["cloud"]), reader  # vertex cells: ParaView draws and filters them
        np.testing.assert_array_equal(seen["times"], [0.0, 0.5])
        last = rows[0.5]
        np.testing.assert_array_equal(seen["points"], last["position"])
        assert np.all((seen["points"] >= 0) & (seen["points"] < np.array(box)))
        np.testing.assert_array_equal(seen["array_velocity"], last["velocity"])
        np.testing.assert_array_equal(seen["array_species"], [0] * 7 + [1] * 4)
        np.testing.assert_array_equal(seen["array_id"], np.arange(11))



def test_a_plane_opens_as_a_one_layer_image_in_paraviews_x_and_y(pvpython, devices, tmp_path):
    """A plane's snapshot (its box (1, Nx, Ny)): both readers give an image of Nx x Ny points at Z = 0, ParaView's X
    and Y the plane's x and y, the velocity (u, v, 0) a vector in them, and ParaView's Gradient finds it
    divergence-free with its curl's z component the stored vorticity (a transposed or mirrored plane fails)."""
    shape, box = (16, 20), (2 * np.pi, 3.0)
    x, y = np.meshgrid(*(np.arange(n) * length / n for n, length in zip(shape, box)), indexing="ij")
    a, b = (2 * np.pi / length for length in box)
    u = np.stack([np.sin(a * x) * np.cos(b * y), -a / b * np.cos(a * x) * np.sin(b * y), 0 * x])[:, None]
    omega = ((a**2 / b + b) * np.sin(a * x) * np.sin(b * y))[None]
    xdmf = write(tmp_path, devices, 0, {"velocity": u, "vorticity": omega, "phi": (x + 10 * y)[None]},
                 box=(max(box), *box))
    spacing = np.array(box) / np.array(shape)
    for reader in ("default", "legacy"):
        seen = probe(pvpython, xdmf, reader, tmp_path)
        assert np.all(seen["points"][:, 2] == 0) and len(seen["points"]) == shape[0] * shape[1], reader
        i, j = np.rint(seen["points"][:, :2] / spacing).astype(int).T
        assert (i.max(), j.max()) == (shape[0] - 1, shape[1] - 1)
        np.testing.assert_array_equal(seen["array_phi"], (x + 10 * y)[i, j])
        np.testing.assert_array_equal(seen["array_velocity"], u[:, 0, i, j].T)
        inside = (i > 0) & (i < shape[0] - 1) & (j > 0) & (j < shape[1] - 1)
        scale = np.abs(omega).max()
        div = np.abs(seen["div"][inside]).max() / scale
        curl = np.abs(seen["curl"][inside, 2] - omega[0, i, j][inside]).max() / scale
        print(f"{reader} reader, a plane: ParaView max |div u| = {div:.3g}, max |curl_z u - omega| = {curl:.3g}")
        assert div < TOLERANCE and curl < TOLERANCE, (reader, div, curl)
