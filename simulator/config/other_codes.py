"""Other codes' names for this project's config keys: an unknown key that another code's user would write
(FluidSim's ``nu_2``, Dedalus's ``stop_sim_time``, JaxPM's ``Omega_c``, Jaxion's ``m_22``) is answered with the
key it is here, wherever it is written (in this project's section, at the top level, under the code's own section:
FluidSim's ``oper.nx``), and the config reference lists them all (:func:`markdown`). Importable without JAX.

Each name is the one the code's own parameters or documented examples use: FluidSim's ``params`` tree
(``Simul.create_default_params()``; its names here are under ``params``), the variables of Dedalus's example
scripts and the arguments of its solver and ``CFL``, JaxPM's examples and jax_cosmo's ``Cosmology``, Jaxion's
``defaults.json``. A name that only differs from this project's by case (jax_cosmo's ``Omega_b``, ``n_s``) is left out:
every misspelt key gets a did-you-mean that ignores case, within its section; Dedalus' ``Rayleigh`` and ``Prandtl``
are in, as its scripts write them at the top, outside any section. A key of this project written in another
section, or outside its own (``walls.axis`` for ``grid.walls.axis``), is answered with where it is
(:func:`elsewhere`).
"""

from __future__ import annotations

import dataclasses
import math
import re
from collections.abc import Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from simulator.errors import ConfigError

if TYPE_CHECKING:
    from simulator.equations.spec import EquationInfo


class OtherName(NamedTuple):
    """``code``'s parameter ``name`` (as that code writes it, its section included) is ``key`` here (a list of
    sections' entries as ``physics.scalars[].diffusivity``), with what differs in ``note`` (``{shape}`` and ``{box}``
    spelt as a plane's or a box's grid has them); ``dimensions``: a row of a plane's equations (2) or a box's (3)
    only, where the name means another thing in each."""

    code: str
    name: str
    key: str
    note: str = ""
    dimensions: int | None = None


FLUIDSIM, DEDALUS, JAXPM, JAXION = "FluidSim", "Dedalus", "JaxPM", "Jaxion"

#: FluidSim's ns2d forcing_rate, which this project's forcing_power is not: FluidSim normalises its forcing so
#: that the forced variable's quadratic quantity, half the sum of its squared modes, grows at forcing_rate
#: (fluidsim/base/forcing/specific.py, NormalizedForcing.normalize_forcingc_2nd_degree_eq); ns2d forces the
#: vorticity (key_forced rot_fft), so that is the enstrophy's rate, and a band at k_f injects energy at its
#: 1/k_f^2 (at forcing_rate 0.1 and k_f = 24 FluidSim's ns2d injects 1.75e-4)
ENSTROPHY_RATE = ("an energy rate; FluidSim's forcing_rate on a plane is the enstrophy's, as it forces the vorticity, "
                  "key_forced rot_fft, unless forcing.normalized.constant_rate_of is energy: forcing_power = "
                  "forcing_rate / k_f^2 with k_f = 2 pi physics.forcing_wavenumber / max(grid.box)")

#: FluidSim's sw1l c2, the square of this project's wave_speed
WAVE_SPEED = "c = sqrt(g H), where FluidSim's c2 is c^2 = g H: wave_speed = sqrt(c2)"

