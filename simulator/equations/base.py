"""The abstract equation (JAX side) and the two protocols time integrators build on.

An implementation is a final subclass of :class:`SemiLinearEquation` or :class:`SplitStepEquation`
(abstract-or-final, as in equinox): the abstract methods below are its whole contract with the run
loop, the integrators, checkpoints, snapshots and the public API. Its declaration (parameters, initial
conditions, fields, diagnostics, plot defaults) is the JAX-free ``INFO`` of its package, set as the
class attribute :attr:`Equation.info`.

An equation is a pytree: the attributes named in ``_LEAVES`` are its leaves (sharded spectral
constants, traced through jit), those in ``_STATIC`` its static structure (the FFT backend, box,
dtype and structural parameters: hashed into the compiled program). Jitted code takes the equation
as an argument, since a multi-process program may not close over arrays that span other processes'
devices. Physics never sees a mesh: it combines spectra with the FFT backend's wavenumbers.

State arrays live in real space or in the FFT backend's k-space layout (``space`` of each leaf);
that is all checkpoints need to store and re-shard any state.
"""

from __future__ import annotations

import abc
import contextlib
import copy
import functools
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar, NamedTuple

import jax
import jax.numpy as jnp

from simulator.equations.spec import EquationInfo, EquationParams, FieldInfo, InitialCondition
from simulator.fft import FFTBackend
from simulator.fft.particle_slots import Loss, Room
from simulator.schema import with_traced, zero_traced
from simulator.time.schemes import IMEX, SEMILINEAR, SPLIT_STEP

Params = dict[str, jax.Array]
#: builds an initial condition's real-space fields: (equation, coordinates, initial condition, params)
Builder = Callable[[Any, Sequence[jax.Array], Any, Params], dict[str, jax.Array]]


class ParticleArrays(NamedTuple):
    """One particle species of a state, device arrays: ``position`` and ``velocity`` ``(rows, 3)``, and either
    ``ident`` and ``live`` ``(rows,)``, sharded along the rows like them (each device its own slots: the
    particle's index in its species, 0 .. N-1, and nonzero where a slot holds a particle), or both None:
    replicated arrays whose row i is particle i, every row a particle."""

    position: jax.Array
    velocity: jax.Array
    ident: jax.Array | None = None
    live: jax.Array | None = None


