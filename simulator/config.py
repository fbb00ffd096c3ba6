"""YAML configuration -> frozen, typed, validated settings.

The schema is a tree of frozen dataclasses. Every field carries a default and a one-line doc in its
metadata (``doc``), plus optional constraints (``choices``, ``min``, ``max``, ``gt``). Loading walks the
schema generically, so a new section or key is declared once, in its dataclass, and is then parsed,
validated, overridable with ``--set`` and documented (``simulator config-docs``) without further code.

Every problem is a :class:`ConfigError`: one line naming the dotted key, the offending value and what
is allowed.
"""

from __future__ import annotations

import ast
import dataclasses
import difflib
import math
import operator
import types
import typing
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from simulator.errors import ConfigError

TWO_PI = 2.0 * math.pi


def _field(default: Any, doc: str, **constraints: Any) -> Any:
    """A schema field: default, one-line doc, and constraints checked by :func:`_check`."""
    meta = {"doc": doc, **constraints}
    if isinstance(default, (list, dict)):
        raise TypeError("mutable defaults are not allowed in the schema")
    return field(default=default, metadata=meta)


def _fft_backends() -> tuple[str, ...]:
    from simulator.fft.layouts import LAYOUTS

    return tuple(sorted(LAYOUTS))


@dataclass(frozen=True)
class GridConfig:
    """The periodic box and its grid."""

    shape: tuple[int, int, int] = _field(
        (32, 32, 32), "grid points (Nx, Ny, Nz); a single integer means a cubic grid", min=2
    )
    box: tuple[float, float, float] = _field(
        (TWO_PI, TWO_PI, TWO_PI),
        "box lengths (Lx, Ly, Lz); a single number means a cube; expressions like 2*pi are allowed",
        gt=0.0,
    )


@dataclass(frozen=True)
class FFTConfig:
    """The distributed FFT and its device decomposition."""

    backend: str = _field(
        "slab",
        "distributed FFT backend: slab (custom_partitioning, 1D mesh), pencil (shard_map, 2D mesh), "
        "jaxdecomp, or single (jnp.fft on one device, the reference)",
        choices=_fft_backends,
    )
    mesh: tuple[int, ...] | None = _field(
        None,
        "device mesh: [P] for a slab, [P0, P1] for a pencil (jaxdecomp takes either); "
        "null = all devices, slab-shaped for slab/jaxdecomp and near-square for pencil",
        min=1,
    )


@dataclass(frozen=True)
class RuntimeConfig:
    """Processes and devices. Under Slurm these are discovered from the environment."""

    cpu_devices: int | None = _field(
        None,
        "run on this many virtual CPU devices (a laptop stand-in for GPUs); null = JAX's default "
        "devices. Must be set before JAX starts: use this key or --cpu-devices",
        min=1,
        max=4096,
    )
    coordinator: str | None = _field(
        None,
        "host:port of process 0 for an explicit multi-process run (simulator launch sets it); "
        "null = discover from Slurm, or run as one process",
    )
    num_processes: int | None = _field(None, "process count of an explicit multi-process run", min=1)
    process_id: int | None = _field(None, "this process's index in an explicit multi-process run", min=0)


def _registry(kind: str) -> Callable[[], tuple[str, ...]]:
    """Lazy choices from a registry (the registries import JAX, which must not start at import)."""

    def names() -> tuple[str, ...]:
        if kind == "physics":
            from simulator.physics import EQUATIONS as reg
        elif kind == "integrator":
            from simulator.integrators import INTEGRATORS as reg
        elif kind == "forcing":
            from simulator.physics.forcing import FORCINGS as reg
        else:
            from simulator.physics import INITIAL_CONDITIONS

            reg = {n: None for table in INITIAL_CONDITIONS.values() for n in table}
        return tuple(sorted(reg))

    return names


@dataclass(frozen=True)
class PhysicsConfig:
    """The equation and its physical parameters (traced: changing them never recompiles)."""

    name: str = _field("navier_stokes", "equation to solve: navier_stokes or schrodinger_poisson",
                       choices=_registry("physics"))
    viscosity: float = _field(1.0 / 1600.0, "kinematic viscosity nu (navier_stokes)", min=0.0)
    forcing: str = _field("none", "navier_stokes forcing at constant injected power: none, linear (all modes, "
                          "Lundgren) or band (modes with 0 < |k| L/2pi <= forcing_band)", choices=_registry("forcing"))
    forcing_power: float = _field(0.1, "injected power per unit mass, epsilon (forced navier_stokes)", gt=0.0)
    forcing_band: float = _field(2.5, "highest forced mode number |k| L/2pi of band forcing", gt=0.0)
    hbar_over_m: float = _field(0.02, "hbar/m of the boson, length^2/time (schrodinger_poisson)", gt=0.0)
    G: float = _field(1.0, "gravitational constant, length^3/(mass time^2) (schrodinger_poisson)", min=0.0)