#: the table, by code; several rows may share a name (a box size, a viscosity)
OTHER_NAMES = (
    OtherName(FLUIDSIM, "nu_2", "physics.viscosity"),
    OtherName(FLUIDSIM, "nu_4", "physics.hyperviscosity", "with physics.hyperviscosity_order: 2"),
    OtherName(FLUIDSIM, "nu_8", "physics.hyperviscosity", "with physics.hyperviscosity_order: 4"),
    OtherName(FLUIDSIM, "nu_m4", "physics.hypoviscosity", "with physics.hypoviscosity_order: 2"),
    OtherName(FLUIDSIM, "N", "physics.brunt_vaisala"),
    OtherName(FLUIDSIM, "f", "physics.coriolis"),
    OtherName(FLUIDSIM, "oper.nx", "grid.shape", "its first entry: grid.shape = {shape}"),
    OtherName(FLUIDSIM, "oper.ny", "grid.shape", "its second entry: grid.shape = {shape}"),
    OtherName(FLUIDSIM, "oper.Lx", "grid.box", "its first entry: grid.box = {box}"),
    OtherName(FLUIDSIM, "oper.Ly", "grid.box", "its second entry: grid.box = {box}"),
    OtherName(FLUIDSIM, "oper.coef_dealiasing", "physics.dealias", "a rule's name: 2/3 is two_thirds"),
    OtherName(FLUIDSIM, "time_stepping.t_end", "time.t_end"),
    OtherName(FLUIDSIM, "time_stepping.deltat0", "time.dt"),
    OtherName(FLUIDSIM, "time_stepping.deltat_max", "time.dt", "with time.cfl, dt is the largest step"),
    OtherName(FLUIDSIM, "time_stepping.cfl_coef", "time.cfl"),
    OtherName(FLUIDSIM, "time_stepping.USE_CFL", "time.cfl", "a CFL number adapts the step, null keeps time.dt"),
    OtherName(FLUIDSIM, "time_stepping.type_time_scheme", "time.integrator", "rk4, rk2, ... in lower case"),
    OtherName(FLUIDSIM, "forcing.enable", "physics.forcing", "none for no forcing"),
    OtherName(FLUIDSIM, "forcing.type", "physics.forcing", "FluidSim's random is random here, its phases "
              "new each step (tcrandom's are correlated in time)"),
    OtherName(FLUIDSIM, "forcing.key_forced", "physics.forcing", "a forcing forces its equation's own variable: "
              "random on a plane kicks the vorticity, as FluidSim's rot_fft"),
    OtherName(FLUIDSIM, "forcing.forcing_rate", "physics.forcing_power", ENSTROPHY_RATE, 2),
    OtherName(FLUIDSIM, "forcing.forcing_rate", "physics.forcing_power", "an energy rate, as FluidSim's forcing_rate "
              "is where it forces velocity components (key_forced vx_fft, ...)", 3),
    OtherName(FLUIDSIM, "forcing.nkmax_forcing", "physics.forcing_wavenumber", "with physics.forcing_width: the "
              "modes with |m - forcing_wavenumber| <= forcing_width/2 are forced, m = |k| max(grid.box)/2pi; "
              "FluidSim forces nkmin_forcing <= m <= nkmax_forcing", 2),
    OtherName(FLUIDSIM, "forcing.nkmin_forcing", "physics.forcing_wavenumber", "with physics.forcing_width: the "
              "band's centre and width", 2),
    OtherName(FLUIDSIM, "forcing.nkmax_forcing", "physics.forcing_band", "the highest forced mode number", 3),
    OtherName(FLUIDSIM, "output.periods_save.phys_fields", "output.snapshots.dt"),
    OtherName(FLUIDSIM, "output.periods_save.spectra", "output.spectra.dt",
              "the energy budget's transfer spectra are rows of spectra.h5 too"),
    OtherName(FLUIDSIM, "output.periods_save.spect_energy_budg", "output.spectra.dt",
              "the transfer spectra (and a plane's fluxes) are rows of spectra.h5"),
    OtherName(FLUIDSIM, "output.periods_save.spatial_means", "output.chunk",
              "the time series has a row every output.chunk steps"),
    OtherName(FLUIDSIM, "init_fields.type", "initial.name"),
    OtherName(FLUIDSIM, "c2", "physics.wave_speed", WAVE_SPEED),
    OtherName(DEDALUS, "nu", "physics.viscosity"),
    OtherName(DEDALUS, "kappa", "physics.diffusivity", "the buoyancy's, in boussinesq"),
    OtherName(DEDALUS, "kappa", "physics.scalars[].diffusivity", "a passive scalar's"),
    OtherName(DEDALUS, "solver.stop_sim_time", "time.t_end"),
    OtherName(DEDALUS, "max_timestep", "time.dt", "with time.cfl, dt is the largest step"),
    OtherName(DEDALUS, "build_solver(timestepper)", "time.integrator", "rk4, rk3, rk2, ... in lower case"),
    OtherName(DEDALUS, "CFL(safety)", "time.cfl"),
    OtherName(DEDALUS, "CFL(threshold)", "time.cfl", "every step's dt is the largest time.cfl allows from that "
              "step's state, capped by time.dt: no threshold"),
    OtherName(DEDALUS, "CFL(cadence)", "time.cfl", "every step's dt is the largest time.cfl allows from that "
              "step's state, capped by time.dt: a cadence of 1"),
    # Dedalus' sizes count modes (its grid is 3/2 as large): grid.modes takes them and chooses the points
    OtherName(DEDALUS, "Nx", "grid.modes", "its first entry, in modes as Dedalus counts them, the points then "
              "chosen: grid.modes = {modes}"),
    OtherName(DEDALUS, "Lx", "grid.box", "its first entry: grid.box = {box}"),
    # Dedalus' examples call the bounded axis z in 2D and 3D: the plates are across the grid's last direction
    OtherName(DEDALUS, "Nz", "grid.modes", "its last entry, across the plates where grid.walls has them: "
              "grid.modes = {modes}"),
    OtherName(DEDALUS, "Lz", "grid.box", "its last entry, the distance between the plates where grid.walls has "
              "them: grid.box = {box}"),
    OtherName(DEDALUS, "Rayleigh", "physics.rayleigh"),
    OtherName(DEDALUS, "Prandtl", "physics.prandtl"),
    OtherName(JAXPM, "mesh_shape", "grid.shape"),
    OtherName(JAXPM, "box_size", "grid.box", "in Mpc/h in a cosmological run"),
    OtherName(JAXPM, "Omega_c", "physics.omega_m", "all the matter, Omega_c + Omega_b: the box's dark matter"),
    OtherName(JAXPM, "snapshots", "physics.output_redshifts", "redshifts z = 1/a - 1, not scale factors a"),
    OtherName(JAXION, "domain.box_size", "grid.box", "in Mpc/h in a cosmological run"),
    OtherName(JAXION, "domain.resolution_base", "grid.shape"),
    OtherName(JAXION, "time.end", "time.t_end", "a cosmological run ends at physics.z_end"),
    OtherName(JAXION, "time.safety_factor", "time.cfl"),
    OtherName(JAXION, "quantum.m_22", "physics.m22"),
    OtherName(JAXION, "quantum.f_15", "physics.f_a", "in GeV, not 1e15 GeV"),
    OtherName(JAXION, "particles.num_particles", "physics.cdm_particles", "a cube n^3, placed on a lattice"),
    OtherName(JAXION, "cosmology.omega_matter", "physics.omega_m"),
    OtherName(JAXION, "cosmology.little_h", "physics.h"),
    OtherName(JAXION, "output.path", "output.dir"),
)