class Equation(abc.ABC):
    """Base of every equation implementation (see the module docstring)."""

    info: ClassVar[EquationInfo]
    #: where each state leaf lives, by leaf name ("spectral" or "real"); a str applies to every leaf
    space: ClassVar[str | Mapping[str, str]] = "spectral"
    #: initial-condition builders by name (the names of ``info.initials``; ``file`` is built in)
    builders: ClassVar[Mapping[str, Builder]] = {}
    #: the snapshot fields :meth:`state_fields_from_snapshot` needs (default: the state fields themselves)
    snapshot_sources: ClassVar[tuple[str, ...] | None] = None
    _LEAVES: ClassVar[tuple[str, ...]] = ()
    _STATIC: ClassVar[tuple[str, ...]] = ("fft", "box", "dtype", "spacing", "physics")

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        jax.tree_util.register_pytree_node_class(cls)

    def __init__(self, fft: FFTBackend, box: Sequence[float], dtype: Any, physics: EquationParams | None = None):
        """``physics`` None: the defaults of the equation's parameters (``info.params()``)."""
        physics = self.info.params() if physics is None else physics
        self.fft, self.box, self.dtype = fft, tuple(float(b) for b in box), jnp.dtype(dtype)
        self.spacing = tuple(b / n for b, n in zip(self.box, fft.shape, strict=True))
        # the structural part of the parameters: traced numbers are zeroed (in nested sections and
        # lists of sections too) so that two runs that differ only in them share one compiled program
        self.physics = zero_traced(physics)

    # ---- pytree --------------------------------------------------------------------------------------

    def tree_flatten(self) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        return tuple(getattr(self, n) for n in self._LEAVES), tuple(getattr(self, n) for n in self._STATIC)

    @classmethod
    def tree_unflatten(cls, static: tuple[Any, ...], leaves: tuple[Any, ...]) -> Equation:
        obj = object.__new__(cls)
        for name, value in zip(cls._STATIC, static, strict=True):
            setattr(obj, name, value)
        for name, value in zip(cls._LEAVES, leaves, strict=True):
            setattr(obj, name, value)
        return obj

    # ---- parameters and initial states -----------------------------------------------------------------

    def params(self, physics: EquationParams) -> Params:
        """The traced physical parameters of ``physics`` as arrays of this equation's dtype (a pytree:
        a nested section gives a dict, a list of sections a list of dicts, a tuple of numbers one array)."""
        return traced_arrays(physics.traced(), self.dtype)

    @property
    def field_info(self) -> Mapping[str, FieldInfo]:
        """The real-space fields of this instance: ``info.fields`` that its parameters' structure keeps
        (:meth:`~simulator.equations.spec.EquationParams.present_fields`; an equation whose field holds one
        component per configured entry, or is absent without any, overrides this)."""
        return self.physics.present_fields(self.info.fields)

    @property
    def state_fields(self) -> tuple[str, ...]:
        """The fields a state of this instance is built from: ``info.state_fields`` that it has."""
        return tuple(n for n in self.info.state_fields if n in self.field_info)

    def field_layouts(self) -> dict[str, jax.ShapeDtypeStruct]:
        """Each of :attr:`state_fields` as its global shape (``(components, Nx, Ny, Nz)``, or
        ``(Nx, Ny, Nz)`` for a field without components), dtype and real-space sharding: the one place
        a field declaration becomes an array (the run's own :attr:`field_info`, e.g. its scalar count)."""
        out = {}
        for name in self.state_fields:
            spec = self.field_info[name]
            shape = ((spec.components,) if spec.components else ()) + tuple(self.fft.shape)
            dtype = jnp.result_type(self.dtype, jnp.complex64) if spec.complex else jnp.dtype(self.dtype)
            out[name] = jax.ShapeDtypeStruct(shape, dtype, sharding=self.fft.real_sharding(1 if spec.components else 0))
        return out

    def initial(self, ic: InitialCondition, params: Params) -> Any:
        """The state of initial condition ``ic``: its builder makes real-space fields (each device
        computing only its own block), then :meth:`from_fields` makes them a state. The builder is
        compiled once per structure: the initial condition's traced numbers are arguments."""
        build, values = self._builder(ic)
        fields = build(self, self.fft.coordinates(self.box, self.dtype), values, params)
        with _donation_quiet():
            return _from_fields(self, fields, params)

    def initial_lowered(self, ic: InitialCondition, params: Params) -> dict[str, Any]:
        """The two programs :meth:`initial` runs for ``ic``, lowered with abstract fields (nothing allocated):
        ``initial``, the builder, and ``initial_state``, :meth:`from_fields` of its fields. What the planner
        counts beside the run's programs: a start (2LPT's six second derivatives, say) may hold more than a step."""
        build, values = self._builder(ic)
        with _donation_quiet():
            return {"initial": build.lower(self, self.fft.coordinates(self.box, self.dtype), values, params),
                    "initial_state": _from_fields.lower(self, self.field_layouts(), params)}

    def _builder(self, ic: InitialCondition) -> tuple[Callable[..., dict[str, jax.Array]], Any]:
        """The jitted builder of ``ic``'s structure and its traced numbers as arrays."""
        shardings = tuple(layout.sharding for layout in self.field_layouts().values())
        return (_initial_builder(self.builders[ic.name], self.state_fields, zero_traced(ic), shardings),
                traced_arrays(ic.traced(), self.dtype))

    def zero_state(self, params: Params) -> Any:
        """The state of zero fields: a template with this equation's layouts and shardings (restores read
        into it), built block by block on each device."""
        return _zero_state(self, params)

    def state_fields_from_snapshot(self, fields: Mapping[str, jax.Array]) -> dict[str, jax.Array]:
        """The real-space state fields (:attr:`state_fields`) from snapshot fields (:attr:`snapshot_sources`)
        on the same grid, for ``initial.name: file``; by default snapshots hold the state fields."""
        return {name: fields[name] for name in self.state_fields}

    def at(self, t: jax.Array) -> Equation:
        """This equation at run time ``t``. Autonomous equations (the default) are the same at every
        time; one whose operators depend explicitly on time returns a copy holding ``t`` as a traced
        leaf, so the integrators (a split step over [t, t + dt]) and the diagnostics, spectra and
        fields see the time without recompiling."""
        return self

    def stepping(self) -> Equation:
        """This equation on the layout its steps run on (the schemes' chunks and steps, and a controlled chunk's CFL
        number, take it): the state's own (the default), or one a step runs faster on (the no-slip family's kept
        columns on one device, :meth:`simulator.equations.noslip_flow.NoSlipEquation.stepping`). :meth:`to_stepping`
        and :meth:`from_stepping` move a state between the two."""
        return self

    def to_stepping(self, state: Any) -> Any:
        """``state`` on :meth:`stepping`'s layout."""
        return state

    def from_stepping(self, state: Any) -> Any:
        """A state on :meth:`stepping`'s layout back on this equation's."""
        return state

    def settle(self, state: Any, t: jax.Array, dt: jax.Array, params: Params) -> Any:
        """``state`` after a whole step from ``t`` to ``t + dt``, as every scheme leaves it
        (:mod:`simulator.time.schemes`: a duty the scheme's registry does, not each step factory): particles kept
        per device handed to the devices whose blocks now hold them
        (:meth:`simulator.particles.flow.WithParticles.settle`), a random forcing's kick
        (:meth:`simulator.equations.flow.plane.PlanarFlow.settle`). The default is the state as it is."""
        return state

    def lost(self, state: Any) -> Loss | None:
        """Why a run must stop, read from ``state`` on the host (particles that found no room: why, and the
        step that lost them, :class:`simulator.fft.particle_slots.Loss`), or None: the run loop asks once the
        state is made and after every chunk. Most equations lose nothing (the default)."""
        return None

    def rooms(self, state: Any) -> list[Room]:
        """The slots of each stack of particles ``state`` keeps by owner on several devices, with the occupied
        slots of this process's fullest device (:class:`simulator.fft.particle_slots.Room`): the run loop warns and
        writes a checkpoint when one fills up. None here (the default)."""
        return []

    def reslot(self, stored: Mapping[str, Any]) -> dict[str, jax.Array] | None:
        """The state's particle arrays kept per device (slots), laid out for this run's devices from those of
        a checkpoint written on another device count (``stored``: every particle-space dataset of the file by
        leaf name, to be read a bounded chunk at a time: no process holds the whole set), or None: that restart
        is refused (the default; equations whose particles are replicated never need it)."""
        return None

    def wall_series(self, name: str) -> tuple[str, ...]:
        """The series across the plates (:data:`simulator.fft.bases.SERIES`) of each component of the state field
        ``name`` (one entry for a scalar field): what a restart at another wall-normal resolution remaps it by
        (:func:`simulator.fft.bases.resample_matrix`). Only an equation between plates has them."""
        raise NotImplementedError(f"{type(self).__name__} has no plates")

    def wall_lift(self, name: str) -> jax.Array | None:
        """The profile across the plates that the state field ``name`` holds apart from its series (broadcasting
        against the field, on this grid's heights), which a remap across the plates takes off before resampling the
        series and puts back on the new heights; None (the default): the field is its series alone."""
        return None

    def stored_fields(self, stored: Mapping[str, Any]) -> dict[str, jax.Array]:
        """The state fields (:attr:`state_fields`) that a checkpoint holds as particle arrays rather than as
        fields of its state (``stored``: every particle-space dataset of the file by leaf name, read in chunks),
        for a state read from it onto any grid (:mod:`simulator.run.remap`). None here (the default)."""
        return {}

    def particles(self, state: Any, params: Params) -> dict[str, ParticleArrays]:
        """The particle species ``state`` carries (:class:`ParticleArrays`), by name, in the order of the
        config's species (:meth:`~simulator.equations.spec.EquationParams.particle_species`): what the
        particle snapshots write (:mod:`simulator.output.particles`). Most equations carry none (the default)."""
        return {}

    def leaf_spaces(self, state: Any) -> list[str]:
        """"spectral" or "real" for each leaf of ``state``, in flattening order."""
        paths = jax.tree_util.tree_flatten_with_path(state)[0]
        if isinstance(self.space, str):
            return [self.space] * len(paths)
        return [self.space[jax.tree_util.keystr(p).strip(".[]'\"") or "state"] for p, _ in paths]

    def owned_leaves(self, state: Any) -> set[str]:
        """Names of ``state``'s particle leaves kept by owner (:mod:`simulator.fft.owned`: rows sharded along the
        first axis over every mesh axis, each device its own slots), by their checkpoint names
        (:func:`simulator.output.checkpoints.leaf_names`); every other particle leaf is replicated. None here."""
        return set()

    # ---- the contract ------------------------------------------------------------------------------------

    @abc.abstractmethod
    def from_fields(self, fields: Mapping[str, jax.Array], params: Params) -> Any:
        """A state from real-space fields named in :attr:`state_fields` (``(n, Nx, Ny, Nz)`` or
        ``(Nx, Ny, Nz)``, real-space layout)."""

    @abc.abstractmethod
    def fields(self, state: Any, params: Params) -> dict[str, jax.Array]:
        """Every real-space output field of :attr:`field_info`, by name, in the real-space layout."""

    def field(self, state: Any, params: Params, name: str, component: jax.Array) -> jax.Array:
        """Component ``component`` (a traced int32 index; one without components ignores it) of the real-space
        field ``name``, ``(Nx, Ny, Nz)`` in the real-space layout: what a run's snapshots compute, one component
        per call, so that no device holds more than one
        (:meth:`simulator.run.simulation.Simulation.snapshot_parts`). By default taken from :meth:`fields`,
        whose other fields XLA drops; an equation whose fields are the transforms of stacked spectra
        transforms the one component alone (:class:`~simulator.equations.flow.velocity.FlowEquation`)."""
        value = self.fields(state, params)[name]
        return value if value.ndim == 3 else jax.lax.dynamic_index_in_dim(value, component, keepdims=False)

    @abc.abstractmethod
    def diagnostics(self, state: Any, dt: jax.Array, params: Params) -> dict[str, jax.Array]:
        """Scalars named in ``info.diagnostics`` (mesh reductions, nothing gathered)."""

    @abc.abstractmethod
    def spectra(self, state: Any, params: Params) -> dict[str, jax.Array]:
        """Shell sums named in ``info.spectra`` (replicated vectors, see :mod:`simulator.observables.spectra`)."""


