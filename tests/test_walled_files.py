"""The files of a run between plates read as they look, with h5py as a user reads them: the ``box`` attribute against
the coordinates, the coordinates and fields named and in units, the plates' axis one name in every file."""

from __future__ import annotations

import logging
from pathlib import Path

import h5py
import numpy as np
import pytest

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

#: the walled runs, each on a small grid for a few steps: (config, overrides)
RUNS = {
    "convection": ("convection_2d_noslip.yaml", ["grid.shape=[16, 9]", "time.t_end=0.02", "time.dt=0.01"]),
    "channel": ("channel_poiseuille.yaml", ["grid.shape=[8, 9]", "time.t_end=0.02", "time.dt=0.01"]),
}


def cli(*args: str) -> int:
    """``simulator ARGS`` through the command's own function, the package logger left as it was."""
    from simulator.cli import main
    from simulator.log import LOGGER_NAME

    logger = logging.getLogger(LOGGER_NAME)
    handlers, propagate, level = list(logger.handlers), logger.propagate, logger.level
    try:
        return main(list(args))
    finally:
        logger.handlers[:] = handlers
        logger.propagate = propagate
        logger.setLevel(level)


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """Each of :data:`RUNS` run once: snapshots, profiles and spectra at t = 0 and at its end."""
    out = {}
    for name, (config, overrides) in RUNS.items():
        run = tmp_path_factory.mktemp(name) / "run"
        sets = [*overrides, "fft.mesh=[1]", "output.chunk=2", "output.snapshots.dt=0.02", "output.profiles.dt=0.02",
                "output.spectra.dt=0.02"]
        code = cli("run", str(CONFIGS / config), "--out", str(run),
                   *[arg for s in sets for arg in ("--set", s)])
        assert code == 0, name
        out[name] = run
    return out


@pytest.mark.parametrize("name", list(RUNS))
def test_a_walled_planes_box_attribute_gives_the_lengths_along_its_coordinates(runs, name):
    """``f.attrs["box"]`` of a walled plane's snapshot gives the lengths along x, y, z (``box_axes``), as its
    coordinates run: the bounded axis's last point is its length (Gauss-Lobatto points reach the top plate), the
    periodic one's points are i L / N (it was the box's (z, x, y) order: [4, 4, 1] for a 4 x 1 plane)."""
    with h5py.File(sorted((runs[name] / "snapshots").glob("s*.h5"))[-1]) as f:
        box, names = list(f.attrs["box"]), f.attrs["box_axes"]
        assert names == '["x", "y", "z"]'
        lx, ly = (4.0, 1.0) if name == "convection" else (2 * np.pi, 2.0)
        assert box[:2] == pytest.approx([lx, ly], rel=1e-15)
        assert f["y"][-1] == pytest.approx(box[1], rel=1e-15) and f["y"][0] == 0.0
        np.testing.assert_allclose(f["x"][...], np.arange(len(f["x"])) * box[0] / len(f["x"]), rtol=1e-15)
