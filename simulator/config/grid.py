"""The grid section: a box or a plane (:mod:`simulator.fft.plane`), and what a plane asks of the rest of the config
(no JAX)."""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulator.errors import ConfigError
from simulator.fft import bases, plane
from simulator.schema import section, setting

TWO_PI = 2.0 * math.pi
#: the grid of a planar equation's config that gives none
PLANE_DEFAULT = [32, 32]


#: the name of the direction across the plates, a plane's (its x-z plane) as a box's: the grid's last direction
PLATES_AXIS = "z"
#: the plates' axis of a plane as its configs named it before it was z, read as z with a note (:func:`plates_axis`)
PLANE_PLATES_AXIS = "y"


def plates_axis(data: Mapping[str, Any]) -> tuple[Mapping[str, Any], str | None]:
    """``data`` with a plane's ``grid.walls.axis: y`` read as z (:data:`PLATES_AXIS`), and the line that says so
    (None when nothing was read so)."""
    grid = data.get("grid")
    walls = grid.get("walls") if isinstance(grid, Mapping) else None
    shape = grid_entries(grid) if isinstance(grid, Mapping) else None
    if not (isinstance(walls, Mapping) and walls.get("axis") == PLANE_PLATES_AXIS and isinstance(shape, (list, tuple))
            and len(shape) == 2):
        return data, None
    return ({**data, "grid": {**grid, "walls": {**walls, "axis": PLATES_AXIS}}},
            f"grid.walls.axis = {PLANE_PLATES_AXIS} is read as {PLATES_AXIS}: a plane's plates lie across z, its "
            f"second direction, as a box's (write {PLATES_AXIS})")


def grid_entries(grid: Mapping[str, Any]) -> Any:
    """The raw grid section's ``shape``, else its ``modes`` (``grid.modes``): what says a plane or a box before the
    points are chosen."""
    return grid.get("shape", grid.get("modes"))


#: a velocity's condition at a plate (:attr:`WallsConfig.series` the bounded basis the pair takes)
VELOCITY_WALLS = ("free-slip", "no-slip")
#: a temperature's or scalar's condition at a plate: its parity in the free-slip basis (simulator.fft.bases)
SCALAR_WALLS = {"fixed-value": "odd", "fixed-flux": "even"}
#: the fewest points across the plates each bounded basis runs with: the Helmholtz solves of the no-slip flows
#: (simulator.walls.helmholtz) take n >= 4 coefficients, 4 Gauss-Lobatto points (below that the compiled step
#: fails); a sine or cosine series runs on 2
MIN_ACROSS = {"sincos": 2, "chebyshev": 4, "legendre": 4}
#: the polynomial bases (simulator.walls.bases), on which each plate has its own conditions, by their names
POLYNOMIAL = {"chebyshev": "Chebyshev", "legendre": "Legendre"}


@dataclass(frozen=True)
class WallsConfig:
    """The bounded direction: plates at 0 and H across the last direction of the box or plane, and each
    field's condition at the bottom and top plate."""

    axis: str | None = setting(None, "the direction between two plates: z, the last direction of the box or plane "
                               "(a plane's y is read as z, with a note); its length is the distance H between "
                               "the plates; null = every direction periodic")
    velocity: tuple[str, str] = setting(("free-slip", "free-slip"), "the velocity's condition at the bottom and top "
                                        "plate: free-slip (stress-free, impermeable) or no-slip (at rest, or moving "
                                        "along the plate). Between free-slip plates the sine and cosine basis; with a "
                                        "no-slip plate the Chebyshev basis, on which each plate has its own condition "
                                        "(a free surface above a no-slip plate: [no-slip, free-slip])")
    temperature: tuple[str, str] = setting(("fixed-value", "fixed-value"), "the temperature's (and each passive "
                                           "scalar's) condition at the bottom and top plate: fixed-value or "
                                           "fixed-flux; one of each on the Chebyshev basis (a no-slip plate), the "
                                           "same at both between free-slip plates (a fixed flux there only with "
                                           "no-slip plates: between free-slip ones it would make the temperature a "
                                           "cosine series)")
    basis: str = setting("auto", "the basis across the plates: auto (sine and cosine series between free-slip "
                         "plates, Chebyshev with a no-slip plate), sincos (free-slip plates only), chebyshev (any "
                         "plates: free-slip plates on Chebyshev series as Dedalus runs them, each plate its own "
                         "temperature condition) or legendre (the same plates on Legendre series, Shen-Legendre "
                         "Galerkin solves; dense transforms, for a few dozen points across)",
                         choices=("auto", "sincos", "chebyshev", "legendre"))

    @property
    def on(self) -> bool:
        """Whether the grid has plates."""
        return self.axis is not None

    @property
    def series(self) -> str:
        """The bounded direction's basis (a key of :data:`simulator.fft.bases.BOUNDED`) that runs: :attr:`basis`
        where it names one; else ``chebyshev`` where a plate is no-slip (each plate its own conditions there) and
        ``sincos`` between free-slip plates."""
        if self.basis != "auto":
            return self.basis
        return "chebyshev" if "no-slip" in self.velocity else "sincos"

    @property
    def bounded(self) -> str | None:
        """The basis across the plates (:attr:`series`), None on a periodic grid: what the domain's last axis is."""
        return self.series if self.on else None

    def parity(self) -> str:
        """The temperature's parity in the free-slip basis: ``odd`` (sine) or ``even`` (cosine)."""
        return SCALAR_WALLS[self.temperature[0]]