class SemiLinearEquation(Equation):
    """du/dt = L u + N(u, t): the protocol of integrating-factor Runge-Kutta schemes.

    ``exp_linear(u, tau, params)`` applies exp(L tau) exactly. The default uses a diagonal
    ``linear(params)`` (broadcasting against every leaf of the state); an equation whose linear part
    couples components per mode (waves) overrides ``exp_linear`` with its exact propagator.
    """

    protocol: ClassVar[str] = SEMILINEAR

    def linear(self, params: Params) -> Any:
        """The diagonal of L in k-space (broadcasts against the state); needed by the default
        :meth:`exp_linear` and by :meth:`linear_map` only."""
        raise NotImplementedError(f"{type(self).__name__} overrides exp_linear instead")

    def exp_linear(self, u: Any, tau: jax.Array, params: Params) -> Any:
        return self.linear_map(jnp.exp, u, tau, params)

    def linear_map(self, fn: Callable[[jax.Array], jax.Array], u: Any, tau: jax.Array, params: Params) -> Any:
        """fn(L tau) u for a diagonal L (:meth:`linear`), mode by mode: what an exponential time-differencing
        scheme applies (its phi-functions, :func:`simulator.time.integrators.phi_functions`). ``fn`` maps the
        array z = L tau (broadcasting against the state) to the factor, elementwise; leaves that are not
        floating point are returned as they are. An equation without a diagonal L declares
        ``EquationInfo.diagonal_linear = False`` and never gets here."""
        factor = fn(self.linear(params) * tau)
        return jax.tree.map(lambda v: factor * v if jnp.issubdtype(v.dtype, jnp.inexact) else v, u)

    @abc.abstractmethod
    def nonlinear(self, u: Any, t: jax.Array, params: Params) -> Any:
        """N(u, t), a state-shaped pytree."""

    def at_stage(self, step: jax.Array, shift: jax.Array) -> SemiLinearEquation:
        """This equation at the stage of step number ``step`` (a traced integer counter) whose phase-shift
        offset is ``shift`` cells (the scheme's declared ``shifts``, traced; both from the scheme's registry:
        :func:`simulator.time.integrators.stage_equation`). The default is the equation itself;
        one whose nonlinear term changes from one evaluation to the next by a rule of the counters (the
        random phase shifts of Navier-Stokes's ``physics.dealias: phase_shift_*``) returns a copy holding it."""
        return self


