"""What an equation declares about itself, without JAX: the contract every equation package fills in.

An equation package (``simulator/equations/<name>/``) exposes ``INFO``, an :class:`EquationInfo`
naming everything the rest of the code needs to know about it (in the manner of FluidSim's
``InfoSolver``): its parameter schema (the ``physics`` section when ``physics.name`` selects it), its
initial conditions (each a schema dataclass selected by ``initial.name``), the protocol its
implementation follows (which decides the time integrators it takes), its real-space fields,
diagnostics, spectra and plot defaults, and where its JAX implementation lives. Config validation,
sweeps, plots and docs read this; only a run imports the implementation.

A declared diagnostic, spectrum or time-series column may be a *template* holding ``{i}``: it declares
one name per index, for quantities that come once per configured entry (``scalar{i}_variance`` declares
``scalar0_variance``, ``scalar1_variance``, ... for each passive scalar); :func:`declared` and :func:`instances` resolve
them.

Parameters and initial conditions are frozen dataclasses built by the config engine
(:mod:`simulator.schema`): numbers declared with ``param`` are traced (handed to compiled code
as arguments, so a sweep over them never recompiles); everything else is structure.
"""

from __future__ import annotations

import dataclasses
import importlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from simulator.equations import resolution
from simulator.equations.plot_spec import (
    Budget as Budget,  # the plot declarations, importable from here too
    Curve as Curve,
    Kolmogorov as Kolmogorov,
    Panel as Panel,
    PlotSpec,
)
from simulator.equations.scales import initial_velocity
from simulator.equations.templates import INDEX, instances
from simulator.errors import ConfigError
from simulator.schema import setting, traced_values


@dataclass(frozen=True)
class EquationParams:
    """Base of an equation's parameter schema (``physics.*``). Subclasses redeclare ``name``; one whose values
    leave keys out of a run declares them with ``absent_keys()`` (:func:`simulator.schema.absent_keys`)."""

    name: str = setting("", "equation to solve")

    def traced(self) -> dict[str, Any]:
        """The traced (physical) parameters, by name."""
        return traced_values(self)

    def check(self, cfg: Any) -> None:
        """Checks that need other keys of the config (raise ConfigError); none by default."""

    def cautions(self, cfg: Any) -> list[str]:
        """Warnings about a valid config whose answer may not be what its user expects (a table continued past
        its ends, a component that carries almost nothing), each one line naming the key: logged when the run
        starts, and said by ``simulator validate`` and ``plan``. None by default."""
        return []

    def ignored_keys(self, given: Mapping[str, Any]) -> list[str]:
        """One line for each key of ``given`` (the ``physics`` section as the config and its ``--set`` give it,
        before defaults) that these parameters ignore (a key of another mode of the equation), naming it: logged
        as a warning when the config is loaded. None by default."""
        return []

    def resolve(self, cfg: Any) -> Any:
        """``cfg`` with the keys that follow from this equation's filled in (e.g. ``time.t_end`` from a
        final redshift); called by :func:`simulator.config.model.resolve`, must be idempotent."""
        return cfg

    def end_settings(self, t_end: float) -> dict[str, Any]:
        """The config keys that end a run at time ``t_end`` (``--add-to-t-end``, and the resume hint of a run
        so extended): ``time.t_end`` by default; an equation whose own key sets it (:meth:`resolve`) gives that key,
        since it refuses a ``time.t_end`` that contradicts it."""
        return {"time.t_end": t_end}

    def particle_species(self) -> dict[str, int]:
        """The particle species a run of these parameters carries in its state besides the ``particles``
        section's, name -> particle count (:meth:`simulator.equations.base.Equation.particles`; JAX-free: what
        decides whether the run writes particle snapshots, and what each snapshot must hold); none by default."""
        return {}

    def present_fields(self, fields: Mapping[str, FieldInfo]) -> dict[str, FieldInfo]:
        """The declared real-space ``fields`` (``EquationInfo.fields``) a run of these parameters has, by name:
        what the config's checks of output tasks read (no JAX) and an equation instance's ``field_info``
        starts from. All of them, unless the structure leaves some out (a run without a component)."""
        return dict(fields)

    def compact_spectra(self) -> str | None:
        """None when every real-to-complex spectrum of this equation lives on the 2/3 rule's modes, so that it
        can run in the compact spectral layout (``fft.layout``, :mod:`simulator.fft.compact`); otherwise
        why not, in a phrase. By default an equation keeps every mode."""
        return "its real-to-complex spectra are not all on the 2/3 rule's modes"

    def hyperviscous_coefficients(self) -> dict[str, float]:
        """The hyperviscous coefficients by config key (a flow's nu_p, ...): figures name the hyperviscous
        terms of a run where one is > 0; none by default."""
        return {}

    def dissipative_scale(self) -> str:
        """What sets the smallest scale the grid must resolve, which ``simulator plan`` states before a run:
        ``kolmogorov`` (the energy cascade's (nu^3/epsilon)^(1/4), the default) or ``enstrophy`` (the planar
        enstrophy cascade's (nu^3/chi)^(1/6), Kraichnan 1967)."""
        return "kolmogorov"

    def clock(self) -> Clock:
        """How this run's time and numbers read (:class:`Clock`): code units and a plain time, unless the
        equation has a unit system or a clock of its own."""
        return Clock()

    def velocity_scale(self, initial: Any) -> tuple[float, str] | None:
        """(U, what it is in words): the speed a run of these parameters from ``initial`` (its initial condition's
        schema dataclass) moves at, by which ``simulator plan`` estimates the steps of an adaptive dt
        (:func:`simulator.planning.job.steps_to_end`); None: no scale. By default the initial condition's
        (:func:`simulator.equations.scales.initial_velocity`); a flow with a speed of its own (convection's free fall,
        a channel's drive) gives that."""
        return initial_velocity(initial)

    def scales(self, diagnostics: Mapping[str, float], shape: Iterable[int], box: Iterable[float]) -> dict[str, float]:
        """The derived physical scales (:mod:`simulator.equations.scales`; ``EquationInfo.scales`` names and
        describes them) of these parameters and one row of ``diagnostics`` on a grid of ``shape`` in a box ``box``,
        in the run's units; none by default."""
        return {}