@dataclass(frozen=True)
class GridConfig:
    """The periodic box or plane and its grid."""

    shape: tuple[int, int, int] | tuple[int, int] = setting(
        (32, 32, 32), "grid points (Nx, Ny, Nz) of a box, or (Nx, Ny) of a plane (docs: the plane); a single integer "
        "means a cubic grid (a square one, and [32, 32] by default, for a planar equation); the last entry even, "
        "except across plates (grid.walls), where any count is taken from 2 (free-slip) or 4 (no-slip: 65 "
        "Gauss-Lobatto points, [64, 64, 65])",
        min=1, max=1 << 20)
    modes: tuple[int, int, int] | tuple[int, int] | None = setting(
        None, "the modes to keep, (Mx, My, Mz) of a box or (Mx, Mz) of a plane, as Dedalus counts a basis's size "
        "(a periodic axis's M: |m| < M/2; across plates: degrees 0 .. M - 1), instead of grid.shape (give one of the "
        "two); the grid is then chosen per axis: the fewest points whose 2/3 rule keeps those modes and whose "
        "transform is fast (periodic: an even FFT-friendly N; Chebyshev: N - 1 FFT-friendly; sine and cosine: N "
        "FFT-friendly; Legendre: any N), written to grid.shape ([256, 64] between no-slip plates: [384, 97]); "
        "null = grid.shape gives the points; a restart compares the shape chosen: the modes may change on a restart",
        min=1, max=1 << 19, restart="free")
    box: tuple[float, float, float] | tuple[float, float] = setting(
        (TWO_PI, TWO_PI, TWO_PI),
        "box lengths (Lx, Ly, Lz), or (Lx, Ly) of a plane; a single number means a cube (or a square); expressions "
        "like 2*pi are allowed", gt=0.0)
    walls: WallsConfig = section(WallsConfig, "plates across the last direction (docs: explanation/walls)")

    def __post_init__(self) -> None:
        shape, box = tuple(self.shape), tuple(self.box)
        if len(shape) == 3 and 1 in shape:
            raise ConfigError("grid.shape", list(shape), f"two entries for a plane ({list(n for n in shape if n > 1)}"
                              ") or three of at least 2 for a box", "has an entry of 1")
        if len(shape) == 2 and min(shape) < 2:
            raise ConfigError("grid.shape", list(shape), "entries of at least 2", "is out of range")
        if len(shape) == 2 and len(box) == 3:
            if len(set(box)) > 1:  # a single number (or the default) comes as three equal lengths
                raise ConfigError("grid.box", list(box), f"two lengths [Lx, Ly] for the plane grid.shape = "
                                  f"{list(shape)} (or one number)", "has three lengths")
            object.__setattr__(self, "box", box[:2])
        if len(shape) == 3 and len(box) == 2:
            raise ConfigError("grid.box", list(box), f"three lengths [Lx, Ly, Lz] for the box grid.shape = "
                              f"{list(shape)} (or one number)", "has two lengths")

    @property
    def plane(self) -> bool:
        """Whether the grid is a plane (``shape`` of two entries)."""
        return plane.is_plane(self.shape)

    @property
    def cells(self) -> tuple[int, int, int]:
        """The box the grid runs as (a plane's ``(1, Nx, Ny)``: :mod:`simulator.fft.plane`)."""
        return plane.cells(self.shape)

    @property
    def lengths(self) -> tuple[float, float, float]:
        """The lengths of :attr:`cells`."""
        return plane.lengths(self.shape, self.box)

    def domain(self) -> tuple[bases.Basis, bases.Basis, bases.Basis]:
        """The bases of :attr:`cells` (no JAX): Fourier along the periodic axes, the basis across the plates last
        (:func:`simulator.fft.bases.domain`); the run's backend builds the same (``fft.domain``)."""
        return bases.domain(self.cells, self.lengths, self.walls.bounded)