#: a plane's and a box's grid keys, as the notes spell them
GRIDS = {2: {"shape": "[nx, ny] on a plane", "box": "[Lx, Ly] on a plane", "modes": "[Nx, Nz] on a plane"},
         3: {"shape": "[nx, ny, nz] in a box", "box": "[Lx, Ly, Lz] in a box", "modes": "[Nx, Ny, Nz] in a box"}}
#: the sections every config has whole (an equation's keys: only its own)
COMMON = ("grid", "time", "output", "checkpoint", "runtime", "fft")


def leaf(name: str) -> str:
    """The word a user of the code writes for ``name``: ``oper.nx`` -> ``nx``, ``CFL(safety)`` -> ``safety``,
    lower case."""
    return re.split(r"[.(]", name.rstrip(")"))[-1].lower()


def _dotted(name: str) -> str:
    """``name`` as a dotted path, lower case: ``CFL(safety)`` -> ``cfl.safety``."""
    return name.rstrip(")").replace("(", ".").lower()


def matches(word: str) -> Iterator[OtherName]:
    """The rows whose name is ``word`` (case ignored)."""
    return (row for row in OTHER_NAMES if leaf(row.name) == word.lower())


def rows_of(path: str) -> list[OtherName]:
    """The rows a user who wrote the dotted ``path`` means: those of its last word (:func:`matches`), but only
    the code whose own section path ends ``path`` where one does (``oper.nx`` is FluidSim's, not Dedalus's
    ``Nx``; ``grid.nx`` may be either)."""
    rows = list(matches(path.rsplit(".", 1)[-1]))
    path = path.lower()
    sectioned = [row for row in rows if "." in _dotted(row.name)
                 and (path == _dotted(row.name) or path.endswith("." + _dotted(row.name)))]
    return sectioned or rows


def named(err: ConfigError, data: Mapping[str, Any] | None = None, info: EquationInfo | None = None,
          keys: Sequence[str] = ()) -> ConfigError:
    """``err``, an unknown key that another code names, said again with the key it is here in place of a
    did-you-mean, wherever the user wrote it: in this project's section (``physics.nu``: "nu is Dedalus's name:
    here it is physics.viscosity"), at the top level (``nu_2``) or under the code's own section, which arrives as
    an unknown key holding a mapping (``oper = {nx: 128}``: "oper.nx is FluidSim's name: here it is grid.shape
    (...)", each name of the mapping; or a mapping where this project has a list: Jaxion's ``particles``); an
    unknown key that is one of ``keys`` (the config's dotted keys) in another section, with where it is
    (:func:`elsewhere`). Any other error as it is. ``err.known``: the dotted keys of the section the key was given
    in; ``data``: the raw config; ``info``: the equation's registry entry, whose keys and grid the answer is for."""
    known = getattr(err, "known", ())
    # a section of the code's that is a list here (Jaxion's particles) is refused as of the wrong type
    mapped = err.problem == "has the wrong type" and isinstance(err.value, Mapping)
    if err.problem != "is an unknown key" and not mapped:
        return err
    said = [answer for path, value in _paths(err.key, err.value)
            if (answer := said_for(path, value, known, data or {}, info, given=err.key)) is not None]
    allowed = re.sub(r"^did you mean '[^']*'\? ", "", err.allowed)
    if said:
        return ConfigError(err.key, err.value, "; ".join([*said, allowed]), err.problem)
    placed = elsewhere(err.key, err.value, keys) if not mapped else []
    if not placed:
        return err
    return ConfigError(err.key, err.value, f"did you mean {' or '.join(map(repr, placed))}? {allowed}", err.problem)