@dataclass(frozen=True)
class InitialConfig:
    """The initial condition, by name (each equation has its own table), and its options."""

    name: str = _field("taylor_green", "initial condition: taylor_green, abc, random (navier_stokes); "
                       "jeans, soliton, random (schrodinger_poisson)", choices=_registry("initial"))
    amplitude: float = _field(1.0, "velocity amplitude (taylor_green, abc), rms velocity (random NS), "
                              "density perturbation (jeans) or rms log-density (random SP)", gt=0.0)
    wavenumber: int = _field(1, "mode number of the abc flow or of the jeans wave (along x)", min=1)
    seed: int = _field(0, "random seed (random); the field is the same on any device layout", min=0)
    k_peak: float = _field(4.0, "peak mode number of a random field's spectrum", gt=0.0)
    density: float = _field(1.0, "mean density (jeans, random SP) or background density (soliton)", min=0.0)
    core_radius: float = _field(0.1, "soliton core radius r_c, where the density is half the central one",
                                gt=0.0)


@dataclass(frozen=True)
class TimeConfig:
    """Time stepping."""

    integrator: str | None = _field(
        None, "time integrator: rk4 (classical, integrating factor), lsrk4 (2-register low-storage, "
        "integrating factor) or kdk (kick-drift-kick split step); null = the equation's default "
        "(rk4 for navier_stokes, kdk for schrodinger_poisson)", choices=_registry("integrator"))
    dt: float = _field(0.01, "time step; with time.cfl set, the largest allowed step", gt=0.0)
    t_end: float = _field(1.0, "simulated time to reach", gt=0.0)
    cfl: float | None = _field(None, "adaptive time step: target CFL number, dt adjusted between chunks "
                               "(never above time.dt); null = fixed dt", gt=0.0)


@dataclass(frozen=True)
class OutputConfig:
    """What a run writes, and where."""

    dir: str | None = _field(None, "output directory; null = outputs/<name>")
    every: int = _field(10, "steps between diagnostics rows (the jitted chunk length)", min=1)
    spectra: bool = _field(True, "write shell-summed spectra to spectra.h5 with every diagnostics row")
    snapshot_every: int = _field(0, "steps between snapshots of the output fields (a multiple of output.every); "
                                 "0 = none unless snapshot_dt is set", min=0)
    snapshot_dt: float | None = _field(None, "simulated time between snapshots (taken at the first chunk end "
                                       "past each multiple); null = by step only", gt=0.0)


@dataclass(frozen=True)
class CheckpointConfig:
    """Checkpoints for restart: the exact state, every process writing its own blocks."""

    every: int = _field(0, "steps between checkpoints (a multiple of output.every); 0 = only at the end and "
                        "when a signal stops the run", min=0)
    keep: int = _field(2, "complete checkpoints kept (older ones are deleted)", min=1)


@dataclass(frozen=True)
class Config:
    """A whole simulation run."""

    name: str = _field("run", "a short name for the run, used in logs, plots and output folders")
    precision: str = _field(
        "float32",
        "floating-point precision of fields and transforms (float64 for verification runs)",
        choices=("float32", "float64"),
    )
    grid: GridConfig = field(default_factory=GridConfig, metadata={"doc": "the periodic box and its grid"})
    fft: FFTConfig = field(default_factory=FFTConfig, metadata={"doc": "the distributed FFT"})
    physics: PhysicsConfig = field(default_factory=PhysicsConfig, metadata={"doc": "the equation"})
    initial: InitialConfig = field(default_factory=InitialConfig, metadata={"doc": "the initial condition"})
    time: TimeConfig = field(default_factory=TimeConfig, metadata={"doc": "time stepping"})
    output: OutputConfig = field(default_factory=OutputConfig, metadata={"doc": "output"})
    checkpoint: CheckpointConfig = field(default_factory=CheckpointConfig, metadata={"doc": "checkpoints"})
    runtime: RuntimeConfig = field(
        default_factory=RuntimeConfig, metadata={"doc": "processes and devices"}
    )


# --------------------------------------------------------------------------------------------------
# Generic parsing and checking, driven by the dataclass annotations and field metadata.
# --------------------------------------------------------------------------------------------------

_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.Pow: operator.pow,
}
_NAMES = {"pi": math.pi, "e": math.e}