def plane_backends() -> tuple[str, ...]:
    """The FFT backends whose layout takes a plane (``Layout.takes_plane``: a split of one axis)."""
    from simulator.fft.layouts import LAYOUTS

    return tuple(sorted(name for name, layout in LAYOUTS.items() if layout.takes_plane))


def check_dimensions(cfg: Any, equations: Mapping[str, Any]) -> None:
    """A plane runs a planar equation on a backend that takes it, a box a three-dimensional equation
    (``equations``: the registry's declarations by name)."""
    dims = len(cfg.grid.shape)
    _check_shape(list(cfg.grid.shape), cfg.physics.name, equations)
    if dims == 2 and cfg.fft.backend not in plane_backends():
        raise ConfigError("fft.backend", cfg.fft.backend, f"one of {', '.join(plane_backends())} for a plane "
                          f"(grid.shape = {list(cfg.grid.shape)}: it splits along one axis, as a slab)",
                          "does not take a plane")


def _check_shape(shape: list[int], name: str, equations: Mapping[str, Any]) -> None:
    """A ``grid.shape`` of as many entries as equation ``name`` has dimensions, else the one-line refusal."""
    dims, info = len(shape), equations[name]
    if dims != info.dimensions:
        kind = {2: "a plane", 3: "a box"}
        others = sorted(other_name for other_name, other in equations.items() if other.dimensions == dims)
        raise ConfigError("grid.shape", shape, f"{kind[info.dimensions]} for physics.name = {name} "
                          f"({'[Nx, Ny]' if info.dimensions == 2 else '[Nx, Ny, Nz]'}), or for {kind[dims]} "
                          f"physics.name one of: {', '.join(others)}", f"is {kind[dims]}")


def check_raw_dimensions(data: Mapping[str, Any], name: Any) -> None:
    """The plane-or-box refusal of :func:`check_dimensions` on the config as given, before its sections are
    built: a box's equation on a plane's config is refused naming ``grid.shape``, not the first key of the
    plane's sections it lacks (``initial.energy``). A shape that is not two or three integers of at least 2 is
    left to the grid section's own checks."""
    from simulator.equations import registry

    grid = data.get("grid")
    shape = grid.get("shape") if isinstance(grid, Mapping) else None
    equations = registry()
    if (not isinstance(name, str) or name not in equations or not isinstance(shape, (list, tuple))
            or len(shape) not in (2, 3)
            or not all(isinstance(n, int) and not isinstance(n, bool) and n >= 2 for n in shape)):
        return
    _check_shape(list(shape), name, equations)


