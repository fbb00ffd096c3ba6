"""What a run is asked for on its command line and in its ``runtime`` section is what it does, or it says so: the
overrides applied in the order given, ``runtime.max_wall`` counted from the process's start, every ``runtime.*``
key honoured or refused in one line, a GPU asked for and not found said in the run and in ``simulator info``."""

from pathlib import Path

import yaml

from support import command

ROOT = Path(__file__).parents[1]
SHEAR = str(ROOT / "configs" / "double_shear_layer.yaml")  # a plane whose file gives no physics.friction


def test_set_then_unset_of_a_key_the_file_lacks_applies_in_order(capfd):
    """``--set K=V --unset K`` removes what the ``--set`` gave (the key then takes its default), though the file
    itself never held K; ``--unset K --set K=V`` sets it."""
    assert "friction" not in yaml.safe_load(Path(SHEAR).read_text())["physics"]
    code, out, err = command(capfd, "validate", SHEAR, "--set", "physics.friction=0.1", "--unset", "physics.friction")
    assert code == 0, err
    assert yaml.safe_load(out)["physics"]["friction"] == 0.0
    code, out, err = command(capfd, "validate", SHEAR, "--set", "physics.friction=0.1", "--unset", "physics.friction",
                             "--set", "physics.friction=0.2")
    assert code == 0 and yaml.safe_load(out)["physics"]["friction"] == 0.2, err
