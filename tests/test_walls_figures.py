"""What ``simulator plot`` draws of a run between plates: the temperature slice on the heights the grid has (the
free-slip cell centres, the no-slip Gauss-Lobatto points) from plate to plate, Nu(t) at each plate and through the
volume, and the horizontally averaged profiles against the wall-normal coordinate."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from matplotlib.collections import QuadMesh

import simulator
from simulator.fft.bases import Chebyshev, SinCos
from simulator.plots.profiles import PANELS

from support import command

CONFIGS = Path(__file__).resolve().parents[1] / "configs"

#: one critical wavelength of no-slip convection wide
LX = 2 * math.pi / 3.117


def walled_run(capfd, run, physics: str, shape: str) -> None:
    code, _, err = command(capfd, "run", str(CONFIGS / "convection_2d_noslip.yaml"), "--out", str(run),
                           "--overwrite",
                           "--set", f"physics.name={physics}", "--set", f"grid.shape={shape}",
                           "--set", f"grid.box=[{LX}, 1]", "--set", "physics.rayleigh=3000",
                           "--set", "time.integrator=" + ("rk222" if physics.endswith("noslip") else "etdrk4"),
                           "--set", "grid.walls.velocity=" + ("[no-slip, no-slip]" if physics.endswith("noslip")
                                                              else "[free-slip, free-slip]"),
                           "--set", "time.t_end=0.5", "--set", "time.dt=0.05", "--set", "output.chunk=5",
                           "--set", "output.snapshots.dt=0.5", "--set", "output.profiles.dt=0.1",
                           "--set", "output.spectra.dt=0.5", "--set", "runtime.cpu_devices=8", "--set", "fft.mesh=[2]")
    assert code == 0, err


@pytest.mark.parametrize("physics, basis", [("convection2d_noslip", Chebyshev), ("convection2d", SinCos)])
def test_simulator_plot_draws_a_convection_run_between_its_plates(capfd, tmp_path, physics, basis):
    """``simulator plot`` of a walled plane writes slice.png, timeseries.png (Nu at each plate and through the
    volume) and profiles.png; the slice's cells lie on the grid's own heights, their edges the midpoints between
    neighbours, running from the bottom plate at 0 to the top one at 1 (not from i L / N, half a cell off and
    uniform where Gauss-Lobatto points crowd at the plates); the profiles are drawn against those heights."""
    run = tmp_path / "run"
    walled_run(capfd, run, physics, "[8, 8]")
    code, out, err = command(capfd, "plot", str(run))
    assert code == 0, err
    for png in ("slice.png", "timeseries.png", "profiles.png"):
        assert (run / "plots" / png).is_file(), (png, out)
    results = simulator.load_run(run)
    heights = basis(8, 1.0).points()
    mesh = next(c for c in results.plot.slice().axes[0].collections if isinstance(c, QuadMesh))
    edges = mesh.get_coordinates()[:, 0, 1]
    np.testing.assert_allclose(edges, np.concatenate([[0.0], (heights[1:] + heights[:-1]) / 2, [1.0]]),
                               rtol=0, atol=1e-15)
    assert np.all((edges[:-1] < heights) & (heights < edges[1:]) | np.isin(heights, [0.0, 1.0]))
    # drawn at the layer's own shape, LX wide and 1 high (the mesh filled a square before), and coloured over the
    # temperature's own range within [0, 1] (a diverging map's -1..1 left half its colours unused)
    figure = mesh.figure
    figure.canvas.draw()
    drawn = figure.axes[0].get_window_extent()
    assert drawn.width / drawn.height == pytest.approx(LX, rel=0.02), (drawn.width, drawn.height)
    temperature = mesh.get_array()
    assert mesh.get_clim() == (pytest.approx(temperature.min()), pytest.approx(temperature.max()))
    assert -1e-12 < temperature.min() < temperature.max() < 1 + 1e-12
    series = results.plot.timeseries().axes[0]
    assert [line.get_label() for line in series.get_lines()][:3] == ["$Nu$", "$Nu_{bottom}$", "$Nu_{top}$"]
    profiles = results.plot.profiles()
    assert [ax.get_xlabel() for ax in profiles.axes] == [label for _, label in PANELS]
    np.testing.assert_array_equal(profiles.axes[0].get_lines()[0].get_ydata(), heights)
    assert profiles.axes[0].get_ylim() == (0.0, 1.0)