def check_walls(cfg: Any, equations: Mapping[str, Any]) -> None:
    """Plates across the last direction of a box or plane, with an equation that declares it takes them, on a
    backend whose layout does, with conditions the free-slip basis represents (``equations``: the registry's
    declarations by name)."""
    walls, info = cfg.grid.walls, equations[cfg.physics.name]
    if not walls.on:
        if info.walls == "required":  # said before the periodic grid's own checks (an odd count) blame the grid
            raise ConfigError("grid.walls.axis", None, f"{PLATES_AXIS}: {cfg.physics.name} runs between two plates "
                              "across the last direction", "leaves the grid periodic")
        return
    if walls.axis != PLATES_AXIS:
        raise ConfigError("grid.walls.axis", walls.axis, f"{PLATES_AXIS}, the last direction of the "
                          f"{'plane' if cfg.grid.plane else 'box'} grid.shape = {list(cfg.grid.shape)}, or null",
                          "is not a direction that can lie between plates")
    if info.walls == "none":
        takes = sorted(name for name, other in equations.items() if other.walls != "none")
        raise ConfigError("grid.walls.axis", walls.axis, f"null for physics.name = {cfg.physics.name}, which is "
                          f"periodic only{'; plates: physics.name ' + ' or '.join(takes) if takes else ''}",
                          "cannot be used with this equation")
    if cfg.particles:
        raise ConfigError("particles", [species.name for species in cfg.particles], "none with grid.walls: particles "
                          "do not reflect at plates yet", "cannot be carried between plates")
    from simulator.fft.layouts import LAYOUTS, known_mesh

    layout = LAYOUTS[cfg.fft.backend]
    if not layout.takes_walls:
        allowed = sorted(name for name, other in LAYOUTS.items() if other.takes_walls)
        raise ConfigError("fft.backend", cfg.fft.backend, f"one of {', '.join(allowed)} with grid.walls (the "
                          "bounded direction is transformed whole on each device, which a backend whose transforms "
                          "run inside its package does not do)", "does not take walls")
    mesh = known_mesh(cfg)
    # a plane's backends are refused by the grid's own checks, a mesh of the wrong rank by the backend's
    if mesh is not None and not cfg.grid.plane and len(mesh) == len(layout.axis_names):
        layout.check_walls_layout(cfg.grid.cells, mesh)
    for i, condition in enumerate(walls.velocity):
        if condition not in VELOCITY_WALLS:
            raise ConfigError("grid.walls.velocity", list(walls.velocity), f"two of: {', '.join(VELOCITY_WALLS)} "
                              "(bottom, top)", f"has {condition!r} at the {('bottom', 'top')[i]} plate")
        if condition not in info.wall_velocity:
            takes = sorted(name for name, other in equations.items() if other.walls != "none"
                           and condition in other.wall_velocity and other.dimensions == info.dimensions)
            raise ConfigError("grid.walls.velocity", list(walls.velocity), f"{' or '.join(info.wall_velocity)} plates "
                              f"for physics.name = {cfg.physics.name}; {condition} plates: physics.name "
                              f"{' or '.join(takes)}", "is not available for this equation")
    if walls.basis == "sincos" and "no-slip" in walls.velocity:
        raise ConfigError("grid.walls.basis", walls.basis, "auto, chebyshev or legendre with a no-slip plate (the sine "
                          "and cosine series hold free-slip plates only; grid.walls.velocity = "
                          f"{list(walls.velocity)})",
                          "cannot hold a no-slip plate")
    if info.wall_velocity[0] == "free-slip" and walls.series in POLYNOMIAL:  # a sine and cosine equation
        takes = sorted(name for name, other in equations.items() if other.walls != "none"
                       and other.wall_velocity[0] == "no-slip" and other.dimensions == info.dimensions
                       and "free-slip" in other.wall_velocity)
        names = ([info.physics] if info.physics else []) + takes
        raise ConfigError("grid.walls.basis", walls.basis, f"auto or sincos for physics.name = {cfg.physics.name} "
                          f"(sine and cosine series); the {POLYNOMIAL[walls.series]} basis: physics.name "
                          f"{' or '.join(names)}",
                          "is not available for this equation")
    if info.wall_velocity[0] == "no-slip" and walls.series not in POLYNOMIAL:  # a Chebyshev or Legendre equation
        takes = sorted(name for name, other in equations.items() if other.walls != "none"
                       and other.wall_velocity[0] == "free-slip" and other.dimensions == info.dimensions)
        on_chebyshev = ", or grid.walls.basis: chebyshev" if "free-slip" in info.wall_velocity else ""
        raise ConfigError("grid.walls.velocity", list(walls.velocity), f"a no-slip plate at least for physics.name = "
                          f"{cfg.physics.name} (the Chebyshev basis){on_chebyshev}; free-slip plates on sine and "
                          f"cosine series: physics.name {' or '.join(takes)}", "has no no-slip plate")
    for i, condition in enumerate(walls.temperature):
        if condition not in SCALAR_WALLS:
            raise ConfigError("grid.walls.temperature", list(walls.temperature), f"two of: {', '.join(SCALAR_WALLS)}"
                              " (bottom, top)", f"has {condition!r} at the {('bottom', 'top')[i]} plate")
    if len(set(walls.temperature)) > 1 and walls.series == "sincos":
        raise ConfigError("grid.walls.temperature", list(walls.temperature), "the same condition at both plates, "
                          "[fixed-value, fixed-value] or [fixed-flux, fixed-flux], between free-slip plates (the "
                          "sine and cosine basis holds a field as one sine or one cosine series); a plate of each "
                          "with a no-slip plate or grid.walls.basis: chebyshev", "mixes conditions")
    fewest, across = MIN_ACROSS[walls.series], cfg.grid.shape[-1]
    if across < fewest:
        kind, basis = ("no-slip", POLYNOMIAL[walls.series]) if walls.series in POLYNOMIAL else ("free-slip",
                                                                                                  "sine and cosine")
        raise ConfigError("grid.shape", list(cfg.grid.shape), f"at least {fewest} points across the {kind} plates "
                          f"(the last entry): the fewest the {basis} basis runs with",
                          "has too few points across the plates")


