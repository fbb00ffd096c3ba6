"""What an equation declares about itself, without JAX: the contract every equation package fills in.

An equation package (``simulator/equations/<name>/``) exposes ``INFO``, an :class:`EquationInfo`
naming everything the rest of the code needs to know about it (in the manner of FluidSim's
``InfoSolver``): its parameter schema (the ``physics`` section when ``physics.name`` selects it), its
initial conditions (each a schema dataclass selected by ``initial.name``), the protocol its
implementation follows (which decides the time integrators it takes), its real-space fields,
diagnostics, spectra and plot defaults, and where its JAX implementation lives. Config validation,
sweeps, plots and docs read this; only a run imports the implementation.

Parameters and initial conditions are frozen dataclasses built by the config engine
(:mod:`simulator.schema`): numbers declared with ``param`` are traced (handed to compiled code
as arguments, so a sweep over them never recompiles); everything else is structure.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from simulator.schema import setting, traced_values


@dataclass(frozen=True)
class EquationParams:
    """Base of an equation's parameter schema (``physics.*``). Subclasses redeclare ``name``."""

    name: str = setting("", "equation to solve")

    def traced(self) -> dict[str, Any]:
        """The traced (physical) parameters, by name."""
        return traced_values(self)

    def check(self, cfg: Any) -> None:
        """Checks that need other keys of the config (raise ConfigError); none by default."""

    # Host-side hooks of an equation with a unit system or a clock of its own (a cosmological run:
    # redshifts, physical units). The defaults describe a run in code units with a plain time.

    def resolve(self, cfg: Any) -> Any:
        """``cfg`` with the keys that follow from this equation's filled in (e.g. ``time.t_end`` from a
        final redshift); called by :func:`simulator.config.model.resolve`, must be idempotent."""
        return cfg

    def units(self) -> dict[str, str]:
        """The run's units for output attributes: ``length``, ``time``, and a field's or spectrum's
        name for that one (see :func:`simulator.output.snapshots.write_snapshot`); {} = code units."""
        return {}

    def output_attrs(self, t: float) -> dict[str, Any]:
        """Extra attributes of an output written at run time ``t`` (numbers or strings)."""
        return {}

    def time_label(self, t: float) -> str | None:
        """How figures label run time ``t`` (e.g. a redshift); None = the plain time."""
        return None

    def derived_columns(self, previous: Mapping[str, float] | None, row: Mapping[str, float]) -> dict[str, float]:
        """Time-series columns computed on the host from this row and the previous one (None for the
        first row of a run): running integrals. Columns declared among the diagnostics; none by default."""
        return {}


@dataclass(frozen=True)
class InitialCondition:
    """Base of an initial condition's schema (``initial.*``). Subclasses redeclare ``name``."""

    name: str = setting("", "initial condition")

    def traced(self) -> dict[str, Any]:
        """The traced numbers of this initial condition, by name."""
        return traced_values(self)

    def check(self, cfg: Any) -> None:
        """Checks that need other keys of the config (raise ConfigError); none by default."""


@dataclass(frozen=True)
class FieldInfo:
    """A real-space field: ``components`` 0 for a scalar ``(Nx, Ny, Nz)``, n for ``(n, Nx, Ny, Nz)``;
    whether it is complex and whether snapshots hold it; how plots show it: a TeX symbol, a colour
    map, and whether log10 is taken."""

    components: int
    doc: str
    symbol: str = ""
    cmap: str = "viridis"
    log: bool = False
    complex: bool = False
    snapshot: bool = True


@dataclass(frozen=True)
class Curve:
    """One line of a time-series panel: a diagnostic column, its label, and how it is drawn:
    ``relative`` plots x/x[0] - 1 (a conserved quantity's drift)."""

    column: str
    label: str
    relative: bool = False


@dataclass(frozen=True)
class Panel:
    """One panel of the time-series figure. ``log``: "auto" uses a log axis when the values are
    positive and span more than a decade."""

    ylabel: str
    curves: tuple[Curve, ...]
    log: str = "never"


@dataclass(frozen=True)
class PlotSpec:
    """Plot defaults of an equation: time-series panels, the spectrum drawn and its axis label, an
    optional power-law guide (its exponent), the field a slice shows, and an optional reference
    spectrum (another of its spectra, e.g. linear theory, drawn dashed beside each row shown)."""

    panels: tuple[Panel, ...]
    spectrum: str
    spectrum_label: str
    slice_field: str
    spectrum_guide: float | None = None
    projection: tuple[str, ...] = ()
    reference: str | None = None
    reference_label: str = ""


@dataclass(frozen=True)
class EquationInfo:
    """Everything an equation declares (see the module docstring)."""

    name: str
    summary: str
    params: type[EquationParams]
    initials: tuple[type[InitialCondition], ...]
    protocol: str
    default_integrator: str
    implementation: str
    fields: Mapping[str, FieldInfo]
    state_fields: tuple[str, ...]
    diagnostics: Mapping[str, str]
    progress: tuple[str, ...]
    spectra: Mapping[str, str]
    plot: PlotSpec
    cfl: str | None = "cfl"
    extra: Mapping[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        # the declaration must be consistent: these are the checks a new equation gets for free
        names = [_default_name(ic) for ic in self.initials]
        if _default_name(self.params) != self.name:
            raise ValueError(f"{self.name}: its params dataclass names itself {_default_name(self.params)!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: initial condition names repeat: {names}")
        for name in (*self.progress, *((self.cfl,) if self.cfl else ())):
            if name not in self.diagnostics:
                raise ValueError(f"{self.name}: {name!r} is not one of its diagnostics")
        if (self.plot.slice_field not in self.fields or self.plot.spectrum not in self.spectra
                or self.plot.reference not in (None, *self.spectra)):
            raise ValueError(f"{self.name}: plot defaults name an unknown field or spectrum")
        for name in self.state_fields:
            if name not in self.fields:
                raise ValueError(f"{self.name}: state field {name!r} is not one of its fields")

    @property
    def initial_table(self) -> dict[str, type[InitialCondition]]:
        """Initial conditions by name, in declaration order (the first is the default)."""
        return {_default_name(ic): ic for ic in self.initials}

    @property
    def default_initial(self) -> str:
        return _default_name(self.initials[0])

    def load(self) -> type:
        """The JAX implementation class (imports JAX)."""
        module, _, attr = self.implementation.partition(":")
        return getattr(importlib.import_module(module), attr)


def _default_name(cls: type) -> str:
    return next(f.default for f in dataclasses.fields(cls) if f.name == "name")
