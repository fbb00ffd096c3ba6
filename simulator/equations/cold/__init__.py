"""Cold dark matter as a gravitating species beside a wave (fuzzy dark matter): one particle-mesh
implementation for every equation that carries it (the static box's :mod:`simulator.equations.
schrodinger_poisson` and the comoving :mod:`simulator.equations.fdm_cosmo`).

A mixed run holds a fraction f (``physics.fdm_fraction``) of the matter as the wave psi and the rest as
``physics.cdm_particles`` = n^3 cold collisionless particles of equal mass. Both feel one potential, the
Poisson solve of their summed density. At f = 0 the run is the particles alone (pure cold dark matter):
no wave is allocated or stepped, the state holds the particles and their potential only (the value 0 of
``fdm_fraction`` is structure, :func:`simulator.schema.is_zero`: 0 and any f > 0 are two programs).
The particles move by

    dx/dt = p,           dp/dt = -grad(V)              (static box, V the potential),
    dx/dt = p / a^2,     dp/dt = -grad(Phi) / a        (comoving, Phi = a V),

the equations the wave's Madelung velocity obeys. In a kick-drift-kick step each part is exact: the kick
adds ``force * K1`` to the momenta p (the positions, hence the force, fixed), the drift adds ``p * K2`` to the
positions x (p fixed), then the potential and the force are refreshed. In a static box K1 = K2 = dt; in an expanding one
they are the comoving integrals int dt / a^p (the equation hands them in). Modules:

* :mod:`.mesh` (JAX): the particle-mesh algorithm: assignment with the window's deconvolution, the Poisson
  solve of wave plus particles, the force's interpolation, drift, the owners' hand-over, the lattice and a
  displacement field evaluated on it;
* :mod:`.species` (JAX): the equation's side: the mixed state, its leaves and fields, kick and drift of the
  particles, restarts on other device counts, the lost-particle message, particle outputs;
* this module (no JAX, read by the config): the settings' checks (:func:`check_particles`,
  :func:`absent_wave_keys`), such an equation's declaration (:func:`info`) and fields (:func:`fields`), and
  which of them a run has and which particles it writes (:class:`ColdParams`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from simulator.equations.spec import EquationInfo, EquationParams, FieldInfo, InitialCondition, declare
from simulator.errors import ConfigError
from simulator.fft.stencils import ASSIGNMENTS, STENCILS
from simulator.schema import is_zero, setting
from simulator.time.schemes import SPLIT_STEP

#: the fields only a run with cold particles has
CDM_FIELDS = ("cdm_density", "total_density")
#: the fields of a particle-only run (no wave): the particles' assigned density and the potential
COLD_FIELDS = ("potential", "cdm_density")


def has_wave(p: Any) -> bool:
    """Whether a run of ``p`` carries the wave: ``fdm_fraction`` > 0 (0: the cold particles alone). ``p`` is
    a config's section or an equation's structural copy of it (both say whether the fraction is 0)."""
    return not is_zero(p.fdm_fraction)


def fields(density: FieldInfo, potential: FieldInfo, cdm_density: FieldInfo,
           total_density: FieldInfo) -> dict[str, FieldInfo]:
    """The fields of a wave with cold particles beside it, in their order: the wave's ``density``, |psi| and
    arg psi, the ``potential``, psi itself (complex: not in snapshots), the particles' ``cdm_density`` and the
    ``total_density`` of a mixed run, each ``(Nx, Ny, Nz)``."""
    return {"density": density, "abs_psi": FieldInfo(0, "|psi|", r"|\psi|", "magma"),
            "phase": FieldInfo(0, "arg psi", r"\arg\psi", "twilight"), "potential": potential,
            "psi": FieldInfo(0, "the wave function psi (complex; not in snapshots)", r"\psi", complex=True,
                             snapshot=False),
            "cdm_density": cdm_density, "total_density": total_density}


def info(params: type[EquationParams], initials: tuple[type[InitialCondition], ...], implementation: str,
         **declared: Any) -> EquationInfo:
    """The declaration of a wave equation that carries cold particles (:func:`~simulator.equations.spec.declare`):
    its state the wave function psi (and the particles'), stepped by the split-step schemes, kdk by default;
    ``declared``, the rest of its :class:`~simulator.equations.spec.EquationInfo`, with its :func:`fields`."""
    return declare(params, initials, implementation, **{"protocol": SPLIT_STEP, "default_integrator": "kdk",
                                                        "state_fields": ("psi",), **declared})


class ColdParams:
    """Mixin of the parameters of an equation that carries cold particles beside its wave (``fdm_fraction``,
    ``cdm_particles``): the particles a run writes and the fields it has."""

    def particle_species(self) -> dict[str, int]:
        """A run's cold particles, written to the particle snapshots as the species ``cdm``."""
        return {"cdm": self.cdm_particles} if self.cdm_particles else {}  # type: ignore[attr-defined]

    def present_fields(self, fields: Mapping[str, FieldInfo]) -> dict[str, FieldInfo]:
        """The declared ``fields`` (by name) a run has: the wave's alone without particles, every one with the
        wave and particles, the potential and the particles' density without the wave."""
        if not has_wave(self):
            return {k: v for k, v in fields.items() if k in COLD_FIELDS}
        particles = self.cdm_particles  # type: ignore[attr-defined]
        return dict(fields) if particles else {k: v for k, v in fields.items() if k not in CDM_FIELDS}


def absent_wave_keys(p: Any, keys: Sequence[str], example: str = "") -> dict[str, tuple[str, str]]:
    """The wave's own settings ``keys`` (e.g. the boson's mass) in a particle-only run of ``p``
    (``fdm_fraction`` 0), each with the refusal's problem and what to do: drop them all, as ``example`` (a
    shipped config without them, if any) does, or keep the wave; none with the wave. Refused when
    given, whatever the value (a default written out says something the run does not simulate as much as
    another), and left out of the resolved config (:func:`simulator.schema.absent_keys`: the parameters'
    ``absent_keys``)."""
    if has_wave(p):
        return {}
    # a mixed config set to f = 0 (--set) holds several of them: name them all, and where to start from instead
    like = f", as {example} does" if example else ""
    return {key: ("is a setting of the wave", f"leave it out: physics.fdm_fraction = 0 runs the cold particles "
                  f"alone, without a wave; drop the wave's keys ({', '.join(keys)}) from the config{like}, or on the "
                  f"command line (--unset physics.{key}, and so for each of them given), or give an fdm_fraction > 0")
            for key in keys}


def window_setting() -> Any:
    """``physics.cdm_window``, declared once for every equation that carries cold particles."""
    choices = " or ".join(f"{name} ({STENCILS[name].doc})" for name in ASSIGNMENTS)
    return setting("cic", "particle-mesh window assigning mass and interpolating forces, its transform divided out: "
                   f"{choices}", choices=ASSIGNMENTS)


def capacity_setting() -> Any:
    """``physics.cdm_capacity``: slots per device."""
    return setting(2.0, "particle slots per device, times the mean count per device (each device holds the "
                   "particles in its block; on one device exactly all of them); may change on a restart", min=1.0,
                   restart="free")


def exchange_setting() -> Any:
    """``physics.cdm_exchange``: the hand-over's send buffers."""
    return setting(0.25, "rows a device may hand to each neighbour per step, as a fraction of its slots (a step sends "
                   "one plane's mean count first, the rest only when some device has more); may change on a "
                   "restart", gt=0.0, max=1.0, restart="free")


#: the smallest normal number and the relative precision (machine epsilon) of each precision: 2^-126 and 2^-23,
#: 2^-1022 and 2^-52
NUMBERS = {"float32": (2.0**-126, 2.0**-23), "float64": (2.0**-1022, 2.0**-52)}


def check_fraction(p: Any, cfg: Any, density: float) -> None:
    """A wave's share f > 0 (``p.fdm_fraction``) whose density, f times the mean ``density`` of the matter, the
    run's precision holds with its contrasts: f density eps >= tiny (eps and tiny: :data:`NUMBERS`). Below it the
    wave's density contrasts fall under the smallest normal number and are flushed to zero, and the run stopped
    at its first step with its diagnostics not finite (a wave of 1e-37 of the matter in float32)."""
    tiny, eps = NUMBERS[cfg.precision]
    least = tiny / (eps * density)
    if 0.0 < p.fdm_fraction < least:
        raise ConfigError("physics.fdm_fraction", p.fdm_fraction, f"0 (the particles alone) or at least {least:.2g} "
                          f"in {cfg.precision} (the wave's mean density f x {density:g} must keep its contrasts "
                          f"above the smallest normal number, {tiny:.3g})", f"is too small for {cfg.precision}")


def check_particles(p: Any, cfg: Any, initials: tuple[str, ...], density: float) -> None:
    """The cold particles of ``p`` (``fdm_fraction``, ``cdm_particles``, ``cdm_window``, ``cdm_capacity``): there
    exactly when f < 1 (f = 0: they carry all of the matter), a wave's share f > 0 that the run's precision holds
    (:func:`check_fraction`, ``density`` the matter's mean density), a cube n^3 whose n divides every grid axis,
    the window's halo within every device's block, slots for a uniform spread over the devices where their count
    is known (:func:`simulator.fft.particle_slots.check_capacity`), and an initial condition among ``initials``
    (those that place the particles). Each refusal is one line naming the key, its value and what is allowed."""
    if p.cdm_particles == 0:
        if p.fdm_fraction < 1.0:
            raise ConfigError("physics.fdm_fraction", p.fdm_fraction, "set physics.cdm_particles (a cube n^3) to "
                              "carry the other 1 - f of the matter (all of it at f = 0), or leave fdm_fraction at 1",
                              "has no particles")
        return
    check_fraction(p, cfg, density)
    if p.fdm_fraction >= 1.0:
        raise ConfigError("physics.cdm_particles", p.cdm_particles, "0 unless physics.fdm_fraction < 1 (the "
                          "particles carry the matter the wave does not)", "has no matter to carry at f = 1")
    n = round(p.cdm_particles ** (1 / 3))
    if n**3 != p.cdm_particles:
        raise ConfigError("physics.cdm_particles", p.cdm_particles, "a cube n^3 for the lattice of the initial "
                          f"conditions (e.g. {n**3} or {(n + 1) ** 3})", "is not a cube")
    if any(size % n for size in cfg.grid.cells):
        raise ConfigError("physics.cdm_particles", p.cdm_particles, f"n = {n} must divide every axis of grid.shape "
                          f"{list(cfg.grid.shape)} (the lattice sits on every (N/n)-th grid node)",
                          "does not fit the grid")
    from simulator.fft.layouts import check_planes, known_devices
    from simulator.fft.particle_slots import check_capacity

    window = STENCILS[p.cdm_window]
    if min(cfg.grid.cells) < window.least_grid:
        raise ConfigError("physics.cdm_window", p.cdm_window, f"a grid of at least {window.least_grid} nodes along "
                          f"every axis for its {window.width}-node window", f"grid.shape is {list(cfg.grid.shape)}")
    check_planes(cfg, "physics.cdm_window", p.cdm_window, window.planes, "cic, or fewer devices")
    if (devices := known_devices(cfg)) is not None:
        check_capacity("physics.cdm_capacity", p.cdm_capacity, p.cdm_particles, devices)
    name = getattr(cfg.initial, "name", None)
    if name is not None and name not in initials:
        # a user with a run's file in hand wants its particles: the branch is the route that carries them
        onward = (" (to go on from a run's particles, branch it: simulator run CONFIG --restart CHECKPOINT_OR_RUN_DIR "
                  "--out NEW_DIR, on any grid)" if name == "file" else "")
        raise ConfigError("initial.name", name, f"{' or '.join(initials)}: a run's cold particles start on their "
                          f"lattice{onward}", "cannot place the particles")
