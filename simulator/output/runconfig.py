"""``config.yaml`` of a run directory: the resolved config a run saved, read back (no JAX).

Read by :func:`simulator.load_run` and by ``simulator plot``, which sit above it; kept below both so
that the results can offer the plots without the two importing each other.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import yaml

from simulator.errors import ConfigError

CONFIG_FILE = "config.yaml"


#: the file that makes a directory a sweep's (``simulator.sweep.MANIFEST``, which imports far more than this module)
SWEEP_MANIFEST = "sweep.yaml"


def load_run_config(run_dir: Path, sweeps: bool = False) -> dict[str, Any]:
    """The resolved config of a run, read from ``RUN_DIR/config.yaml`` (its ``config`` entry). ``sweeps``: the
    caller also takes a sweep directory (``simulator plot``), which its refusals then offer.

    Raises ConfigError when ``run_dir`` does not exist, is a sweep directory or holds no readable ``config.yaml``.
    """
    from simulator.equations import ENV_EXTRA, plugin_problem, registry

    allowed = "give a directory written by `simulator run`" + (" (or a sweep directory holding sweep.yaml)"
                                                               if sweeps else "")
    if not run_dir.is_dir():
        raise ConfigError("RUN_DIR", str(run_dir), allowed,
                          "is not a directory" if run_dir.exists() else "does not exist")
    path = run_dir / CONFIG_FILE
    if not path.is_file() and (run_dir / SWEEP_MANIFEST).is_file():
        runs = sorted(d for d in run_dir.iterdir() if (d / CONFIG_FILE).is_file())
        example = f", such as {runs[0]}" if runs else ""
        raise ConfigError("RUN_DIR", str(run_dir), f"give one of its points' run directories{example} "
                          "(simulator.load_sweep reads them all)", "is a sweep directory, not a run's")
    if not path.is_file():
        raise ConfigError("RUN_DIR", str(run_dir), allowed, f"is not a run directory (it has no {CONFIG_FILE})")
    try:
        config = yaml.safe_load(path.read_text())["config"]
        usable = bool(config["name"]) and len(config["grid"]["shape"]) in (2, 3)
        equation = config["physics"]["name"]
    except (yaml.YAMLError, OSError, KeyError, TypeError, ValueError):
        usable = False
    if not usable:
        raise ConfigError("RUN_DIR", str(run_dir), allowed, f"has a {CONFIG_FILE} without a run's resolved config")
    if equation not in registry():
        # a run of a plug-in equation read where that plug-in is not registered: say which, and how to register it
        if (problem := plugin_problem(str(equation))) is not None:
            raise problem
        raise ConfigError("physics.name", equation, f"register the equation: name its module (the one defining INFO) "
                          f"in the environment variable {ENV_EXTRA}, e.g. {ENV_EXTRA}=my_package.my_equation; "
                          f"registered: {', '.join(registry())}", f"of the run in {run_dir} is not a registered "
                          "equation")
    return config