def _eval_number(text: str) -> float:
    """Evaluate a small arithmetic expression (``2*pi``, ``1/1600``, ``1e-3``) without ``eval``."""

    def ev(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)) and not isinstance(
            node.value, bool
        ):
            return float(node.value)
        if isinstance(node, ast.Name) and node.id in _NAMES:
            return _NAMES[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd)):
            v = ev(node.operand)
            return -v if isinstance(node.op, ast.USub) else v
        raise ValueError(text)

    return ev(ast.parse(text.strip(), mode="eval"))


def _type_name(tp: Any) -> str:
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        return " or ".join("null" if a is type(None) else _type_name(a) for a in typing.get_args(tp))
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return f"a list of {_type_name(args[0])}"
        return f"a list of {len(args)} {_type_name(args[0])}"
    if dataclasses.is_dataclass(tp):
        return "a mapping"
    return {int: "integer", float: "number", str: "string", bool: "boolean"}.get(tp, str(tp))


def _coerce(key: str, value: Any, tp: Any) -> Any:
    """Convert a YAML value to the annotated type, or raise ConfigError naming the key."""
    origin = typing.get_origin(tp)
    if origin in (types.UnionType, typing.Union):
        args = typing.get_args(tp)
        if value is None:
            if type(None) in args:
                return None
            raise ConfigError(key, value, f"expected {_type_name(tp)}", "is missing")
        for arg in args:
            if arg is type(None):
                continue
            try:
                return _coerce(key, value, arg)
            except ConfigError:
                continue
        raise ConfigError(key, value, f"expected {_type_name(tp)}", "has the wrong type")
    if origin is tuple:
        args = typing.get_args(tp)
        if isinstance(value, (int, float, str)) and not isinstance(value, bool) and args[-1] is not Ellipsis:
            value = [value] * len(args)  # a scalar means "the same along every axis"
        if not isinstance(value, (list, tuple)):
            raise ConfigError(key, value, f"expected {_type_name(tp)}", "has the wrong type")
        if args[-1] is Ellipsis:
            elem_types = [args[0]] * len(value)
            if not value:
                raise ConfigError(key, value, f"expected {_type_name(tp)}", "is empty")
        else:
            elem_types = list(args)
            if len(value) != len(args):
                raise ConfigError(
                    key, value, f"expected {_type_name(tp)}", f"has {len(value)} entries"
                )
        return tuple(_coerce(f"{key}[{i}]", v, t) for i, (v, t) in enumerate(zip(value, elem_types, strict=True)))
    if tp is bool:
        if isinstance(value, bool):
            return value
        raise ConfigError(key, value, "expected true or false", "has the wrong type")
    if tp is int:
        if isinstance(value, int) and not isinstance(value, bool):
            return value
        if isinstance(value, float) and value.is_integer():
            return int(value)
        raise ConfigError(key, value, "expected an integer", "has the wrong type")
    if tp is float:
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value)
        if isinstance(value, str):
            try:
                return _eval_number(value)
            except (ValueError, SyntaxError, ZeroDivisionError, OverflowError):
                pass
        raise ConfigError(
            key, value, "expected a number (an expression such as 2*pi or 1/1600 is allowed)",
            "has the wrong type",
        )
    if tp is str:
        if isinstance(value, str):
            return value
        raise ConfigError(key, value, "expected a string", "has the wrong type")
    raise TypeError(f"unsupported schema type {tp!r} for {key}")


def _scalars(value: Any) -> Iterator[Any]:
    if isinstance(value, tuple):
        yield from value
    elif value is not None:
        yield value


def _check(key: str, value: Any, meta: Mapping[str, Any]) -> None:
    """Apply a field's constraints (choices, min, max, gt) to every scalar of its value."""
    choices = meta.get("choices")
    if choices is not None and value is not None:
        allowed = choices() if callable(choices) else choices
        if value not in allowed:
            close = difflib.get_close_matches(str(value), [str(a) for a in allowed], n=1)
            hint = f" (did you mean {close[0]!r}?)" if close else ""
            raise ConfigError(key, value, f"expected one of: {', '.join(allowed)}{hint}", "is unknown")
    for v in _scalars(value):
        if "min" in meta and v < meta["min"]:
            raise ConfigError(key, value, f"every entry must be >= {meta['min']}", "is out of range")
        if "max" in meta and v > meta["max"]:
            raise ConfigError(key, value, f"every entry must be <= {meta['max']}", "is out of range")
        if "gt" in meta and not v > meta["gt"]:
            raise ConfigError(key, value, f"every entry must be > {meta['gt']}", "is out of range")
        if isinstance(v, float) and not math.isfinite(v):
            raise ConfigError(key, value, "every entry must be finite", "is out of range")


