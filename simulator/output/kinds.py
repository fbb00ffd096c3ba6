"""The output wall: every kind of output a run writes, declared once and found through one registry (no
JAX here: a declaration names its JAX-side functions as ``"module:function"`` strings, imported only when a
run or the planner calls them).

An output kind (:class:`~simulator.output.base.OutputKind`, declared by the module that writes it) gives
what the rest of the code asks of it, and the wall does the rest:

* ``programs``: its device programs (:class:`~simulator.output.base.Program`: a pure function of the state,
  and how its values reach the host). The wall jits each once per simulation
  (:meth:`simulator.run.simulation.Simulation.program`), compiles it ahead of the run beside the chunk
  (:func:`simulator.run.programs.run_programs`), lowers it for the planner and the
  memory fit checks, and evaluates it at most once per moment for the writers (``moment.get(name)``); a
  ``records`` kind's programs run over a whole ensemble at once;
* ``writers``: ``(cfg, sim, ctx) -> [Writer, ...]``, the writers of a run (``ctx``: a
  :class:`~simulator.output.base.WriterContext`), before the run's finiteness check (``stage = "records"``)
  or after it (``"dumps"``); ``active(cfg)``: whether a run of ``cfg`` writes it (default: its section's
  schedule is on, :attr:`~simulator.output.base.Scheduled.on`);
* ``read``: ``(run_dir) -> data`` (no JAX), what ``load_run(path).output(name)`` returns (the shipped kinds'
  ``RunResults`` attributes are aliases of it); ``files``: the run files it writes;
* ``export``: ``(group, data, units) -> None``, its netCDF-4 group in ``simulator export`` (``data``: its
  reader's); ``figures``: ``(run_dir, config, pdf) -> [Path, ...]``, its figures in ``simulator plot``, called
  when its files are there (a plug-in's: the shipped kinds' figure families are declared above this layer,
  by kind name, in :data:`simulator.plots.run.FAMILIES`, since they read these modules' files; one loop over
  this registry, :func:`simulator.plots.run.plot_run`, draws both);
* ``section``: the dataclass of its ``output.<name>`` keys (its schedule keys from
  :class:`~simulator.output.base.Scheduled`), ``schedules``: the dotted keys of its schedules (``every`` must
  fall on a chunk end, ``times`` before ``time.t_end``), ``check(cfg)``: its cross-key checks.

The shipped kinds are declared by the output modules themselves, each as ``KIND`` (or ``KINDS``), and
registered by one line in :data:`MODULES`. Kinds of your own are registered, with no edit here, by naming
their importable modules in the environment variable ``SIMULATOR_OUTPUTS`` (comma-separated), as
``SIMULATOR_EQUATIONS`` does for equations; ``docs/how-to/add-an-output.md`` walks through one
(the test suite's plug-ins hold it). Checkpoints are not an output kind: they are the run's restart state,
always written (:mod:`simulator.output.checkpoints`).
"""

from __future__ import annotations

import functools
import importlib
import os
from pathlib import Path
from typing import Any

from simulator.errors import ConfigError
from simulator.output.base import OutputKind, Program

#: the output modules that declare the shipped kinds, in the order a run calls their writers and compiles their
#: programs, and an export gives their groups room (the registration lines)
MODULES = (
    "simulator.output.timeseries",
    "simulator.output.spectra",
    "simulator.output.snapshots",
    "simulator.output.statistics",
    "simulator.output.tasks",
    "simulator.output.particles",
    "simulator.output.trajectories",
    "simulator.output.profiles",
    "simulator.output.wall_spectra",
)
#: environment variable naming further output-kind modules, comma-separated
ENV_EXTRA = "SIMULATOR_OUTPUTS"


@functools.cache
def _load(extra: str) -> dict[str, OutputKind]:
    out: dict[str, OutputKind] = {}
    for module in MODULES:
        for kind in _declared(module):  # a shipped module that does not declare is our bug: raise
            out[kind.name] = kind
    for module in (m.strip() for m in extra.split(",") if m.strip()):
        for kind in _declared(module, plugin=True):
            if kind.name in out:
                raise ConfigError(ENV_EXTRA, module, "give the output kind another name",
                                  f"registers the output kind {kind.name!r} a second time")
            if kind.section is None:
                raise ConfigError(ENV_EXTRA, module, f"declare section, the dataclass of its output.{kind.name} keys",
                                  f"declares the output kind {kind.name!r} without a config section")
            taken = {p.name for k in out.values() for p in k.programs}
            clash = next((p.name for p in kind.programs if p.name in taken or p.name == "chunk"), None)
            if clash is not None:
                raise ConfigError(ENV_EXTRA, module, "give the program another name",
                                  f"declares the device program {clash!r}, which another output kind computes")
            out[kind.name] = kind
    return out


def _declared(module: str, plugin: bool = False) -> tuple[OutputKind, ...]:
    """The kinds ``module`` declares (``KIND`` or ``KINDS``); a plug-in module that is missing, fails to
    import or declares none is bad input: ConfigError, one line."""
    allowed = "name importable modules that each define KIND, an OutputKind (comma-separated)"
    try:
        imported = importlib.import_module(module)
    except ModuleNotFoundError as err:
        if not plugin:
            raise
        raise ConfigError(ENV_EXTRA, module, allowed, f"cannot be imported ({err})") from None
    except Exception as err:
        if not plugin:
            raise
        raise ConfigError(ENV_EXTRA, module, allowed, f"fails on import ({type(err).__name__}: {err})") from None
    kinds = getattr(imported, "KINDS", None) or ((imported.KIND,) if hasattr(imported, "KIND") else ())
    if not kinds or not all(isinstance(k, OutputKind) for k in kinds):
        raise ConfigError(ENV_EXTRA, module, allowed, "declares no OutputKind (KIND or KINDS)")
    return tuple(kinds)


def registry() -> dict[str, OutputKind]:
    """Every output kind by name: the shipped ones, then those of ``SIMULATOR_OUTPUTS``."""
    return _load(os.environ.get(ENV_EXTRA, ""))


def sections() -> dict[str, type]:
    """The ``output.<name>`` sections the registered kinds declare, by name."""
    return {kind.name: kind.section for kind in registry().values() if kind.section is not None}


def active(cfg: Any) -> list[OutputKind]:
    """The kinds a run of ``cfg`` writes, in the order its writers are called."""
    return [kind for kind in registry().values() if kind.on(cfg)]


def computed(cfg: Any, stage: str | None = None) -> tuple[Program, ...]:
    """The device programs a run of ``cfg`` calls (of the kinds it writes, those it computes), in registry order;
    ``stage``: only those of the kinds of that stage (an ensemble batches the ``records`` ones)."""
    return tuple(p for kind in active(cfg) if stage in (None, kind.stage) for p in kind.programs
                 if p.computes is None or p.computes(cfg))


def programs(cfg: Any) -> tuple[str, ...]:
    """The names of :func:`computed` (what the planner compiles beside the chunk)."""
    return tuple(p.name for p in computed(cfg))


def program(name: str) -> Program:
    """The device program ``name`` of a registered kind."""
    for kind in registry().values():
        for p in kind.programs:
            if p.name == name:
                return p
    raise ValueError(f"no output kind has the program {name!r}")


def written(run_dir: Path) -> list[OutputKind]:
    """The kinds whose files are in ``run_dir`` (those that declare ``files``)."""
    return [kind for kind in registry().values() if kind.wrote(run_dir)]
