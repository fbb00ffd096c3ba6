"""The output wall: every kind of output a run writes, declared once and found through one registry
(no JAX here: the declarations name their JAX-side functions as ``"module:function"`` strings, imported
only when a run or the planner calls them).

An output kind (:class:`OutputKind`) says everything the rest of the code asks of it:

* ``active(cfg)``: whether a run of ``cfg`` writes it (one :attr:`Schedule.active` for the scheduled kinds);
* ``writers``: ``(cfg, sim, ctx) -> [Writer, ...]``, the writers of a run (``ctx``: :class:`WriterContext`),
  before the run's finiteness check (``stage = "records"``) or after it (``"dumps"``);
* ``program`` and ``lower``: the name of its device program and ``(sim, state, t, dt) -> Lowered``, what
  the planner and the memory fit checks compile (None: it computes nothing on the device of its own; no
  ``lower``: one of the :class:`~simulator.run.simulation.Simulation`'s own programs), and ``computes(cfg)``
  whether a run calls it (default: whenever ``active``: snapshot writers are made for every run, to trim
  a restart's series, but the fields program runs only when snapshots are scheduled);
* ``read``: ``(run_dir) -> data`` (no JAX), what ``load_run(path).output(name)`` returns; ``files``: the run
  files it writes, for messages;
* ``export``: ``(group, data, units) -> None``, its netCDF-4 group in ``simulator export``; ``figures``:
  ``(run_dir, config, pdf) -> [Path, ...]``, its figures in ``simulator plot``;
* ``section``: the dataclass of its ``output.<name>`` keys when it brings its own (an out-of-tree kind; the
  shipped kinds' sections are in :mod:`simulator.config.model`), ``schedules``: the dotted keys of its
  schedules (``every`` must fall on a chunk end, ``times`` before ``time.t_end``), ``check(cfg)``: its
  cross-key checks.

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
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from simulator.errors import ConfigError

#: the output modules that declare the shipped kinds, in the order a run calls their writers (the
#: registration lines)
MODULES = (
    "simulator.output.timeseries",
    "simulator.output.spectra",
    "simulator.output.snapshots",
    "simulator.output.particles",
    "simulator.output.statistics",
    "simulator.output.tasks",
)
#: environment variable naming further output-kind modules, comma-separated
ENV_EXTRA = "SIMULATOR_OUTPUTS"


@dataclass(frozen=True)
class WriterContext:
    """What a kind's ``writers`` gets besides the config and the simulation: whether this process writes
    the files of process 0 (``rank0``), the run's ``meta`` (config, versions, layout:
    :func:`simulator.run.records.metadata`), ``snapshot_attrs(moment)`` (the attributes every snapshot
    file carries) and the run log's ``info``."""

    rank0: bool
    meta: Mapping[str, Any]
    snapshot_attrs: Callable[[Any], dict[str, Any]]
    info: Callable[..., None]


@dataclass(frozen=True)
class OutputKind:
    """One kind of output (see the module docstring for each field)."""

    name: str
    doc: str
    active: Callable[[Any], bool]
    writers: str
    stage: Literal["records", "dumps"] = "dumps"
    program: str | None = None
    computes: Callable[[Any], bool] | None = None
    lower: str | None = None
    read: str | None = None
    files: tuple[str, ...] = ()
    export: str | None = None
    figures: str | None = None
    section: type | None = None
    schedules: tuple[str, ...] = ()
    check: Callable[[Any], None] | None = None

    def call(self, what: str, *args: Any) -> Any:
        """The function this kind names under ``what`` (``writers``, ``lower``, ``read``, ``export``,
        ``figures``), imported now and called with ``args``."""
        return function(getattr(self, what))(*args)


def function(ref: str) -> Callable[..., Any]:
    """The function a ``"module:function"`` reference names."""
    module, _, name = ref.partition(":")
    return getattr(importlib.import_module(module), name)


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
    """The ``output.<name>`` sections the registered kinds bring (the out-of-tree kinds' keys)."""
    return {kind.name: kind.section for kind in registry().values() if kind.section is not None}


def active(cfg: Any) -> list[OutputKind]:
    """The kinds a run of ``cfg`` writes, in the order its writers are called."""
    return [kind for kind in registry().values() if kind.active(cfg)]


def programs(cfg: Any) -> tuple[str, ...]:
    """The device programs of the kinds a run of ``cfg`` writes (what the planner compiles beside the chunk)."""
    return tuple(kind.program for kind in active(cfg)
                 if kind.program is not None and (kind.computes is None or kind.computes(cfg)))


def by_program(name: str) -> OutputKind:
    """The kind whose device program is ``name``."""
    for kind in registry().values():
        if kind.program == name:
            return kind
    raise ValueError(f"no output kind has the program {name!r}")


def written(run_dir: Path) -> list[OutputKind]:
    """The kinds whose files are in ``run_dir`` (those that declare ``files``)."""
    return [kind for kind in registry().values() if any((run_dir / f).exists() for f in kind.files)]