class SplitStepEquation(Equation):
    """H = T + W with exactly solvable parts: the protocol of symmetric splittings (kick-drift-kick)."""

    protocol: ClassVar[str] = SPLIT_STEP

    @abc.abstractmethod
    def kick(self, state: Any, dt: jax.Array, params: Params) -> Any:
        """Evolve under W alone for ``dt`` (from this equation's time, see :meth:`Equation.at`)."""

    @abc.abstractmethod
    def drift(self, state: Any, dt: jax.Array, params: Params) -> Any:
        """Evolve under T alone for ``dt`` (from this equation's time, see :meth:`Equation.at`)."""


class ImexEquation(Equation):
    """M dX/dt = L X + F(X, t) with L implicit: the protocol of implicit-explicit schemes, Runge-Kutta
    (:mod:`simulator.time.imex`) and multistep (:mod:`simulator.time.multistep`), whose solves the equation builds for
    each step size and scheme."""

    protocol: ClassVar[str] = IMEX
    _STATIC: ClassVar[tuple[str, ...]] = (*Equation._STATIC, "scheme")
    #: the scheme whose history this equation's states carry (:meth:`carrying`); None: a state of none
    scheme: Any = None

    def carrying(self, scheme: Any) -> ImexEquation:
        """A copy of this equation whose states (every :meth:`from_fields`) carry what ``scheme`` (a
        :class:`~simulator.time.imex.Tableau` or :class:`~simulator.time.multistep.Multistep`) keeps from one step for
        the next, none held yet (``scheme.empty``): a multistep scheme's history travels in the state, so that
        chunks and checkpoints carry it (:meth:`simulator.time.schemes.Scheme.prepare`)."""
        carrying = copy.copy(self)
        carrying.scheme = scheme
        return carrying

    def imex_factor(self, dt: jax.Array, params: Params, tableau: Any) -> Any:
        """The stage solves' factorisations for ``dt`` and the scheme ``tableau`` (a
        :class:`~simulator.time.imex.Tableau` or :class:`~simulator.time.multistep.Multistep`; a pytree; None: none to
        share), built once for a chunk of steps of one dt and handed to each of its :meth:`imex_step`."""
        return None

    @abc.abstractmethod
    def imex_step(self, state: Any, t: jax.Array, dt: jax.Array, params: Params, tableau: Any,
                  factored: Any = None) -> Any:
        """The state one step of ``dt`` of the scheme ``tableau`` later (``factored``: :meth:`imex_factor` of this
        ``dt`` and tableau, or None: the step factors its solves itself, as a step whose dt changes from step to
        step must)."""