def said_for(path: str, value: Any, known: Sequence[str], data: Mapping[str, Any], info: EquationInfo | None,
             given: str | None = None) -> str | None:
    """``"nu_2 is FluidSim's name: here it is physics.viscosity"`` for the dotted ``path`` a user wrote (with
    ``value``, or None where it was read, not set), or None where no other code's name is a key this config has:
    one of ``known`` (the dotted keys of the section it was written in), the equation's (``info``'s) or a common
    section's. ``given``: the unknown key as given, of which ``path`` is a name (``oper`` of ``oper.nx``), whose
    own last word alone is said (``physics.nu_2``'s ``nu_2``)."""
    physics = tuple(f"physics.{f.name}" for f in dataclasses.fields(info.params)) if info is not None else ()
    dimensions = info.dimensions if info is not None else 3
    rows = [row for row in rows_of(path) if row.dimensions in (None, dimensions)
            and _has(row.key, (*known, *physics))]
    if not rows:
        return None
    word = path if path != (given or path) else path.rsplit(".", 1)[-1]  # oper.nx as given; physics.nu_2's nu_2
    return _answer(word, rows, value, data, info, dimensions)


def elsewhere(key: str, value: Any, keys: Sequence[str]) -> list[str]:
    """The dotted ``keys`` (this config's) that the unknown ``key = value`` names in the wrong place: those that end
    with what the user wrote from the unknown word on (``walls = {axis: y}``, ``--set walls.axis=y``:
    ``grid.walls.axis``; ``physics.cfl``: ``time.cfl``), those in the section it was written in first, then the
    nearest the top, at most two of them (``dt``: ``time.dt``, ``checkpoint.dt``), each name of a mapping given in
    turn; none where a name is no key here."""
    section = key.rsplit(".", 1)[0] + "." if "." in key else ""
    found: list[str] = []
    for path, _ in _paths(key, value):
        written = path[len(section):]
        # within the section it was written in first (output.every: output.spectra.every), then the nearest the top
        hits = sorted((k for k in keys if k.endswith("." + written) and k != path),
                      key=lambda k: (not k.startswith(section), k.count(".")))
        if not hits:
            return []
        found.extend(h for h in hits[:2] if h not in found)
    return found


def _paths(key: str, value: Any) -> Iterator[tuple[str, Any]]:
    """(dotted path, value) of each name ``key = value`` gives: the key itself, or within a mapping each name
    it holds (``oper = {nx: 128}``: ``oper.nx``, 128)."""
    if isinstance(value, Mapping) and value:
        for name, inner in value.items():
            yield from _paths(f"{key}.{name}", inner)
    else:
        yield key, value


def _answer(word: str, rows: list[OtherName], value: Any, data: Mapping[str, Any], info: EquationInfo | None,
            dimensions: int) -> str:
    """``"nu_2 is FluidSim's name: here it is physics.viscosity"`` with each key's notes, for the ``rows`` of
    ``word`` (and for FluidSim's forcing_rate on a plane, the forcing_power of ``value``)."""
    by_code = {code: [row for row in rows if row.code == code] for code in dict.fromkeys(row.code for row in rows)}
    if len({tuple(row.key for row in group) for group in by_code.values()}) > 1:
        # codes that mean different keys by the word (FluidSim's nx counts points, Dedalus' Nx modes): one clause each
        return "; ".join(_answer(word, group, value, data, info, dimensions) for group in by_code.values())
    codes = " and ".join(f"{code}'s" for code in by_code)
    notes: dict[str, list[str]] = {}
    for row in rows:
        notes.setdefault(row.key, [])
        note = row.note.format(**GRIDS[dimensions])
        if row.note is ENSTROPHY_RATE:
            note += _energy_rate(value, data, info)
        if row.note is WAVE_SPEED:
            note += _wave_speed(value)
        if note and note not in notes[row.key]:
            notes[row.key].append(note)
    here = " or ".join(key + (f" ({'; '.join(said)})" if said else "") for key, said in notes.items())
    return f"{word} is {codes} name: here it is {here}"


