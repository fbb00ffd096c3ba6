"""``output.tasks`` on a plane name the plane's own axes, as its snapshots, particles and figures do: x and y in the
plane, z normal to it (a slice normal to z is the plane, normal to x or y a line of it), and an index out of range is
refused with the plane's shape."""

import math

import numpy as np
import pytest

from simulator.output.tasks import read

from support import command

#: a Taylor-Green plane of unequal sides, so that no axis can stand for another
PLANE = """name: plane_tasks
precision: float64
grid: {shape: [16, 32], box: [2*pi, 4*pi]}
physics: {name: ns2d, viscosity: 1.0e-2}
initial: {name: taylor_green}
time: {integrator: rk4, dt: 0.01, t_end: 0.02}
output:
  chunk: 2
  tasks:
    - {name: whole, field: vorticity, reduce: slice, every: 2}
    - {name: line_x3, field: vorticity, reduce: slice, axis: x, index: 3, every: 2}
    - {name: line_y5, field: vorticity, reduce: slice, axis: y, index: 5, every: 2}
    - {name: v_along_x, field: velocity, component: y, reduce: profile, axis: x, every: 2}
"""


@pytest.fixture(scope="module")
def plane_run(tmp_path_factory):
    config = tmp_path_factory.mktemp("plane") / "plane.yaml"
    config.write_text(PLANE)
    return config


def test_a_planes_tasks_name_its_own_axes(plane_run, capfd, tmp_path):
    """The whole plane (the default slice, normal to z) over (x, y), its first row the exact Taylor-Green vorticity
    2 sin(2 pi x/Lx) sin(2 pi y/Ly) in float64; ``axis: x, index: 3`` the line x = x_3 over y, ``axis: y`` the line
    y = y_5 over x, each equal to the plane's; a profile along x is the mean over y (of v = -cos x sin y: zero)."""
    code, _, err = command(capfd, "run", str(plane_run), "--out", str(tmp_path / "run"))
    assert code == 0, err
    tasks = read(tmp_path / "run")
    whole, line_x, line_y = tasks["whole"], tasks["line_x3"], tasks["line_y5"]
    assert whole.dims == ("x", "y") and whole.values.shape == (2, 16, 32)
    x, y = whole.coords["x"], whole.coords["y"]
    np.testing.assert_allclose(x, np.arange(16) * 2 * math.pi / 16, rtol=0, atol=1e-15)
    np.testing.assert_allclose(y, np.arange(32) * 4 * math.pi / 32, rtol=0, atol=1e-15)
    exact = 2 * np.sin(x)[:, None] * np.sin(y / 2)[None, :]
    np.testing.assert_allclose(whole.values[0], exact, rtol=0, atol=1e-12)
    assert line_x.dims == ("y",) and line_y.dims == ("x",)
    np.testing.assert_array_equal(line_x.values, whole.values[:, 3, :])
    np.testing.assert_array_equal(line_y.values, whole.values[:, :, 5])
    assert line_x.attrs["position"] == pytest.approx(3 * 2 * math.pi / 16)
    assert line_x.attrs["long_name"].startswith("vorticity on the line x = 1.1781 (index 3)")
    profile = tasks["v_along_x"]
    assert profile.dims == ("x",) and profile.values.shape == (2, 16)
    assert profile.attrs["long_name"] == "velocity y component averaged over y, against x"
    np.testing.assert_allclose(profile.values, 0.0, rtol=0, atol=1e-12)


@pytest.mark.parametrize("task, said", [
    ("{name: far, field: vorticity, reduce: slice, axis: x, index: 16, every: 2}",
     "output.tasks[0].index = 16 is out of range; give a grid index 0..15 along x (grid.shape [16, 32])"),
    ("{name: far, field: vorticity, reduce: slice, axis: z, index: 1, every: 2}",
     "output.tasks[0].index = 1 is out of range; give a grid index 0..0 along z, normal to the plane (grid.shape "
     "[16, 32])"),
])
def test_a_planes_slice_index_out_of_range_names_the_planes_shape(task, said, plane_run, capfd):
    code, _, err = command(capfd, "validate", str(plane_run), "--set", f"output.tasks=[{task}]")
    assert code == 2 and err == f"error: {said}\n", err
