"""Other codes' names for this project's config keys: an unknown key that another code's user would write
(FluidSim's ``nu_2``, Dedalus's ``stop_sim_time``, JaxPM's ``Omega_c``, Jaxion's ``m_22``) is answered with the
key it is here, and the config reference lists them all (:func:`markdown`). Importable without JAX.

Each name is the one the code's own parameters or documented examples use: FluidSim's ``params`` tree
(``Simul.create_default_params()``; its names here are under ``params``), the variables of Dedalus's example
scripts and the arguments of its solver and ``CFL``, JaxPM's examples and jax_cosmo's ``Cosmology``, Jaxion's
``defaults.json``. A name that only differs from this project's by case (jax_cosmo's ``Omega_b``, ``n_s``) is left out:
every misspelt key gets a did-you-mean that ignores case.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

from simulator.errors import ConfigError


class OtherName(NamedTuple):
    """``code``'s parameter ``name`` (as that code writes it, its section included) is ``key`` here (a list of
    sections' entries as ``physics.scalars[].diffusivity``), with what differs in ``note``."""

    code: str
    name: str
    key: str
    note: str = ""


FLUIDSIM, DEDALUS, JAXPM, JAXION = "FluidSim", "Dedalus", "JaxPM", "Jaxion"

#: the table, by code; several rows may share a name (a box size, a viscosity)
OTHER_NAMES = (
    OtherName(FLUIDSIM, "nu_2", "physics.viscosity"),
    OtherName(FLUIDSIM, "nu_4", "physics.hyperviscosity", "with physics.hyperviscosity_order: 2"),
    OtherName(FLUIDSIM, "nu_8", "physics.hyperviscosity", "with physics.hyperviscosity_order: 4"),
    OtherName(FLUIDSIM, "N", "physics.brunt_vaisala"),
    OtherName(FLUIDSIM, "f", "physics.coriolis"),
    OtherName(FLUIDSIM, "oper.nx", "grid.shape", "one key for the three axes"),
    OtherName(FLUIDSIM, "oper.Lx", "grid.box", "one key for the three axes"),
    OtherName(FLUIDSIM, "oper.coef_dealiasing", "physics.dealias", "a rule's name: 2/3 is two_thirds"),
    OtherName(FLUIDSIM, "time_stepping.deltat0", "time.dt"),
    OtherName(FLUIDSIM, "time_stepping.deltat_max", "time.dt", "with time.cfl, dt is the largest step"),
    OtherName(FLUIDSIM, "time_stepping.cfl_coef", "time.cfl"),
    OtherName(FLUIDSIM, "time_stepping.type_time_scheme", "time.integrator", "rk4, rk2, ... in lower case"),
    OtherName(FLUIDSIM, "forcing.forcing_rate", "physics.forcing_power"),
    OtherName(FLUIDSIM, "forcing.nkmax_forcing", "physics.forcing_band"),
    OtherName(FLUIDSIM, "init_fields.type", "initial.name"),
    OtherName(DEDALUS, "nu", "physics.viscosity"),
    OtherName(DEDALUS, "kappa", "physics.diffusivity", "the buoyancy's, in boussinesq"),
    OtherName(DEDALUS, "kappa", "physics.scalars[].diffusivity", "a passive scalar's"),
    OtherName(DEDALUS, "solver.stop_sim_time", "time.t_end"),
    OtherName(DEDALUS, "max_timestep", "time.dt", "with time.cfl, dt is the largest step"),
    OtherName(DEDALUS, "build_solver(timestepper)", "time.integrator", "rk4, rk3, rk2, ... in lower case"),
    OtherName(DEDALUS, "CFL(safety)", "time.cfl"),
    OtherName(DEDALUS, "Nx", "grid.shape", "one key for the three axes"),
    OtherName(DEDALUS, "Lx", "grid.box", "one key for the three axes"),
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


def leaf(name: str) -> str:
    """The word a user of the code writes for ``name``: ``oper.nx`` -> ``nx``, ``CFL(safety)`` -> ``safety``,
    lower case."""
    return re.split(r"[.(]", name.rstrip(")"))[-1].lower()


def matches(word: str) -> Iterator[OtherName]:
    """The rows whose name is ``word`` (case ignored)."""
    return (row for row in OTHER_NAMES if leaf(row.name) == word.lower())


def named(err: ConfigError) -> ConfigError:
    """``err``, an unknown key that another code names (``physics.nu``), said again with the key it is here, where
    the config has it (``"nu is Dedalus's name: here it is physics.viscosity"``) in place of a did-you-mean; any
    other error as it is. ``err.known``: the dotted keys of the section the key was given in."""
    known = getattr(err, "known", None)
    if err.problem != "is an unknown key" or known is None:
        return err
    rows = [row for row in matches(err.key.rsplit(".", 1)[-1]) if _has(row.key, known)]
    if not rows:
        return err
    codes = " and ".join(f"{code}'s" for code in dict.fromkeys(row.code for row in rows))
    notes: dict[str, list[str]] = {}
    for row in rows:
        notes.setdefault(row.key, [])
        if row.note and row.note not in notes[row.key]:
            notes[row.key].append(row.note)
    here = " or ".join(key + (f" ({'; '.join(said)})" if said else "") for key, said in notes.items())
    word = err.key.rsplit(".", 1)[-1]
    allowed = re.sub(r"^did you mean '[^']*'\? ", "", err.allowed)
    return ConfigError(err.key, err.value, f"{word} is {codes} name: here it is {here}; {allowed}", err.problem)


def _has(key: str, known: tuple[str, ...]) -> bool:
    """Whether the config has ``key``: a key of the section the unknown one was given in (``known``; a list's
    entries: the list), or of a common section (grid, time, output), which every config has (an equation's
    keys elsewhere: only its own)."""
    return key.split("[]", 1)[0] in known or key.split(".", 1)[0] in ("grid", "time", "output")


def markdown() -> str:
    """The table of :data:`OTHER_NAMES` for the config reference, by code."""
    rows = "".join(f"| {row.code} | `{row.name}` | `{row.key}` | {row.note} |\n" for row in OTHER_NAMES)
    return ("**Other codes' names.** A key written as FluidSim, Dedalus, JaxPM or Jaxion name it is refused with the "
            "key it is here (`physics.nu = 0.01 is an unknown key; nu is Dedalus's name: here it is "
            "physics.viscosity; ...`). FluidSim's names are those of its `params`:\n\n"
            "| code | its name | here | note |\n|---|---|---|---|\n" + rows)
