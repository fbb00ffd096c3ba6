"""One name per physics between plates: ``physics.name: convection`` and ``channel`` take the plane or the box and the
plates from ``grid.shape`` and ``grid.walls`` (simulator.config.grid.physics_member), so that switching a convection
config's plates is the one key ``grid.walls.velocity``; the shipped configs use the two names; a member's own name
(``convection2d_noslip``, 0.4's) still runs it, with one line naming its physics; a plate the physics does not take is
refused in the member's words."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from simulator.config import load
from simulator.errors import ConfigError

from support import command

CONFIGS = str(Path(__file__).resolve().parents[1] / "configs") + "/"

#: (config, overrides, the equation it runs)
CASES = [
    ("convection_2d_noslip.yaml", {}, "convection2d_noslip"),
    ("convection_2d_noslip.yaml", {"grid.walls.velocity": ["no-slip", "free-slip"]}, "convection2d_noslip"),
    ("convection_2d.yaml", {}, "convection2d"),
    ("convection_2d.yaml", {"grid.walls.velocity": ["free-slip", "free-slip"]}, "convection2d"),
    ("convection_3d_noslip.yaml", {}, "convection_noslip"),
    ("convection_3d.yaml", {}, "convection"),
    ("channel_poiseuille.yaml", {}, "channel2d"),
    ("channel_retau180.yaml", {}, "channel"),
]


@pytest.mark.parametrize(("config", "overrides", "runs"), CASES, ids=[f"{c[0]}-{c[2]}" for c in CASES])
def test_the_physics_name_runs_the_equation_of_its_grid_and_plates(config, overrides, runs):
    """Each shipped walled config, named by its physics, loads as the equation of its grid and plates."""
    physics = runs.partition("2d")[0].partition("_")[0]
    assert yaml.safe_load((Path(CONFIGS) / config).read_text())["physics"]["name"] == physics
    assert load(CONFIGS + config, overrides).physics.name == runs


def test_switching_a_convection_planes_plates_is_one_key():
    """From no-slip to free-slip plates and back on ``physics.name: convection``: only grid.walls.velocity changes (the
    scheme left to each equation's default)."""
    base = {"physics": {"name": "convection", "rayleigh": 1e5}, "grid": {"shape": [16, 9], "box": [4, 1],
                                                                        "walls": {"axis": "z"}}}
    plates = {"no-slip": "convection2d_noslip", "free-slip": "convection2d"}
    for velocity, runs in plates.items():
        cfg = load(base, {"grid.walls.velocity": [velocity, velocity]})
        assert cfg.physics.name == runs and list(cfg.grid.walls.velocity) == [velocity, velocity]
        assert cfg.physics.rayleigh == 1e5


def test_an_old_name_runs_its_equation_with_one_line_naming_the_new_one():
    """0.4's ``convection2d_noslip`` validates as that equation, and the console says once, in one line, the name to
    write (a process of its own: the note is once per process); the shipped config, named by its physics, validates
    with no such line."""
    def validate(*sets):
        done = subprocess.run([sys.executable, "-m", "simulator", "validate", CONFIGS + "convection_2d_noslip.yaml",
                               *sets], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0 and "name: convection2d_noslip" in done.stdout, done.stderr
        return [line for line in done.stderr.splitlines() if "is now physics.name" in line]

    notes = validate("--set", "physics.name=convection2d_noslip")
    assert len(notes) == 1 and "physics.name = 'convection2d_noslip' is now physics.name = 'convection'" in notes[0]
    assert validate() == []


def test_plates_the_physics_does_not_take_are_refused_in_one_line(capfd):
    """A channel between free-slip plates: the plane's channel refuses them in one line, exit 2."""
    with pytest.raises(ConfigError, match=r"^grid\.walls\.velocity = \['free-slip', 'free-slip'\] is not available"):
        load(CONFIGS + "channel_poiseuille.yaml", {"physics.name": "channel",
                                                    "grid.walls.velocity": ["free-slip", "free-slip"]})
    code, _, err = command(capfd, "validate", CONFIGS + "channel_poiseuille.yaml", "--set", "physics.name=channel",
                           "--set", "grid.walls.velocity=[free-slip,free-slip]")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "physics.name = channel2d" in err, err


def test_a_run_named_by_its_physics_runs_and_stores_the_equation_it_ran(tmp_path, capfd):
    """``simulator run`` of the no-slip plane as ``physics.name: convection``, two steps: exit 0, the log's first line
    names the equation and its physics, and the stored config the equation (a restart reads it as it ran)."""
    out = tmp_path / "run"
    sets = ["physics.name=convection", "grid.shape=[16, 9]", "fft.mesh=[1]", "time.cfl=null", "time.dt=0.01",
            "time.t_end=0.02"]
    code, _, err = command(capfd, "run", CONFIGS + "convection_2d_noslip.yaml", "--out", str(out),
                           *[a for s in sets for a in ("--set", s)])
    assert code == 0, err
    first = next(line for line in (out / "run.log").read_text().splitlines() if " run " in line)
    assert ": convection2d_noslip (physics.name convection on this plane and plates) on grid [16, 9]" in first, first
    assert yaml.safe_load((out / "config.yaml").read_text())["config"]["physics"]["name"] == "convection2d_noslip"


def test_free_slip_plates_run_on_the_chebyshev_basis_where_grid_walls_basis_asks():
    """``grid.walls.basis``: free-slip plates on sine and cosine series by default (auto, sincos), on Chebyshev series
    where it says chebyshev (the Chebyshev equation, which then also takes a fixed flux between free-slip plates);
    what cannot run is refused in one line naming the key: sincos with a no-slip plate, chebyshev for a sine and
    cosine equation named by its own name."""
    free = {"grid.walls.velocity": ["free-slip", "free-slip"]}
    config = CONFIGS + "convection_2d_noslip.yaml"
    assert load(config, {**free, "time.integrator": "rk4"}).physics.name == "convection2d"
    assert load(config, {**free, "grid.walls.basis": "sincos", "time.integrator": "rk4"}).physics.name == "convection2d"
    cfg = load(config, {**free, "grid.walls.basis": "chebyshev", "grid.walls.temperature": ["fixed-flux"] * 2})
    assert cfg.physics.name == "convection2d_noslip" and cfg.grid.walls.series == "chebyshev"
    assert load(CONFIGS + "convection_3d.yaml", {"grid.walls.basis": "chebyshev", "time.integrator": "rk222"}
                ).physics.name == "convection_noslip"
    with pytest.raises(ConfigError, match=r"^grid\.walls\.basis = 'sincos' cannot hold a no-slip plate; auto, "
                                          r"chebyshev or legendre with a no-slip plate"):
        load(config, {"grid.walls.basis": "sincos"})
    with pytest.raises(ConfigError, match=r"^grid\.walls\.basis = 'chebyshev' is not available for this equation; "
                                          r"auto or sincos for physics.name = convection2d .*physics.name convection "
                                          r"or convection2d_noslip$"):
        load(config, {**free, "physics.name": "convection2d", "grid.walls.basis": "chebyshev"})
    with pytest.raises(ConfigError, match=r"grid\.walls\.basis: chebyshev"):  # the fixed flux's own refusal says how
        load(config, {**free, "grid.walls.temperature": ["fixed-flux"] * 2, "time.integrator": "rk4"})


def test_plates_conditions_without_plates_are_said_to_be_ignored():
    """``grid.walls.*`` on a periodic grid (``grid.walls.axis`` null): one line per key, saying it is ignored and how
    to have plates (a process of its own: each line once per process)."""
    done = subprocess.run([sys.executable, "-m", "simulator", "validate", CONFIGS + "taylor_green.yaml", "--set",
                           "grid.walls.basis=chebyshev", "--set", "grid.walls.temperature=[fixed-flux, fixed-flux]"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    said = [line for line in done.stderr.splitlines() if "is ignored: grid.walls.axis is null" in line]
    assert len(said) == 2 and "grid.walls.basis" in said[0] and "grid.walls.temperature" in said[1], done.stderr
