"""The pencil backend with walls (simulator.fft.pencil): a walled field's transforms on a 2 x 2 mesh, laid out as real
space (every coefficient of a mode's column on one device), and the free-slip and no-slip convection boxes and the
channel box stepped there as on one device, in float64; jaxdecomp's refusal of walls."""

from __future__ import annotations

import re

import jax
import numpy as np
import pytest

from simulator.fft import BACKENDS, build_mesh
from simulator.fft.bases import SERIES

from support import advance, command, simulation

PENCIL = ("pencil", 4, (2, 2))
#: a box dividing over the 2 x 2 mesh (its Nz over all 4 devices), small enough to compile in seconds
SHAPE = (4, 8, 8)


def test_the_walled_transforms_on_a_pencil_are_one_devices_and_keep_each_column_whole(devices):
    """Every series (sine, cosine, Chebyshev) on a pencil of 2 x 2: the spectrum one device computes, bitwise in
    layout and to round-off in value, laid out as real space (z whole on each device), and back to the field."""
    cls, one = BACKENDS["pencil"], BACKENDS["single"]
    fft = cls(SHAPE, build_mesh(cls, [2, 2], devices[:4]))
    fft.walls = True
    single = one(SHAPE, build_mesh(one, None, devices[:1]))
    x = np.random.default_rng(3).standard_normal((2, *SHAPE))
    field = jax.device_put(x, fft.real_sharding(1))
    for series in SERIES:
        spectrum = fft.forward_walls(field, series)
        assert spectrum.sharding.is_equivalent_to(fft.real_sharding(1), 5)
        assert spectrum.sharding.is_equivalent_to(fft.spectral_sharding(1), 5)
        want = np.asarray(single.forward_walls(x, series))
        assert np.abs(np.asarray(spectrum) - want).max() < 1e-13 * np.abs(want).max()
        back = fft.inverse_walls(spectrum, series)
        assert back.sharding.is_equivalent_to(fft.real_sharding(1), 5)
        if series != "odd":  # the sine series drops its mode Nz (simulator.fft.walls)
            assert np.abs(np.asarray(back) - x).max() < 1e-13
        assert np.abs(np.asarray(back) - np.asarray(single.inverse_walls(want, series))).max() < 1e-13


def fields(sim, state, names) -> dict[str, np.ndarray]:
    return {k: np.asarray(v) for k, v in sim.fields(state, *names).items()}


BOXES = {
    "convection": ({"physics__name": "convection", "grid__box": [2.0, 2.0, 1.0], "initial__name": "conductive",
                    "initial__amplitude": 0.1, "physics__rayleigh": 1e5}, ("velocity", "theta")),
    "convection_noslip": ({"physics__name": "convection_noslip", "grid__box": [2.0, 2.0, 1.0],
                           "grid__walls__axis": "z", "grid__walls__velocity": ["no-slip", "no-slip"],
                           "initial__name": "conductive", "initial__amplitude": 0.1, "physics__rayleigh": 1e5},
                          ("velocity", "theta")),
    "channel": ({"physics__name": "channel", "initial__name": "laminar", "initial__amplitude": 0.1,
                 "physics__reynolds": 5000.0}, ("velocity",)),
    # the Legendre basis's transforms across the plates, whole columns on each device of the pencil
    "convection_legendre": ({"physics__name": "convection", "grid__box": [2.0, 2.0, 1.0], "grid__walls__axis": "z",
                             "grid__walls__velocity": ["no-slip", "free-slip"], "grid__walls__basis": "legendre",
                             "initial__name": "conductive", "initial__amplitude": 0.1, "physics__rayleigh": 1e5},
                            ("velocity", "theta")),
}


@pytest.mark.parametrize("name", BOXES)
def test_a_walled_box_on_a_pencil_equals_the_single_device_run(devices, name):
    """Noise (0.1) for 5 steps of 0.01 (convection at Ra = 1e5, on Chebyshev and on Legendre series below a free
    surface, a channel's Poiseuille flow at Re = 5000): on a pencil of 2 x 2 the fields end where one device's end,
    to 1e-12."""
    values, names = BOXES[name]
    values = {"grid__shape": list(SHAPE), **values}
    single = simulation(devices, **values)
    want = fields(single, advance(single, single.initial_state(), 0.01, 5), names)
    sim = simulation(devices, PENCIL, **values)
    assert "walled spectrum" in sim.fft.describe()
    got = fields(sim, advance(sim, sim.initial_state(), 0.01, 5), names)
    for field in names:
        assert np.abs(want[field]).max() > 1e-3
        assert np.abs(got[field] - want[field]).max() < 1e-12 * np.abs(want[field]).max(), field


BAD = [
    (["--set", "fft.backend=jaxdecomp"], r"^error: fft\.backend = 'jaxdecomp' does not take walls; one of pencil, "
     r"single, slab with grid\.walls"),
    (["--set", "fft.backend=pencil", "--set", "grid.shape=[8,8,6]", "--cpu-devices", "4"],
     r"^error: grid\.shape = \[8, 8, 6\] does not divide over the mesh; pencil with grid\.walls on mesh \[2, 2\] "
     r"needs Nz = 6 divisible by 4"),
]


@pytest.mark.parametrize(("args", "pattern"), BAD, ids=["jaxdecomp", "pencil-nz"])
def test_walls_a_backend_cannot_take_are_one_line_exit_2_and_nothing_written(tmp_path, capfd, args, pattern):
    config = tmp_path / "rb.yaml"
    config.write_text("physics: {name: convection}\ngrid: {shape: [8, 8, 8], box: [2, 2, 1], walls: {axis: z}}\n")
    code, out, err = command(capfd, "run", str(config), "--out", str(tmp_path / "run"), *args)
    assert code == 2 and len(err.strip().splitlines()) == 1 and re.match(pattern, err.strip()), err
    assert not (tmp_path / "run").exists()