@dataclass(frozen=True)
class Clock:
    """The clock and units of a run, apart from its physics: how run time ``t`` is labelled, which other clocks
    users think in, the units outputs record, and host-computed running integrals of the time series. This base
    is a run in code units with a plain time; an equation with a unit system or a clock of its own returns a
    subclass from :meth:`EquationParams.clock` (a cosmological run: redshift, physical units, Layzer-Irvine)."""

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

    def time_coordinates(self, t: float) -> dict[str, float]:
        """Other clocks of run time ``t`` users think in (a cosmological run: ``a``, ``z``), written beside
        ``time`` in each row of ``spectra.h5``; {} = none."""
        return {}

    def derived_columns(self, previous: Mapping[str, float] | None, row: Mapping[str, float]) -> dict[str, float]:
        """Time-series columns computed on the host from this row and the previous one (None for the
        first row of a run): running integrals. Columns declared among the diagnostics; none by default."""
        return {}


@dataclass(frozen=True)
class UnitSystem(Clock):
    """A run in its equation's own unit system, with a plain time: ``table`` its units by quantity, as
    :meth:`Clock.units` gives them (``system`` says in words what the units are; ``length``, ``time``,
    ``velocity``, and each snapshot field's by its name)."""

    table: tuple[tuple[str, str], ...] = ()

    def units(self) -> dict[str, str]:
        return dict(self.table)


@dataclass(frozen=True)
class InitialCondition:
    """Base of an initial condition's schema (``initial.*``). Subclasses redeclare ``name``."""

    name: str = setting("", "initial condition")

    def traced(self) -> dict[str, Any]:
        """The traced numbers of this initial condition, by name."""
        return traced_values(self)

    def check(self, cfg: Any) -> None:
        """Checks that need other keys of the config (raise ConfigError); none by default."""

    def check_start(self, cfg: Any) -> None:
        """Checks that matter only when a run starts from this initial condition, not when it resumes
        from a checkpoint (e.g. that a source file exists); raise ConfigError. None by default."""


#: the initial condition every equation has: a state read from a file
FILE = "file"


@dataclass(frozen=True)
class FromFile(InitialCondition):
    """The state of a checkpoint or snapshot of this equation written on any grid, interpolated
    spectrally onto this run's (zero-padded to a finer grid, truncated to a coarser one)."""

    name: str = setting(FILE, "initial condition")
    path: str = setting("", "a checkpoint (cNNNNNNNN.json or .h5), a snapshot index (snapshots/sNNNNNNNN.h5), or a "
                        "run directory (its latest complete checkpoint)")
    time_from_file: bool = setting(False, "start the clock at the file's time (time.t_end stays absolute); "
                                   "false: at t = 0")

    def check(self, cfg: Any) -> None:
        if not self.path:
            raise ConfigError("initial.path", self.path, "give a checkpoint, a snapshot index or a run directory",
                              "is required with initial.name = file")