def _build(cls: type, data: Any, prefix: str) -> Any:
    """Build dataclass ``cls`` from a mapping, filling defaults and rejecting unknown keys."""
    where = prefix.rstrip(".") or "config"
    if data is None:
        data = {}
    if not isinstance(data, Mapping):
        raise ConfigError(where, data, "expected a mapping of keys to values", "has the wrong type")
    hints = typing.get_type_hints(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    for name in data:
        if name not in fields:
            close = difflib.get_close_matches(str(name), list(fields), n=1)
            hint = f"did you mean '{prefix}{close[0]}'? " if close else ""
            raise ConfigError(
                f"{prefix}{name}", data[name], f"{hint}known keys here: {', '.join(fields)}",
                "is an unknown key",
            )
    kwargs = {}
    for name, f in fields.items():
        key = f"{prefix}{name}"
        tp = hints[name]
        if dataclasses.is_dataclass(tp):
            kwargs[name] = _build(tp, data.get(name), f"{key}.")
        elif name in data:
            kwargs[name] = _coerce(key, data[name], tp)
            _check(key, kwargs[name], f.metadata)
    return cls(**kwargs)


def _set_dotted(tree: dict, key: str, value: Any) -> None:
    parts = key.split(".")
    node = tree
    for i, part in enumerate(parts[:-1]):
        child = node.get(part)
        if child is None:
            child = node[part] = {}
        if not isinstance(child, dict):
            raise ConfigError(".".join(parts[: i + 1]), child, "it is a value, not a section", "cannot hold keys")
        node = child
    node[parts[-1]] = value


def apply_overrides(tree: dict, overrides: Sequence[str]) -> dict:
    """Apply ``dotted.key=value`` overrides to a raw config mapping; values are parsed as YAML."""
    values = {}
    for item in overrides:
        key, sep, text = item.partition("=")
        if not sep or not key.strip():
            raise ConfigError("--set", item, "expected dotted.key=value, e.g. grid.shape=[64,64,64]", "is malformed")
        try:
            values[key.strip()] = yaml.safe_load(text) if text.strip() else None
        except yaml.YAMLError:
            values[key.strip()] = text
    return set_values(tree, values)


def set_values(tree: dict, values: Mapping[str, Any]) -> dict:
    """A copy of the raw config mapping ``tree`` with ``{dotted.key: value}`` set (later keys win)."""
    tree = _deep_copy(tree)
    for key, value in values.items():
        _set_dotted(tree, key, value)
    return tree


def _deep_copy(tree: Any) -> Any:
    if isinstance(tree, dict):
        return {k: _deep_copy(v) for k, v in tree.items()}
    if isinstance(tree, list):
        return [_deep_copy(v) for v in tree]
    return tree


def read_yaml(path: str | Path) -> dict:
    """Read a YAML config file into a raw mapping; a missing, empty or malformed file is a ConfigError."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError("config file", str(path), "give the path of an existing YAML file", "does not exist")
    try:
        data = yaml.safe_load(path.read_text())
    except yaml.YAMLError as err:
        mark = getattr(err, "problem_mark", None)
        where = f"{path}:{mark.line + 1}" if mark is not None else str(path)
        problem = getattr(err, "problem", None) or str(err).splitlines()[0]
        raise ConfigError("config file", where, "fix the YAML syntax there", f"is malformed YAML ({problem})") from None
    if data is None:
        raise ConfigError("config file", str(path), "it must hold a mapping of keys to values", "is empty")
    if not isinstance(data, dict):
        raise ConfigError(
            "config file", str(path), "the top level must be a mapping of keys to values", "has the wrong type"
        )
    return data


def from_dict(data: Mapping[str, Any]) -> Config:
    """Build, validate and resolve a Config from a raw mapping (every default filled in)."""
    cfg = _build(Config, data, "")
    validate(cfg)
    return resolve(cfg)


def load(path: str | Path | None, overrides: Sequence[str] = ()) -> Config:
    """Read ``path`` (or start from defaults when None), apply ``--set`` overrides, validate once."""
    raw = read_yaml(path) if path is not None else {}
    return from_dict(apply_overrides(raw, overrides))


def validate(cfg: Config) -> None:
    """Cross-field checks that need more than one key: the grid against the device decomposition."""
    from simulator.fft.layouts import LAYOUTS

    backend = LAYOUTS[cfg.fft.backend]
    backend.check_mesh_request(cfg.fft.mesh, "fft.mesh")
    # The device count is known here only for a single-process run with virtual CPU devices or an
    # explicit mesh; otherwise the shape checks that need no mesh run now and the rest at start-up.
    n_devices = cfg.runtime.cpu_devices if cfg.runtime.coordinator is None else None
    mesh_shape = backend.mesh_shape(n_devices or 1, cfg.fft.mesh if cfg.fft.mesh or n_devices else None)
    backend.check_layout(cfg.grid.shape, mesh_shape, key="grid.shape")
    _check_physics(cfg)
    for key, value in (("output.snapshot_every", cfg.output.snapshot_every), ("checkpoint.every", cfg.checkpoint.every)):
        if value % cfg.output.every:
            raise ConfigError(key, value, f"must be a multiple of output.every = {cfg.output.every} (0 = none)",
                              "does not fall on a chunk boundary")
    if cfg.runtime.coordinator is not None and (cfg.runtime.num_processes is None or cfg.runtime.process_id is None):
        raise ConfigError(
            "runtime.coordinator", cfg.runtime.coordinator,
            "an explicit multi-process run also needs runtime.num_processes and runtime.process_id",
            "is incomplete",
        )
    if cfg.runtime.process_id is not None and cfg.runtime.num_processes is not None:
        if cfg.runtime.process_id >= cfg.runtime.num_processes:
            raise ConfigError(
                "runtime.process_id", cfg.runtime.process_id,
                f"must be < runtime.num_processes = {cfg.runtime.num_processes}", "is out of range",
            )


def _check_physics(cfg: Config) -> None:
    """The initial condition, integrator and forcing must exist for the chosen equation."""
    from simulator.physics import EQUATIONS, INITIAL_CONDITIONS

    eq = EQUATIONS[cfg.physics.name]
    allowed = f"for physics.name = {cfg.physics.name} use one of: "
    if cfg.initial.name not in INITIAL_CONDITIONS[cfg.physics.name]:
        raise ConfigError("initial.name", cfg.initial.name,
                          allowed + ", ".join(INITIAL_CONDITIONS[cfg.physics.name]), "is not available")
    if cfg.time.integrator is not None and cfg.time.integrator not in eq.integrators:
        raise ConfigError("time.integrator", cfg.time.integrator, allowed + ", ".join(eq.integrators),
                          "is not available")
    if cfg.physics.forcing != "none" and cfg.physics.name != "navier_stokes":
        raise ConfigError("physics.forcing", cfg.physics.forcing, "forcing applies to navier_stokes only; "
                          "use none", "is not available")


def resolve(cfg: Config) -> Config:
    """Fill the defaults that depend on other keys (time.integrator from the equation)."""
    if cfg.time.integrator is None:
        from simulator.physics import EQUATIONS

        default = EQUATIONS[cfg.physics.name].integrators[0]
        cfg = dataclasses.replace(cfg, time=dataclasses.replace(cfg.time, integrator=default))
    return cfg


def to_dict(cfg: Any) -> dict:
    """The resolved config as plain YAML-able data (tuples become lists)."""

    def plain(v: Any) -> Any:
        if isinstance(v, tuple):
            return [plain(x) for x in v]
        if isinstance(v, dict):
            return {k: plain(x) for k, x in v.items()}
        return v

    return plain(dataclasses.asdict(cfg))


def dump(cfg: Config) -> str:
    """The resolved config as YAML text."""
    return yaml.safe_dump(to_dict(cfg), sort_keys=False, default_flow_style=None)


def iter_fields(cls: type = Config, prefix: str = "") -> Iterator[tuple[str, str, Any, str]]:
    """Yield (dotted key, type name, default, doc) for every leaf of the schema."""
    hints = typing.get_type_hints(cls)
    for f in dataclasses.fields(cls):
        tp = hints[f.name]
        if dataclasses.is_dataclass(tp):
            yield from iter_fields(tp, f"{prefix}{f.name}.")
        else:
            yield f"{prefix}{f.name}", _type_name(tp), f.default, f.metadata["doc"]


#: the lines between which README.md holds the generated reference
DOCS_MARKERS = ("<!-- config-docs:start -->", "<!-- config-docs:end -->")


def config_docs() -> str:
    """The config reference as a Markdown table, generated from the schema."""
    lines = ["| key | type | default | description |", "|---|---|---|---|"]
    for key, tname, default, doc in iter_fields():
        if isinstance(default, tuple):
            default = list(default)
        shown = yaml.safe_dump(default, default_flow_style=True).strip().removesuffix("...").strip()
        cell = doc.replace("|", "\\|")  # a literal | would end the Markdown cell
        lines.append(f"| `{key}` | {tname} | `{shown}` | {cell} |")
    return "\n".join(lines) + "\n"