def _energy_rate(value: Any, data: Mapping[str, Any], info: EquationInfo | None) -> str:
    """``": here 0.1 / 24^2 = 0.000174"``: the forcing_power of the enstrophy rate ``value`` at the config's
    forcing wavenumber and box (given or default), or "" where one of them is not a number."""
    from simulator.schema.build import eval_number

    physics = data.get("physics") if isinstance(data.get("physics"), Mapping) else {}
    grid = data.get("grid") if isinstance(data.get("grid"), Mapping) else {}
    defaults = {f.name: f.default for f in dataclasses.fields(info.params)} if info is not None else {}
    try:
        m = float(physics.get("forcing_wavenumber", defaults.get("forcing_wavenumber")))  # type: ignore[arg-type]
        box = grid.get("box", 2 * math.pi)
        lengths = [eval_number(b) if isinstance(b, str) else float(b)
                   for b in (box if isinstance(box, (list, tuple)) else [box])]
        rate = eval_number(value) if isinstance(value, str) else float(value)
        k_f = 2 * math.pi * m / max(lengths)
        return f": here {rate:g} / {k_f:.6g}^2 = {rate / k_f**2:.3g}"
    except (TypeError, ValueError, ZeroDivisionError, ConfigError):
        return ""


def _wave_speed(value: Any) -> str:
    """``" = sqrt(2.5) = 1.58"``: the wave speed of FluidSim's c2 ``value``, or "" where it is not a number >= 0."""
    from simulator.schema.build import eval_number

    try:
        c2 = eval_number(value) if isinstance(value, str) else float(value)
        return f" = sqrt({c2:g}) = {math.sqrt(c2):.6g}"
    except (TypeError, ValueError, ConfigError):
        return ""


def _has(key: str, known: tuple[str, ...]) -> bool:
    """Whether the config has ``key``: one of ``known`` (the keys of the section the unknown one was given in,
    and the equation's; a list's entries: the list), or of a section every config has whole (:data:`COMMON`),
    or ``initial.name``."""
    return key.split("[]", 1)[0] in known or key.split(".", 1)[0] in COMMON or key == "initial.name"


def markdown() -> str:
    """The table of :data:`OTHER_NAMES` for the config reference, by code."""
    grids = {key: f"{GRIDS[2][key]}, {GRIDS[3][key]}" for key in GRIDS[2]}
    where = {None: "", 2: "on a plane: ", 3: "in a box: "}
    # a note's |m - k| kept in its cell
    notes = [where[row.dimensions] + row.note.format(**grids).replace("|", "\\|") for row in OTHER_NAMES]
    # a long dotted name (output.periods_save.spect_energy_budg) may break after its dots, which copying leaves out
    # (<wbr>): unbroken it widened the table past a laptop's column
    rows = "".join(f"| {row.code} | {breakable(row.name)} | `{row.key}` | {note} |\n"
                   for row, note in zip(OTHER_NAMES, notes))
    return ("**Other codes' names.** A key written as FluidSim, Dedalus, JaxPM or Jaxion name it is refused with the "
            "key it is here, wherever it is written: in this project's section (`physics.nu = 0.01 is an unknown key; "
            "nu is Dedalus's name: here it is physics.viscosity; ...`), at the top level (`nu_2`), or under the "
            "code's own section (`--set oper.nx=128`: `oper.nx is FluidSim's name: here it is grid.shape (its first "
            "entry: grid.shape = [nx, ny] on a plane)`), each name of that section answered. FluidSim's names are "
            "those of its `params`. Its `forcing_rate` on a plane is an enstrophy rate (FluidSim normalises the "
            "forced variable's quadratic quantity, and `ns2d` forces the vorticity): the answer gives "
            "`physics.forcing_power`, an energy rate, as `forcing_rate / k_f^2` with this config's figure (FluidSim's "
            "`ns2d` at `forcing_rate` 0.1 on the band 23.5 <= k <= 24.5 injects 1.73e-4 of energy per unit time, "
            "0.1 / 24^2 = 1.74e-4):\n\n"
            "| code | its name | here | note |\n|---|---|---|---|\n" + rows)


def breakable(name: str) -> str:
    """``name`` as inline code that a narrow table cell may break after each dot (``<wbr>``, no character)."""
    import html

    return "<code>" + ".<wbr>".join(html.escape(part) for part in name.split(".")) + "</code>"
