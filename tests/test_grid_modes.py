"""``grid.modes``: the modes to keep, from which the config chooses the points per axis (the fewest its basis's 2/3
rule keeps them with, raised to a fast transform's length); the choice at load, in the resolved config, in
``simulator validate``'s line, and the one-line refusals."""

from __future__ import annotations

import numpy as np
import pytest
import yaml

import simulator.config as C
from simulator.config.grid import MIN_ACROSS
from simulator.errors import ConfigError
from simulator.fft import bases

from support import command

NO_SLIP = {"axis": "z", "velocity": ["no-slip", "no-slip"]}


def _grid(physics: str, **grid: object) -> C.Config:
    return C.load({"physics": {"name": physics}, "grid": grid})


@pytest.mark.parametrize("physics, grid, shape", [
    # Dedalus' 256 x 64 modes between no-slip plates: |m| <= 127 needs 382 (2 x 191), 384 = 2^7 x 3; degrees <= 63
    # need 95 points (2/3 rule: 3 k < 2 N), 2 x 94 and 2 x 95 are not FFT-friendly, 2 x 96 is
    ("convection", {"modes": [256, 64], "box": [4, 1], "walls": NO_SLIP}, [384, 97]),
    ("convection", {"modes": [1024, 256], "box": [4, 1], "walls": NO_SLIP}, [1536, 385]),
    # free-slip plates: the sine and cosine series of N points, N FFT-friendly (degree <= 63 needs 95: 96)
    ("convection", {"modes": [256, 64], "box": [4, 1], "walls": {"axis": "z"}}, [384, 96]),
    # the Legendre basis: a dense transform, any count: the fewest, 95
    ("convection", {"modes": [256, 64], "box": [4, 1], "walls": {**NO_SLIP, "basis": "legendre"}}, [384, 95]),
    # a periodic box: each axis even and FFT-friendly (|m| <= 31 needs 94: 96; |m| <= 2 needs 7: 8)
    ("navier_stokes", {"modes": [64, 64, 5]}, [96, 96, 8]),
    ("navier_stokes", {"modes": 32}, [48, 48, 48]),  # one number: a cube of modes
    ("ns2d", {"modes": 64}, [96, 96]),  # a square, for a planar equation
])
def test_the_grid_is_chosen_from_the_modes(physics, grid, shape):
    """The chosen shape, checked against each basis's own keep rule (:meth:`simulator.fft.bases.Axis.keep`): it keeps
    the modes asked and transforms fast, and no fewer points (down to the least the basis runs with) do both."""
    cfg = _grid(physics, **grid)
    assert list(cfg.grid.shape) == shape and cfg.grid.modes is not None
    for m, basis in zip(cfg.grid.modes, cfg.grid.domain()[-len(shape):], strict=True):
        kind = type(basis)
        asked = np.arange(-kind.top_mode(m), kind.top_mode(m) + 1) if kind is bases.Fourier else np.arange(m)
        assert basis.keep(asked).all() and kind.fast(basis.size)  # the grid keeps every mode asked, fast
        least = MIN_ACROSS.get(cfg.grid.walls.bounded, 2) if basis.bounded else 2
        for n in range(least, basis.size):  # no fewer points keep them with a fast transform
            assert not (kind(n, basis.length).keep(asked).all() and kind.fast(n)), n


def test_the_resolved_config_shows_the_chosen_shape_and_reads_back_as_the_same_run():
    """What the run saves (the resolved config) holds the modes asked and the shape chosen; read back as a stored
    config it is the same config; an override of the modes on it chooses again, one of the shape takes the points."""
    cfg = _grid("convection", modes=[256, 64], box=[4, 1], walls=NO_SLIP)
    written = C.to_dict(cfg)
    assert written["grid"]["shape"] == [384, 97] and written["grid"]["modes"] == [256, 64]
    assert C.from_dict(written, stored=True) == cfg
    again = C.load(written, {"grid.modes": [128, 32]}, stored=True)
    assert list(again.grid.shape) == [192, 49] and list(again.grid.modes) == [128, 32]
    points = C.load(written, {"grid.shape": [64, 33]}, stored=True)
    assert list(points.grid.shape) == [64, 33] and points.grid.modes is None


@pytest.mark.parametrize("grid, said", [
    ({"modes": [256, 64], "shape": [384, 97]}, "grid.modes = [256, 64] is given with grid.shape = [384, 97]; "
                                               "grid.modes (the modes to keep: the points are chosen) or "
                                               "grid.shape (the points), not both"),
    ({"modes": [256, 0]}, "grid.modes = [256, 0] is out of range; every entry must be >= 1"),
    ({"modes": [256, -4]}, "grid.modes = [256, -4] is out of range"),
    ({"modes": [256, 64, 64]}, "grid.modes = [256, 64, 64] has 3 entries; two, [Mx, Mz], for a plane "
                               "(physics.name = convection2d_noslip)"),
    ({"modes": [256, 64, 64, 8]}, "grid.modes = [256, 64, 64, 8] has 4 entries"),
    ({"modes": [256, 6.5]}, "grid.modes[1] = 6.5 has the wrong type; expected an integer"),
])
def test_bad_modes_are_refused_in_one_line_naming_the_key(grid, said):
    with pytest.raises(ConfigError) as err:
        _grid("convection2d_noslip", box=[4, 1], walls=NO_SLIP, **grid)
    assert said in str(err.value) and "\n" not in str(err.value), str(err.value)


def test_validate_prints_the_modes_asked_and_the_points_chosen(capfd, tmp_path):
    """``simulator validate`` of a config giving the modes: its YAML (stdout) holds the chosen shape, and one line on
    stderr says the modes, the points and why."""
    path = tmp_path / "modes.yaml"
    path.write_text(yaml.safe_dump({"physics": {"name": "convection"},
                                    "grid": {"modes": [256, 64], "box": [4, 1], "walls": NO_SLIP}}))
    code, out, err = command(capfd, "validate", str(path))
    assert code == 0, err
    assert yaml.safe_load(out)["grid"]["shape"] == [384, 97]
    line = ("grid.modes [256, 64] -> grid.shape [384, 97]: the fewest points whose 2/3 rule keeps the modes, with a "
            "fast transform (x: Fourier |m| <= 127 needs 382, 384 points: FFT of 384 = 2^7 x 3; z: Chebyshev degrees "
            "<= 63 needs 95, 97 points: FFT of 192 = 2^6 x 3)")
    assert line in err.splitlines(), err


def test_a_restart_compares_the_shape_not_the_modes_asked():
    """A run asked by its modes restarts from a config giving the same points (and back): the modes are a record of
    what was asked (restart="free"), the shape is what the state holds; another shape is a change."""
    from simulator.run.restart import physics_changes

    by_modes = _grid("convection", modes=[256, 64], box=[4, 1], walls=NO_SLIP)
    by_points = _grid("convection", shape=[384, 97], box=[4, 1], walls=NO_SLIP)
    assert physics_changes(C.to_dict(by_modes), by_points) == []
    assert physics_changes(C.to_dict(by_points), by_modes) == []
    finer = _grid("convection", modes=[256, 96], box=[4, 1], walls=NO_SLIP)
    assert physics_changes(C.to_dict(by_modes), finer) == ["grid.shape"]