@dataclass(frozen=True)
class FieldInfo:
    """A real-space field: ``components`` 0 for a scalar ``(Nx, Ny, Nz)``, n for ``(n, Nx, Ny, Nz)``;
    whether it is complex and whether snapshots hold it; how plots show it: a TeX symbol, a colour
    map, and whether log10 is taken. A ``stacked`` field is a stack of n scalar fields, not a vector
    (one per configured entry, e.g. passive scalars: its declared ``components`` is nominal and the
    equation instance's :attr:`~simulator.equations.base.Equation.field_info` gives n); plots show its
    members one by one, snapshots store it as one (n, ...) array. ``units``: a TeX unit shown beside the
    symbol on colour bars (empty: code units, left unsaid)."""

    components: int
    doc: str
    symbol: str = ""
    cmap: str = "viridis"
    log: bool = False
    complex: bool = False
    snapshot: bool = True
    stacked: bool = False
    units: str = ""


@dataclass(frozen=True)
class Bound:
    """Where an equation's model stops describing the flow, said of one of its diagnostics
    (``EquationInfo.bounds``): the diagnostic must stay above ``above`` (a shallow-water layer's smallest depth
    above 0). A run stops at the first chunk end where it does not, as at a blow-up (exit 1, the last good
    checkpoint kept): ``meaning`` says what crossing it means and ``advice`` what keeps a run within it."""

    above: float
    meaning: str
    advice: str

    def crossed(self, name: str, value: float) -> str | None:
        """Why a run stops when the diagnostic ``name`` is ``value``, in one phrase; None while within."""
        if value > self.above:
            return None
        return f"{name} = {value:.6g} (not above {self.above:g}): {self.meaning} ({self.advice})"


