"""The simulation object: a config made into an FFT backend, an equation, its parameters and a
compiled chunk of time steps. The run loop drives it; the public API (:mod:`simulator.api`) hands it
to users as ``simulator.Simulation``.

The chunk ``(equation, state, t, n_steps, dt, params) -> state`` is compiled once: the step count,
dt and the physical parameters are traced arguments, so the last, shorter chunk and a sweep over any
physical parameter reuse the same program. A run with an adaptive dt (``time.cfl``) calls the
controlled chunk instead (:meth:`Simulation.adaptive_chunk`), which chooses every step's dt on the
device from the state the step starts from: also one program, compiled once. Arrays stay sharded on
the mesh; nothing here gathers a global array (except :meth:`Simulation.to_numpy`, which says so).

The states it starts from and the parameters it steps them with are built by :mod:`simulator.run.states`; the
algorithms it calls live elsewhere (the schemes and the step-size controller in :mod:`simulator.time`).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from simulator import cache, equations, runtime
from simulator.config import Config
from simulator.equations import assembly
from simulator.equations.base import PROTOCOLS, Equation
from simulator.equations.spec import InitialCondition
from simulator.errors import ConfigError
from simulator.output import hdf5, kinds
from simulator.run import programs, states
from simulator.run.states import FieldSource
from simulator.time.integrators import chunk_compiler_options, run_controlled_steps
from simulator.time.schemes import SCHEMES


class AdaptiveChunk(NamedTuple):
    """What :meth:`Simulation.advance_adaptive` returns: the state, the steps taken, the simulated time
    they covered, the dt the controller allows from the state reached, and whether the chunk ended on
    its target time."""

    state: Any
    steps: int
    elapsed: float
    dt_next: float
    landed: bool


class Simulation:
    """Everything a run needs, built from a validated config once the runtime is set up.

    ``devices``: the devices to lay the mesh over (default: all of them).
    """

    def __init__(self, cfg: Config, devices: Any = None, *, compact_at_least: Any = None):
        """``compact_at_least``: sizes (Kx, Ky, Kz) a compact spectrum holds at the least (the planner's
        stand-in for a larger run: :func:`simulator.planning.reduced.reduced_plan`); None, the smallest that hold the
        2/3 rule's modes."""
        self.cfg = cfg
        if cache.status() is None:  # built without runtime.setup (a script's own devices): cache all the same
            runtime.enable_cache(cfg.runtime.compilation_cache, programs.count_compilations)
        self.info = equations.get(cfg.physics.name)
        runtime.use_precision(cfg.precision)  # built without runtime.setup: float64 all the same
        self.dtype = jnp.dtype(jnp.float64 if cfg.precision == "float64" else jnp.float32)
        self.fft = runtime.make_fft(cfg, devices, compact_at_least)
        cls = self.info.load()
        if not issubclass(cls, PROTOCOLS[self.info.protocol]):
            raise TypeError(f"{cls.__name__} does not implement the {self.info.protocol} protocol it declares")
        self.scheme = SCHEMES[cfg.time.integrator]
        self.equation: Equation = self.scheme.prepare(cls(self.fft, cfg.grid.lengths, self.dtype, cfg.physics))
        if cfg.particles:  # the flow carries Lagrangian particles: its state gains their arrays
            from simulator.particles.setup import with_particles

            self.equation = with_particles(self.equation, cfg.particles, cfg.grid.lengths, cfg.time)
        self.params: dict[str, jax.Array] = self.equation.params(cfg.physics)
        self.traces = 0
        self.scalar_sharding = self.fft.replicated_sharding()
        #: where a state read from another grid is staged (every process must reach it); None: the working directory
        self.scratch: Path | None = None
        self._chunks: dict[Any, Any] = {}
        self._programs: dict[str, Any] = {}
        self._rollouts: dict[tuple[Any, ...], Any] = {}
        self._snapshot_shapes: dict[tuple[str, ...], dict[str, jax.ShapeDtypeStruct]] = {}
        #: XLA options of this run's diagnostics, spectra and fields (:mod:`simulator.equations.assembly`)
        self.compiler_options = assembly.compiler_options(self._spectral_elements())
        #: and of its chunk of steps (which reduces nothing over the state: the multi-output fusion that
        #: assembly turns off for reductions stays on, measured right and 14% faster at 1024^3)
        self.chunk_options = chunk_compiler_options(self.fft.basis if self.fft.walls else None, self.fft.route)
        # the run time t is an argument (equations that depend on it explicitly see it: Equation.at).
        # ``names``: the fields to compute (static; None: all). XLA drops the rest
        jit = functools.partial(jax.jit, compiler_options=self.compiler_options)
        self._fields = jit(lambda eq, s, p, t, names: _named(eq.at(t).fields(s, p), names), static_argnums=4)
        #: the equation's ``from_fields`` jitted with these options, ``(equation, fields, params) -> state``: how
        #: every state is made from fields in the backend's layouts (:mod:`simulator.run.states`)
        self.make_state = jit(lambda eq, f, p: eq.from_fields(f, p))

    def _spectral_elements(self) -> float:
        """Complex elements of the state's spectra on one device (a real field's half spectrum counts half
        its points): the size that decides :mod:`~simulator.equations.assembly`'s compiler options."""
        flow = getattr(self.equation, "flow", self.equation)  # with particles: the field part
        total = sum(np.prod(f.shape) / (1 if jnp.issubdtype(f.dtype, jnp.complexfloating) else 2)
                    for f in flow.field_layouts().values())
        return float(total) / self.fft.devices

    @classmethod
    def from_config(cls, source: Any = None, overrides: Mapping[str, Any] | Sequence[str] = (), *,
                    cpu_devices: int | None = None, devices: Any = None) -> Simulation:
        """Load a config (a YAML path, a mapping or None for the defaults, plus overrides: see
        :func:`simulator.api.load_config`), set up the runtime for it if this process has not yet
        (``cpu_devices`` virtual CPU devices, as ``--cpu-devices``; precision; processes), and build."""
        from simulator import config as config_mod

        cfg = config_mod.load(source, overrides)
        if cpu_devices is not None:
            cfg = dataclasses.replace(cfg, runtime=dataclasses.replace(cfg.runtime, cpu_devices=cpu_devices))
        runtime.setup(cfg, count=programs.count_compilations)
        return cls(cfg, devices)

    # ---- parameters and states -------------------------------------------------------------------------

    def parameters(self, **values: Any) -> dict[str, Any]:
        """The traced parameters with some replaced, e.g. ``sim.parameters(viscosity=1e-3)``: pass the
        result to :meth:`advance` to change physics without recompiling. A list of sections takes a list
        of the same length whose entries replace some keys each (``scalars=[{"diffusivity": 1e-2}]``).
        Concrete values are checked as the config checks them (ConfigError naming ``physics.<key>``; a key the
        run lacks, the wave's without it, always); traced ones (inside ``jax.grad``) are not. A number whose 0 is
        structure (``physics.fdm_fraction``) may not cross 0: that is another program, another Simulation."""
        return states.parameters(self, values)

    def initial_state(self, initial: InitialCondition | Mapping[str, Any] | None = None,
                      params: Mapping[str, Any] | None = None) -> Any:
        """An initial condition's state, in the backend's layouts: the configured one, or another of this
        equation's given as a mapping like the ``initial`` config section (``{"name": "abc",
        "wavenumber": 2}``, validated the same way) or as its dataclass."""
        return states.initial_state(self, initial, params)

    def state_from_file(self, path: str | Path, params: Mapping[str, Any] | None = None) -> Any:
        """The state held by a checkpoint (``.json`` or ``.h5``), a snapshot index or a run directory (its
        latest complete checkpoint), written on any grid and layout, interpolated spectrally onto this
        grid where it differs (:mod:`simulator.run.remap`; temporary files go under :attr:`scratch`)."""
        return states.state_from_file(self, path, params)

    def start_time(self, initial: InitialCondition | None = None) -> float:
        """The time a new run starts at: the file's for ``initial.name: file`` with ``time_from_file``, else 0
        (of ``initial``, default the config's initial condition)."""
        return states.start_time(self, initial)

    def zero_state(self) -> Any:
        """A state of zero fields in this simulation's layouts and shardings (a template, e.g. to restore into)."""
        return self.equation.zero_state(self.params)

    def state_from_fields(self, **fields: FieldSource) -> Any:
        """A state from real-space fields by name (``equation.state_fields``: ``velocity`` of shape
        ``(3, Nx, Ny, Nz)`` for Navier-Stokes, and ``scalar`` ``(n, Nx, Ny, Nz)`` when it has scalars,
        ``psi`` ``(Nx, Ny, Nz)`` for Schrodinger-Poisson, ...).

        Each field is a global NumPy array (every process passes the same one and keeps only its own
        blocks), a ``jax.Array``, or a function ``block(index) -> array`` of a block's global index
        (a tuple of slices), for fields too large to hold on one host.
        """
        return states.state_from_fields(self, fields)

    # ---- time stepping -------------------------------------------------------------------------------------

    def chunk(self, eq: Equation, state: Any, t: jax.Array, n: jax.Array, dt: jax.Array, params: Mapping[str, Any]
              ) -> Any:
        """The chunk as a pure function: ``n`` steps of ``dt`` from time ``t`` (all traced), the equation
        an argument. :meth:`advance` jits it; an ensemble jits its vmap over members."""
        self.traces += 1  # Python runs only while tracing: this counts compilations
        return self.scheme.steps()(eq)(state, t, n, dt, params)

    def adaptive_chunk(self, eq: Equation, state: Any, t: jax.Array, n: jax.Array, dt: jax.Array, span: jax.Array,
                       cfl: jax.Array, params: Mapping[str, Any]) -> tuple[Any, jax.Array, ...]:
        """The controlled chunk as a pure function: at most ``n`` steps from ``t``, ending on ``t + span`` if
        they reach it, each of the largest dt (at most ``dt``) whose CFL number, the equation's ``cfl``
        diagnostic of the state the step starts from, is at most ``cfl``
        (:func:`~simulator.time.integrators.run_controlled_steps`, which says what it returns)."""
        self.traces += 1  # Python runs only while tracing: this counts compilations
        on = eq.stepping()  # the steps and their CFL numbers on the layout the equation steps on, as in a chunk
        state, *rest = run_controlled_steps(self.scheme.load()(on), lambda s, t: self.cfl_rate(on, s, t, params),
                                            eq.to_stepping(state), t, n, dt, span, cfl, params)
        return (eq.from_stepping(state), *rest)

    def cfl_rate(self, eq: Equation, state: Any, t: jax.Array, params: Mapping[str, Any]) -> jax.Array:
        """The CFL number of ``state`` per unit dt (its fastest rate): the ``cfl`` diagnostic, dt times a
        rate, at dt = 1 (compiled with the step, XLA drops the other diagnostics: for a flow, the inverse
        transforms of the velocity per step)."""
        return eq.at(t).diagnostics(state, jnp.ones((), self.dtype), params)[self.info.cfl]

    def step(self, eq: Equation, state: Any, t: jax.Array, dt: jax.Array, params: Mapping[str, Any]) -> Any:
        """One step as a run takes it: the scheme's, and with ``time.cfl`` the CFL rate of the state it
        reaches, which the controller evaluates every step (what the planner counts per step), both on the layout
        the equation steps on, as the chunks take them (the state moved there and back around the step)."""
        on = eq.stepping()
        state = self.scheme.load()(on)(eq.to_stepping(state), t, dt, params)
        rate = None if self.cfg.time.cfl is None else self.cfl_rate(on, state, t + dt, params)
        return eq.from_stepping(state) if rate is None else (eq.from_stepping(state), rate)

    def _chunk_program(self, state: Any, donate: bool, adaptive: bool = False) -> Any:
        """The jitted chunk (``adaptive``: the controlled one), made once per (adaptive, donate) for the
        shardings of ``state`` (concrete or abstract): :meth:`lower` and :meth:`advance` call the same object,
        so a program compiled ahead (:mod:`simulator.run.programs`) is the one the run calls."""
        key = ("adaptive", donate) if adaptive else donate
        if key not in self._chunks:
            # Outputs pinned to the state's shardings: the first chunk's inputs and every later chunk's
            # carry then look alike to jit, so one compilation serves the whole run. A donated state's
            # buffers are reused for the result, so a run holds one copy of it, not two.
            shardings = jax.tree.map(lambda a: a.sharding, state)
            donated = (1,) if donate else ()
            if adaptive:
                scalar = self.scalar_sharding
                self._chunks[key] = jax.jit(self.adaptive_chunk, out_shardings=(shardings, *[scalar] * 4),
                                            donate_argnums=donated, compiler_options=self.chunk_options)
            else:
                self._chunks[key] = jax.jit(self.chunk, out_shardings=shardings, donate_argnums=donated,
                                            compiler_options=self.chunk_options)
        return self._chunks[key]

    def lower(self, program: str, state: Any, t: Any, dt: Any) -> Any:
        """``program`` (``chunk``, the donated chunk the run loop calls, or an output kind's device program:
        :meth:`program`) lowered for ``state``, ``t`` and ``dt``, which may be ``jax.ShapeDtypeStruct`` (nothing
        allocated): what the planner compiles to measure the run, and what a run compiles ahead
        (:mod:`simulator.run.programs`), the very jitted objects the run then calls."""
        if program != "chunk":
            parts = (jax.ShapeDtypeStruct((), jnp.int32, sharding=self.scalar_sharding),) * 2  # field, component
            return self.program(program).lower(self.equation, state, self.params, t, dt,
                                               *(parts if kinds.program(program).parts is not None else ()))
        n = jax.ShapeDtypeStruct((), jnp.int32, sharding=self.scalar_sharding)
        if self.cfg.time.cfl is not None:  # the chunk this run calls: the controlled one
            return self._chunk_program(state, donate=True, adaptive=True).lower(
                self.equation, state, t, n, dt, dt, dt, self.params)  # dt, span, cfl: scalars alike
        return self._chunk_program(state, donate=True).lower(self.equation, state, t, n, dt, self.params)

    def program(self, name: str) -> Any:
        """The device program ``name`` of an output kind (:class:`~simulator.output.base.Program`), jitted once
        with this run's compiler options: ``(equation, state, params, t, dt) -> values``. What the planner
        lowers, what a run compiles ahead and what its writers call (:meth:`output`) are this one object."""
        if name not in self._programs:
            declared = kinds.program(name)
            # a program made a part at a time returns one component of a field, in the real-space layout
            pinned = {"out_shardings": self.fft.real_sharding(0)} if declared.parts is not None else {}
            self._programs[name] = jax.jit(functools.partial(declared.load(), self),
                                           compiler_options=self.compiler_options, **pinned)
        return self._programs[name]

    def output(self, name: str, state: Any, t: float, dt: float, params: Mapping[str, Any] | None = None) -> Any:
        """The output program ``name`` evaluated for ``state`` at run time ``t`` with time step ``dt`` (traced
        parameters ``params``, default the config's), its values as its kind hands them to the writers (on the
        host where it declares ``host``). The scalars go as every compiled call's do (:meth:`scalar`)."""
        declared = kinds.program(name)
        if declared.parts is not None:  # computed a part at a time, as the writers write them
            return declared.parts(self, state, t, dt, params)
        values = self.program(name)(self.equation, state, self.params if params is None else dict(params),
                                    self.time_array(t), self.scalar(dt))
        return values if declared.host is None else declared.host(values)

    def advance(self, state: Any, steps: int, dt: float, t: float = 0.0, params: Mapping[str, Any] | None = None,
                *, donate: bool = False) -> Any:
        """The state after ``steps`` steps of ``dt`` from time ``t``, in one call of the compiled chunk.

        ``params``: traced parameters (default the config's; see :meth:`parameters`). With
        ``donate=True`` the input state's buffers are reused for the result (what the run loop does:
        half the memory), and ``state`` must not be used afterwards. The host keeps the time in
        float64 and hands it in per chunk, so a float32 run accumulates no rounding in t. ``steps``
        must be a non-negative integer (``advance(state, 0.0, 300, 0.01)``, the arguments swapped, is
        refused with a TypeError rather than run as 0 steps).
        """
        _check_steps(steps)
        return self._chunk_program(state, donate)(
            self.equation, state, self.time_array(t), self.scalar(steps, jnp.int32), self.scalar(dt),
            self.params if params is None else dict(params))

    def advance_adaptive(self, state: Any, steps: int, t: float = 0.0, until: float = math.inf,
                         params: Mapping[str, Any] | None = None, *, cfl: float | None = None,
                         dt_max: float | None = None, donate: bool = False) -> AdaptiveChunk:
        """At most ``steps`` steps from time ``t``, ending on ``until`` if they reach it, each of the largest
        dt (spread evenly towards ``until``) that keeps the CFL number at most ``cfl`` (default
        ``time.cfl``) for the state the step starts from, never above ``dt_max`` (default ``time.dt``):
        :meth:`adaptive_chunk`, in one call of its compiled program. ``steps = 0``: the state and the dt
        it allows. ``donate`` as for :meth:`advance`. For example::

            out = sim.advance_adaptive(state, 100, t, until=2.0)   # ends on t = 2 if 100 steps reach it
            t = 2.0 if out.landed else t + out.elapsed
        """
        _check_steps(steps, "advance_adaptive", "state, steps, t, until")
        cfl = self.cfg.time.cfl if cfl is None else cfl
        if cfl is None or not cfl > 0 or self.info.cfl is None:
            raise ConfigError("time.cfl", cfl, "give a CFL number > 0 for an equation that declares one",
                              "cannot adapt the time step")
        dt_max = self.cfg.time.dt if dt_max is None else dt_max
        state, k, tau, dt_next, landed = self._chunk_program(state, donate, adaptive=True)(
            self.equation, state, self.time_array(t), self.scalar(steps, jnp.int32), self.scalar(dt_max),
            self.scalar(until - t), self.scalar(cfl), self.params if params is None else dict(params))
        k, tau, dt_next, landed = (np.asarray(a.addressable_data(0)) for a in (k, tau, dt_next, landed))
        return AdaptiveChunk(state, int(k), float(tau), float(dt_next), bool(landed))

    def rollout(self, state: Any, steps: int, dt: float, t: float = 0.0, params: Mapping[str, Any] | None = None,
                *, every: int = 1, checkpoint_every: int | None = None,
                diagnostics: Sequence[str] | None = None) -> Any:
        """``steps`` steps of ``dt`` as a differentiable function of ``state``, ``params``, ``t`` and ``dt``:
        returns a :class:`~simulator.gradients.Rollout` (``.state``, and ``.history``: each diagnostic
        named in ``diagnostics`` (default all) as a ``(steps // every,)`` array, recorded every ``every``
        steps). Use it inside ``jax.grad``/``jax.vjp``/``jax.jvp``::

            loss = lambda p: jnp.sum((sim.rollout(u0, 100, 0.01, params=p).history["energy"] - measured) ** 2)
            g = jax.grad(loss)(sim.parameters(viscosity=1e-2))     # {"viscosity": ..., ...}

        The memory of a gradient is about ``steps / c + c`` states plus one step's temporaries, with
        ``c = checkpoint_every`` steps per recomputed segment (default ~ sqrt(steps)): see
        :mod:`simulator.gradients`. One compilation per (steps, every, checkpoint_every, diagnostics).
        """
        from simulator import gradients

        names = None if diagnostics is None else tuple(diagnostics)
        if names is not None:
            # this instance's names (templates expanded: scalar0_variance exists only with a scalar), from
            # an abstract evaluation of the diagnostics: nothing is computed
            zero = jax.ShapeDtypeStruct((), self.dtype)
            available = list(jax.eval_shape(self.program("diagnostics"), self.equation, state, self.params, zero, zero))
            unknown = [n for n in names if n not in available]
            if unknown:
                raise KeyError(f"{unknown[0]!r} is not a diagnostic of this {self.info.name} run; it has: "
                               f"{', '.join(available)}")
        key = (int(steps), int(every), checkpoint_every, names)
        if key not in self._rollouts:
            gradients.segment_length(*key[:3])  # a bad combination is reported here, before tracing
            make_step = self.scheme.load()
            self._rollouts[key] = jax.jit(lambda eq, p, s, t0, h: gradients.rollout(
                eq, make_step, p, s, t0, h, steps=key[0], every=key[1], checkpoint_every=key[2], diagnostics=names))
        t_dev = t if isinstance(t, jax.Array) else self.time_array(t)  # an array: e.g. a tracer of jax.grad
        return self._rollouts[key](self.equation, self.params if params is None else dict(params), state, t_dev,
                                   jnp.asarray(dt, self.dtype))

    # ---- what a state says ------------------------------------------------------------------------------------

    def time_array(self, t: float) -> jax.Array:
        """The run time as a replicated scalar of the run's dtype (an argument of compiled code)."""
        return self.scalar(t)

    def scalar(self, value: float, dtype: Any = None) -> jax.Array:
        """``value`` as a scalar of ``dtype`` (default the run's) replicated on the mesh: how every scalar
        argument of the compiled programs is passed, and how :meth:`lower` describes it, so that a program
        compiled ahead is the one a call finds."""
        dtype = self.dtype if dtype is None else dtype
        host = np.asarray(value, dtype)
        return jax.make_array_from_callback((), self.scalar_sharding, lambda _: host, dtype=dtype)

    def diagnostics(self, state: Any, dt: float | None = None, params: Mapping[str, Any] | None = None,
                    t: float = 0.0) -> dict[str, jax.Array]:
        """The equation's diagnostics at run time ``t`` (replicated scalars; ``float()`` each, or see
        :meth:`report`)."""
        dt = self.cfg.time.dt if dt is None else dt
        return self.program("diagnostics")(self.equation, state, self.params if params is None else dict(params),
                                           self.time_array(t), self.scalar(dt))

    def report(self, state: Any, dt: float | None = None, t: float = 0.0,
               params: Mapping[str, Any] | None = None) -> dict[str, float]:
        """The diagnostics at run time ``t`` with traced parameters ``params`` (default the config's; pass
        those given to :meth:`advance`) as Python floats."""
        return {k: float(v) for k, v in self.diagnostics(state, dt, params, t=t).items()}

    def scales(self, state: Any, dt: float | None = None, t: float = 0.0,
               params: Mapping[str, Any] | None = None) -> dict[str, float]:
        """The equation's derived physical scales of ``state`` (``sim.info.scales`` says what each is: the
        Kolmogorov and Taylor scales of a flow, the Ozmidov length and buoyancy period of a stratified
        one, the Jeans and de Broglie lengths of a self-gravitating boson field, ...), from its
        diagnostics (:meth:`report`) and the parameters, in the run's units; ``params`` as for
        :meth:`advance` (their numbers replace the config's)."""
        physics = self.cfg.physics
        numbers = {k: float(v) for k, v in (params or {}).items()
                   if k in {f.name for f in dataclasses.fields(physics)} and np.ndim(v) == 0}
        physics = dataclasses.replace(physics, **numbers)
        return physics.scales(self.report(state, dt, t, params), self.fft.shape, self.cfg.grid.lengths)

    def spectra(self, state: Any, t: float = 0.0, params: Mapping[str, Any] | None = None) -> dict[str, jax.Array]:
        """Shell-summed spectra at run time ``t`` (replicated vectors, see :mod:`simulator.observables.spectra`)."""
        return self.program("spectra")(self.equation, state, self.params if params is None else dict(params),
                                       self.time_array(t), self.scalar(self.cfg.time.dt))

    def fields(self, state: Any, *names: str, t: float = 0.0, params: Mapping[str, Any] | None = None
               ) -> dict[str, jax.Array]:
        """Real-space fields by name at run time ``t`` (all of ``equation.field_info`` when no names are
        given), sharded like the real-space layout: ``(3, Nx, Ny, Nz)`` vectors, ``(n, Nx, Ny, Nz)`` stacks,
        ``(Nx, Ny, Nz)`` scalars. Each set of names is its own compiled program, which computes only those
        (a run asks for :attr:`snapshot_fields`)."""
        unknown = [n for n in names if n not in self.equation.field_info]
        if unknown:
            raise KeyError(f"{unknown[0]!r} is not a field of {self.info.name}; they are: "
                           f"{', '.join(self.equation.field_info)}")
        return self._fields(self.equation, state, self.params if params is None else dict(params), self.time_array(t),
                            tuple(names) or None)

    @property
    def snapshot_fields(self) -> tuple[str, ...]:
        """The fields snapshots hold (``FieldInfo.snapshot``): what a run's fields program computes."""
        return tuple(n for n, f in self.equation.field_info.items() if f.snapshot)

    def snapshot_parts(self, state: Any, t: float = 0.0, params: Mapping[str, Any] | None = None
                       ) -> dict[str, hdf5.Parts]:
        """The fields a snapshot of ``state`` at run time ``t`` holds (:attr:`snapshot_fields`), each an
        :class:`~simulator.output.hdf5.Parts` of the field's global shape whose ``part(i)`` computes component
        i alone: the run's snapshot program (``lower("fields")``), one call per component as the snapshot is
        written, so that no device holds more than one component beside the state (bit for bit the
        components :meth:`fields` gives). ``state`` must be kept until the snapshot is written."""
        names = self.snapshot_fields
        p, t_dev = self.params if params is None else dict(params), self.time_array(t)
        if names not in self._snapshot_shapes:  # traced once, nothing computed
            self._snapshot_shapes[names] = jax.eval_shape(
                lambda s, p, t: _named(self.equation.at(t).fields(s, p), names), state, p, t_dev)

        program, dt = self.program("fields"), self.scalar(self.cfg.time.dt)

        def part(field: int) -> Callable[[int], jax.Array]:
            return lambda i: program(self.equation, state, p, t_dev, dt, self.scalar(field, jnp.int32),
                                     self.scalar(i, jnp.int32))

        shapes = self._snapshot_shapes[names]  # a dict (sorted by name): the fields' order is ``names``'
        return {name: hdf5.Parts(shapes[name].shape, np.dtype(shapes[name].dtype),
                                 self.fft.real_sharding(shapes[name].ndim - 3), part(j))
                for j, name in enumerate(names)}

    @staticmethod
    def to_numpy(array: jax.Array) -> np.ndarray:
        """A global array on this host (gathers it: for small grids and single-process scripts)."""
        if jax.process_count() > 1:
            from jax.experimental import multihost_utils

            return np.asarray(multihost_utils.process_allgather(array, tiled=True))
        return np.asarray(array)


def _named(fields: dict[str, jax.Array], names: tuple[str, ...] | None) -> dict[str, jax.Array]:
    """``fields`` restricted to ``names``, in that order (all of them for None)."""
    return fields if names is None else {n: fields[n] for n in names}


def _check_steps(steps: Any, method: str = "advance", arguments: str = "state, steps, dt, t") -> None:
    if isinstance(steps, bool) or not isinstance(steps, (int, np.integer)) or steps < 0:
        raise TypeError(f"{method}: steps = {steps!r} must be a non-negative integer (the arguments are "
                        f"{arguments})")