@functools.lru_cache(maxsize=64)
def _initial_builder(builder: Builder, names: tuple[str, ...], static: InitialCondition,
                     shardings: tuple[Any, ...]) -> Callable[..., dict[str, jax.Array]]:
    """The jitted builder of one initial condition's structure (traced numbers come as ``values``)."""

    def build(eq: Equation, coords: Sequence[jax.Array], values: dict[str, jax.Array], p: Params):
        fields = builder(eq, coords, with_traced(static, values), p)
        return {n: fields[n] for n in names}

    return jax.jit(build, out_shardings=dict(zip(names, shardings, strict=True)))


# one program: run eagerly, every operation of from_fields would compile its own. The fields are the builder's,
# dead after: donated, a state's arrays of their shapes (particles' positions and momenta) take their memory
@functools.partial(jax.jit, donate_argnames="fields")
def _from_fields(eq: Equation, fields: Mapping[str, jax.Array], params: Params) -> Any:
    return eq.from_fields(fields, params)


@contextlib.contextmanager
def _donation_quiet() -> Iterator[None]:
    """JAX's warning that a donated field found no output of its shape (a grid field becoming a spectrum) silenced:
    the donation is for the fields that do (particles'), and the others cost nothing."""
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message="Some donated buffers were not usable")
        yield


@jax.jit  # one program, as _from_fields
def _zero_state(eq: Equation, params: Params) -> Any:
    fields = {name: jax.lax.with_sharding_constraint(jnp.zeros(f.shape, f.dtype), f.sharding)
              for name, f in eq.field_layouts().items()}
    return eq.from_fields(fields, params)


def traced_arrays(values: Any, dtype: Any) -> Any:
    """Traced values (:func:`simulator.schema.traced_values`) as arrays of ``dtype``: dicts and lists
    stay pytree nodes, a number or a tuple of numbers becomes one array, and an integer (a random seed,
    :func:`simulator.schema.random_seed`) an unsigned 32-bit one: ``jax.random.key`` of it is the key of the
    Python integer, which a float would not hold exactly."""
    if isinstance(values, Mapping):
        return {k: traced_arrays(v, dtype) for k, v in values.items()}
    if isinstance(values, list):
        return [traced_arrays(v, dtype) for v in values]
    if isinstance(values, int) and not isinstance(values, bool):
        return jnp.asarray(values, jnp.uint32)
    return jnp.asarray(values, dtype)


PROTOCOLS: dict[str, type[Equation]] = {SEMILINEAR: SemiLinearEquation, SPLIT_STEP: SplitStepEquation,
                                        IMEX: ImexEquation}