#: what an equation says of plates (``EquationInfo.walls``)
WALLS = ("none", "optional", "required")


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
    #: a semi-linear equation's L is diagonal per mode (``linear(params)``): the exponential (ETD) schemes
    #: can use it (:data:`simulator.time.schemes.SCHEMES`, ``diagonal``)
    diagonal_linear: bool = True
    #: the derived scales its parameters compute (``EquationParams.scales``): name -> what it is
    scales: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: diagnostics that are other clocks, functions of run time alone (a cosmological run's a, z and age): their
    #: largest value over a run says nothing of the run (a sweep's collected.csv gives their final value only)
    clocks: tuple[str, ...] = ()
    #: what resolves each of its resolution diagnostics (those with a limit in
    #: :mod:`simulator.equations.resolution`; templates allowed, ``{i}`` standing for the index), naming
    #: the config keys to change: the advice of the run log's warning when one crosses its limit
    resolution_advice: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: 1-D spectra binned by another wavenumber than |k|: name -> ``k_h`` (horizontal) or ``k_z`` (|k_z|); their bin
    #: 0 is no mean but modes of the flow (vertically uniform, or horizontally uniform: shear), kept when read
    spectrum_axes: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: one-dimensional spectra along the periodic directions at each height between plates (the ``wall_spectra``
    #: output kind, :mod:`simulator.output.wall_spectra`, on the spectra's schedule): name -> what it is; the
    #: implementation's ``wall_spectra(state, params)`` computes them
    wall_spectra: Mapping[str, str] = dataclasses.field(default_factory=dict)
    #: the grids it runs on: 3 a box (``grid.shape`` of three entries), 2 a plane (two; :mod:`simulator.fft.plane`)
    dimensions: int = 3
    #: plates (``grid.walls``, :mod:`simulator.fft.bases`): ``none`` (refused in one line,
    #: :func:`simulator.config.grid.check_walls`), ``optional`` or ``required`` (a config that names no
    #: ``grid.walls`` gets them across the last direction, and ``default_box`` where it gives no ``grid.box``)
    walls: str = "none"
    #: the velocity conditions at plates it takes (``grid.walls.velocity``): ``free-slip`` (the sine and cosine
    #: basis) or ``no-slip`` (the Chebyshev basis)
    wall_velocity: tuple[str, ...] = ("free-slip",)
    #: the physics this equation is one geometry and one kind of plates of (None: its own name): a config naming that
    #: physics (``physics.name: convection``) runs the equation of its family whose :attr:`dimensions` are the grid's
    #: and whose :attr:`wall_velocity` takes its plates (:func:`simulator.config.grid.physics_member`)
    physics: str | None = None
    #: the ``grid.box`` of a config that gives none (None: the schema's default, 2 pi along every direction)
    default_box: tuple[float, ...] | None = None
    #: the diagnostics past whose bound the equation no longer describes the flow (a layer's depth no longer
    #: positive): a run stops there as at a blow-up (:meth:`crossed`); name -> :class:`Bound`
    bounds: Mapping[str, Bound] = dataclasses.field(default_factory=dict)

    def __post_init__(self) -> None:
        # the declaration must be consistent: these are the checks a new equation gets for free
        if self.walls not in WALLS:
            raise ValueError(f"{self.name}: walls = {self.walls!r}, not one of {WALLS}")
        names = [_default_name(ic) for ic in self.initials]
        if FILE in names:
            raise ValueError(f"{self.name}: the initial condition {FILE!r} is built in; choose another name")
        if _default_name(self.params) != self.name:
            raise ValueError(f"{self.name}: its params dataclass names itself {_default_name(self.params)!r}")
        if len(set(names)) != len(names):
            raise ValueError(f"{self.name}: initial condition names repeat: {names}")
        for name in (*self.progress, *((self.cfl,) if self.cfl else ()), *self.clocks):
            if name not in self.diagnostics:
                raise ValueError(f"{self.name}: {name!r} is not one of its diagnostics")
        slices = {self.plot.slice_field, *self.plot.slice_fallback}
        if (not slices <= set(self.fields) or self.plot.reference not in (None, *self.spectra)
                or not all(n in self.spectra for n in (self.plot.spectrum, *self.plot.more_spectra, *self.plot.labels,
                                                       *self.plot.side_by_side, *self.plot.maps, *self.spectrum_axes))
                or not set(self.spectrum_axes.values()) <= {"k_h", "k_z"}):
            raise ValueError(f"{self.name}: plot defaults or spectrum_axes name an unknown field, spectrum or axis")
        for name in self.state_fields:
            if name not in self.fields:
                raise ValueError(f"{self.name}: state field {name!r} is not one of its fields")
        if not set(self.bounds) <= set(self.diagnostics):
            raise ValueError(f"{self.name}: bounds name diagnostics it does not declare: "
                             f"{sorted(set(self.bounds) - set(self.diagnostics))}")
        watched = [n for n in self.diagnostics if resolution.watched(n)]
        if set(watched) != set(self.resolution_advice):
            raise ValueError(f"{self.name}: resolution_advice must advise on exactly its resolution diagnostics "
                             f"{watched}, not {list(self.resolution_advice)}")

    def advice(self, diagnostic: str) -> str:
        """What resolves the resolution diagnostic ``diagnostic`` (``scalar1_kmax_eta`` gets its template's
        advice with the index filled in); "" when it declares none."""
        for template, text in self.resolution_advice.items():
            for i, _ in instances(template, [diagnostic]):
                return text if i is None else text.replace(INDEX, str(i))
        return ""

    def crossed(self, diagnostics: Mapping[str, float]) -> list[str]:
        """Why a run of this equation stops at a moment of these ``diagnostics`` (name -> value), a phrase per
        declared :attr:`bounds` crossed; empty while the flow is within them all."""
        return [why for name, bound in self.bounds.items()
                if name in diagnostics and (why := bound.crossed(name, diagnostics[name])) is not None]

    @property
    def initial_table(self) -> dict[str, type[InitialCondition]]:
        """Initial conditions by name, in declaration order (the first is the default), then the built-in
        ``file`` (:class:`FromFile`) every equation has."""
        return {**{_default_name(ic): ic for ic in self.initials}, FILE: FromFile}

    @property
    def default_initial(self) -> str:
        return _default_name(self.initials[0])

    def load(self) -> type:
        """The JAX implementation class (imports JAX)."""
        module, _, attr = self.implementation.partition(":")
        return getattr(importlib.import_module(module), attr)


def declare(params: type[EquationParams], initials: tuple[type[InitialCondition], ...], implementation: str,
            **declared: Any) -> EquationInfo:
    """The declaration of the equation whose parameters are ``params``, named by their default ``name``, started by
    ``initials``, stepped by the class ``implementation`` of the ``equation`` module of the parameters' package;
    ``declared``: the rest of its :class:`EquationInfo`."""
    return EquationInfo(name=_default_name(params), params=params, initials=initials,
                        implementation=f"{params.__module__}.equation:{implementation}", **declared)


def _default_name(cls: type) -> str:
    return next(f.default for f in dataclasses.fields(cls) if f.name == "name")