def default_grid(data: Mapping[str, Any], name: Any) -> Mapping[str, Any]:
    """``data`` with a planar equation's grid: :data:`PLANE_DEFAULT` where it gives no ``grid.shape``, a square where it
    gives one integer (a box's default and cube are the schema's); and an equation's plates and box where it requires
    plates and names none (``EquationInfo.walls``, ``default_box``)."""
    from simulator.equations import registry

    info = registry().get(name) if isinstance(name, str) else None
    grid = data.get("grid")
    if info is None or (grid is not None and not isinstance(grid, Mapping)):
        return data
    grid = dict(grid or {})
    if info.walls == "required" and "walls" not in grid:  # between plates across the last direction
        grid["walls"] = {"axis": PLATES_AXIS}
    walls = grid.get("walls")
    if info.walls == "required" and info.wall_velocity[0] != "free-slip" and isinstance(walls, Mapping):
        # plates the equation alone takes, where the config names none (a plate's condition given, its axis not)
        grid["walls"] = {"axis": PLATES_AXIS, "velocity": [info.wall_velocity[0]] * 2,
                         **walls}
    if info.default_box is not None and "box" not in grid:
        grid["box"] = list(info.default_box)
    if info.dimensions != 2:
        return {**data, "grid": grid}
    key = "modes" if grid.get("modes") is not None and "shape" not in grid else "shape"  # the points or the modes
    shape = grid.get(key, PLANE_DEFAULT)
    if isinstance(shape, int) and not isinstance(shape, bool):  # one integer: a square, as it is a cube for a box
        shape = [shape, shape]
    return {**data, "grid": {**grid, key: shape}}


def physics_member(data: Mapping[str, Any], name: Any) -> Mapping[str, Any]:
    """``data`` with ``physics.name`` the equation of its physics that runs this grid.

    A physics (``EquationInfo.physics``: ``convection``, ``channel``) is one equation per geometry and kind of plates;
    its name takes them from the grid: the member whose :attr:`~simulator.equations.spec.EquationInfo.dimensions` are
    ``grid.shape``'s and whose ``wall_velocity`` takes ``grid.walls.velocity`` (a no-slip plate: the Chebyshev member;
    free-slip plates: the sine and cosine one where there is one), else the named equation's own plates. A member's
    own name (``convection2d_noslip``) runs that member. What the member then refuses (a plate it does not take) is
    said by :func:`check_walls` in its words; the run log's header names the member and its physics."""
    from simulator.equations import registry

    equations = registry()
    info = equations.get(name) if isinstance(name, str) else None
    if info is None or info.physics != name:  # no family, or a member named by its own name
        return data
    grid = data.get("grid") if isinstance(data.get("grid"), Mapping) else {}
    shape, walls, box = grid_entries(grid), grid.get("walls"), grid.get("box")
    # the plane or the box: grid.shape's entries, else (one number: a square or a cube) grid.box's
    given = next((len(v) for v in (shape, box) if isinstance(v, (list, tuple)) and len(v) in (2, 3)), None)
    dims = given or info.dimensions
    velocity = walls.get("velocity") if isinstance(walls, Mapping) else None
    no_slip = (VELOCITY_WALLS[1] in velocity if isinstance(velocity, (list, tuple))
               else info.wall_velocity[0] == VELOCITY_WALLS[1])
    # free-slip plates on the Chebyshev basis where the config asks for it (grid.walls.basis), as Dedalus runs them
    no_slip = no_slip or (isinstance(walls, Mapping) and walls.get("basis") in POLYNOMIAL)
    members = [m for m in equations.values() if m.physics == name and m.dimensions == dims]
    # plates no member takes go to the grid's member, which refuses them in its words
    chosen = next((m for m in members if (VELOCITY_WALLS[1] in m.wall_velocity) == no_slip),
                  members[0] if members else None)
    if chosen is None or chosen.name == name:
        return data
    physics = data.get("physics") if isinstance(data.get("physics"), Mapping) else {}
    return {**data, "physics": {**physics, "name": chosen.name}}


def member_note(name: Any) -> str | None:
    """The one-line note for an equation named by its own name where its physics has one name (``physics.name:
    convection2d_noslip``, a name of 0.4): the name to write instead; None for a physics' own name and for an
    equation of no family. The old name runs as it did (:func:`physics_member` leaves it)."""
    from simulator.equations import registry

    info = registry().get(name) if isinstance(name, str) else None
    if info is None or info.physics is None or info.physics == name:
        return None
    return (f"physics.name = {name!r} is now physics.name = {info.physics!r}: the plane or the box follows from "
            f"grid.shape and the plates from grid.walls.velocity (the old name still works; rename it)")
