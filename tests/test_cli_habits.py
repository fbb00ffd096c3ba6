"""What a user arriving from another code, or from another command, meets on the command line: a shipped config
turned into its variants by flags alone (``--unset`` removes a key), a misspelt flag answered with the nearest ones,
another code's name for a key answered with this project's, a missing path refused before JAX starts."""

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from support import command

ROOT = Path(__file__).parents[1]
MIXED = str(ROOT / "configs" / "fdm_mixed.yaml")  # a wave (m22 = 0.15) and particles
#: the mixed config made small: 16^3, 16^3 particles, z = 127 to 63
SMALL_COSMO = ["--set", "grid.shape=16", "--set", "physics.cdm_particles=4096", "--set", "physics.z_end=63",
               "--set", "physics.output_redshifts=[127,63]", "--set", "precision=float32"]


def test_the_mixed_config_runs_its_particles_alone_by_flags(tmp_path):
    """configs/fdm_mixed.yaml to cold dark matter alone without editing the file: fdm_fraction 0 and the wave's one
    key it gives removed (``--unset``); the run holds particles, no wave, and its resolved config no m22."""
    r = subprocess.run([sys.executable, "-m", "simulator", "run", MIXED, "--set", "physics.fdm_fraction=0",
                        "--unset", "physics.m22", *SMALL_COSMO, "--cpu-devices", "1", "--out", "cdm"],
                       cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    physics = yaml.safe_load((tmp_path / "cdm" / "config.yaml").read_text())["config"]["physics"]
    assert physics["fdm_fraction"] == 0 and "m22" not in physics and physics["cdm_particles"] == 4096
    assert sorted(p.name for p in (tmp_path / "cdm" / "particles").glob("s*.h5"))  # the particles' snapshots


def test_unset_then_set_applies_in_order_and_validate_shows_the_default(capfd):
    """``--unset`` and ``--set`` apply in the order given: a key removed takes its default, set again its value."""
    code, out, err = command(capfd, "validate", MIXED, "--unset", "time.cfl")
    assert code == 0, err
    assert yaml.safe_load(out)["time"]["cfl"] is None  # the default (no CFL limit), not the file's 1.0
    code, out, err = command(capfd, "validate", MIXED, "--unset", "time.cfl", "--set", "time.cfl=0.5")
    assert code == 0 and yaml.safe_load(out)["time"]["cfl"] == 0.5, err
    code, out, err = command(capfd, "validate", MIXED, "--set", "time.cfl=0.5", "--unset", "time.cfl")
    assert code == 0 and yaml.safe_load(out)["time"]["cfl"] is None, err
    code, out, err = command(capfd, "validate", MIXED, "--unset", "initial.name")  # a variant's name: the default's
    assert code == 0 and yaml.safe_load(out)["initial"]["name"] == "gaussian", err


@pytest.mark.parametrize("args, said", [
    (["run", MIXED, "--output", "o"], "simulator run: unrecognized arguments: --output o; did you mean --out? "
                                      "(simulator run --help lists its options)"),
    (["run", MIXED, "--cpu_devices", "2"], "did you mean --cpu-devices?"),  # a config key's spelling
    (["validate", MIXED, "--sett", "grid.shape=16"], "simulator validate: unrecognized arguments: --sett "
                                                     "grid.shape=16; did you mean --set?"),
    (["plot", "run", "--feild", "vorticity"], "simulator plot: unrecognized arguments: --feild vorticity; did you mean "
                                              "--field?"),
    (["sweep", "s.yaml", "--colect"], "simulator sweep: unrecognized arguments: --colect; did you mean --collect?"),
    (["export", "run", "--max_size", "1GiB"], "did you mean --max-size?"),
    (["plan", MIXED, "--cpu_devices", "2", "--porfile", "h100"],
     "--cpu_devices: did you mean --cpu-devices?; --porfile: did you mean --profile? (simulator plan --help"),
])
def test_a_misspelt_flag_is_answered_with_the_nearest_of_its_command(args, said, capfd):
    code, out, err = command(capfd, *args)
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and err.startswith("error: ") and said in err, err


def test_a_flag_nothing_is_near_gets_the_bare_answer(capfd):
    code, _, err = command(capfd, "run", MIXED, "--zzz")
    assert code == 2 and err == "error: simulator run: unrecognized arguments: --zzz\n"
