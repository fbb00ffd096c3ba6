"""The structure the code promises: imports that run one way, modules that read files without JAX,
meshes and shardings known only to the runtime and the FFT package, equations that keep the
contract they declare, modules of a readable size."""

import ast
import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest

from simulator.equations import registry
from simulator.equations.base import PROTOCOLS
from simulator.equations.spec import FILE
from simulator.time.schemes import SCHEMES, SEMILINEAR, compatible

PACKAGE = Path(__file__).parents[1] / "simulator"


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


#: a declaration naming what it imports later: ``"simulator.a.b:function"`` or a module ``"simulator.a.b"`` (an
#: output kind's functions, a scheme's step factory, an equation's implementation, a registry's modules)
REFERENCE = re.compile(r"^(simulator(?:\.\w+)+)(?::[\w.]+)?$")


def imports(path: Path, top_level_only: bool) -> set[str]:
    """simulator.* modules imported by ``path`` (at module level only, or anywhere: inside functions, and
    the modules its declaration strings name, :data:`REFERENCE`, which are imported when called)."""
    tree = ast.parse(path.read_text())
    nodes = tree.body if top_level_only else list(_walk_run_time(tree))
    found = set()
    for node in nodes:
        if isinstance(node, ast.If) and top_level_only:  # `if TYPE_CHECKING:` blocks never run
            continue
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (ref := REFERENCE.match(node.value)):
            found.add(ref[1])
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("simulator")}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("simulator"):
            found.add(node.module)
            found |= {f"{node.module}.{a.name}" for a in node.names}
    return found


def _walk_run_time(tree: ast.AST):
    """Every node of ``tree`` except those inside ``if TYPE_CHECKING:`` blocks (never run)."""
    for node in ast.iter_child_nodes(tree):
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            continue
        yield node
        yield from _walk_run_time(node)


MODULES = {module_name(p): p for p in PACKAGE.rglob("*.py")}


@pytest.mark.parametrize("where", ["module level", "anywhere"])
def test_imports_have_no_cycles(where):
    """Modules import one way, at module level and inside functions alike (an import inside a function
    is a dependency too: a cycle there means two modules that cannot be understood apart), and so do the
    declarations that name a ``"module:function"`` to import later: a string is an import (an output kind
    once named the writer factories of run/records.py, which built the writers back in output/)."""
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        edges = set()
        for m in imports(path, where == "module level"):
            # importing a.b.c runs a/b/__init__ first: an edge to it, unless it is the importer's own package
            parts = m.split(".")
            for i in range(2, len(parts) + 1):
                target = ".".join(parts[:i])
                if target in MODULES and target != name and not name.startswith(target + "."):
                    edges.add(target)
        graph[name] = edges
    state: dict[str, int] = {}

    def visit(node, trail):
        if state.get(node) == 1:
            raise AssertionError("import cycle: " + " -> ".join(trail[trail.index(node):] + [node]))
        if state.get(node) == 2:
            return
        state[node] = 1
        for nxt in sorted(graph[node]):
            visit(nxt, trail + [node])
        state[node] = 2

    for name in sorted(graph):
        visit(name, [])


#: the package's rooms (its folders and top-level modules; ``__init__`` the package's own), lowest floor first: a
#: room imports only rooms below it or itself, at module level, inside functions and under TYPE_CHECKING alike,
#: and so do the ``"module:function"`` strings declarations name. docs/ARCHITECTURE.md gives the same list.
LAYERS = (
    "errors", "log", "version", "threads", "shipped",  # what every floor shares; no simulator import but errors
    "cache_entries", "cache", "launch", "gpu_binding",  # the compilation cache (its entries); launcher; GPU binding
    "schema",  # the schema engine
    "fft", "time", "walls",  # transforms, meshes and the particles' per-device slots; the schemes; the plates' bases
    "observables", "equations", "particles",  # device measurements (shell sums...); the equations; their particles
    "output", "config",  # the output kinds and their files; the run config composing every declaration
    "runtime", "gradients", "run", "planning",  # processes and devices; running; planning (admission handed down)
    "sweep_file", "sweep", "sweep_slurm", "sweep_collect",  # sweeps, which start runs, and their results' table
    "plots", "results",  # figures from files; a run's results read back (load_run(...).plot draws)
    "benchmark", "api", "cli", "entry", "__main__", "__init__",  # the doors
)


def room(module: str) -> str:
    """The top-level room of a ``simulator`` module or of a name imported from one (``simulator.__version__``
    is the package's own: ``__init__``)."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 and ".".join(parts[:2]) in MODULES else "__init__"


def every_import(path: Path) -> set[str]:
    """Every ``simulator`` module or name ``path`` imports: at module level, inside functions, under
    ``if TYPE_CHECKING:``, and the modules its declaration strings name (:data:`REFERENCE`). ``from simulator
    import x`` imports ``simulator.x`` (the package's own ``__init__`` runs for any import: no dependency)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and (ref := REFERENCE.match(node.value)):
            found.add(ref[1])
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("simulator")}
        elif isinstance(node, ast.ImportFrom) and node.module == "simulator":
            found |= {f"simulator.{a.name}" for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("simulator."):
            found.add(node.module)
    return found


def test_rooms_import_down_the_layers():
    """Folders import one way as files do (:data:`LAYERS`): no import points up a floor. A lower floor that must
    call a higher one is handed the function (the admission check and the compile counter that whoever starts a
    run passes to simulator/run/ and runtime.py); what two floors share lives on the lower one (the particles'
    slots and stack in fft/, the trajectory file's reader beside its writer in output/)."""
    rooms = {room(name) if name != "simulator" else "__init__" for name in MODULES}
    assert sorted(LAYERS) == sorted(rooms), f"list every room once: {sorted(rooms ^ set(LAYERS))}"
    floor = {r: i for i, r in enumerate(LAYERS)}
    up = [f"{name} ({room(name)}) imports {m} ({room(m)})" for name, path in MODULES.items() if name != "simulator"
          for m in sorted(every_import(path)) if floor[room(m)] > floor[room(name)]]
    assert not up, f"{len(up)} imports point up:\n" + "\n".join(up)


def test_the_architecture_page_gives_the_floors_and_every_module():
    """docs/ARCHITECTURE.md's floors are :data:`LAYERS` in order, and its package tree names every module: a
    top-level module by its file name, a folder's module by its file name in the folder's entry, and a package
    inside a folder (an equation's) by its directory."""
    text = (PACKAGE.parent / "docs" / "ARCHITECTURE.md").read_text()
    floors = text.split("The floors, lowest first", 1)[1].split("):", 1)[1].split(". A room", 1)[0]
    assert tuple(re.findall(r"`(\w+)`", floors)) == LAYERS
    tree = text.split("```\nsimulator/\n", 1)[1].split("```", 1)[0]
    entries: dict[str, str] = {}  # a folder's entry: its lines, to the next top-level name
    for line in tree.splitlines():
        if (top := re.match(r"  (\S+)", line)) is not None:
            folder = top[1]
        entries[folder] = entries.get(folder, "") + line + "\n"
    missing = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE).parts
        name = parts[-1] if len(parts) <= 2 else parts[1] + "/"
        where = tree if len(parts) == 1 else entries.get(parts[0] + "/", "")
        if name != "__init__.py" and not re.search(rf"(?<![\w/]){re.escape(name)}", where):
            missing.append("/".join(parts))
    assert not missing, f"docs/ARCHITECTURE.md's package tree leaves out {missing}"


def test_library_modules_never_import_the_cli():
    """Only the command line's own modules (the package simulator/cli/) and the entry points import it."""
    for name, path in MODULES.items():
        if name != "simulator.cli" and not name.startswith("simulator.cli.") and name not in ("simulator.__main__",
                                                                                           "simulator.entry"):
            found = [m for m in imports(path, False) if m == "simulator.cli" or m.startswith("simulator.cli.")]
            assert not found, (name, found)


def test_readers_and_planners_import_without_jax():
    """Reading results, plotting, sweeps, configs, the command line and the public API's entry point load no
    JAX, nor do the planner's cost model and memory figures."""
    code = ("import sys; import simulator, simulator.plots, simulator.sweep, simulator.config, simulator.api, "
            "simulator.equations, simulator.output.tasks, simulator.plots.tasks, simulator.results.load, "
            "simulator.results.export, simulator.output.lagrangian, simulator.run.grouping, simulator.cli, "
            "simulator.schema.build, simulator.schema.overrides, simulator.schema.dump, simulator.planning.cost, "
            "simulator.output.segments, simulator.equations.stored, simulator.sweep_collect, simulator.version, "
            "simulator.planning.memory; simulator.equations.registry(); "
            "print(sorted(m for m in sys.modules if m == 'jax' or m.startswith('jax.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]", out


def test_only_the_runtime_and_the_fft_package_build_meshes_or_shardings():
    allowed = {"simulator.runtime"}
    for name, path in MODULES.items():
        if name in allowed or name.startswith("simulator.fft"):
            continue
        text = path.read_text()
        for word in ("NamedSharding(", "PartitionSpec(", "make_mesh(", "Mesh("):
            assert word not in text, f"{name} builds {word}"


def private_uses(path: Path) -> list[str]:
    """Private names (``_x``, not dunders) of other simulator modules that ``path`` imports or reads."""
    own = module_name(path)
    tree = ast.parse(path.read_text())
    aliases: dict[str, str] = {}  # local name -> simulator module it is bound to
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("simulator") and a.asname:
                    aliases[a.asname] = a.name
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("simulator"):
            for a in node.names:
                # a package's private submodule (a compiled extension) is its own package's business
                package = own if path.name == "__init__.py" else own.rpartition(".")[0]
                if a.name.startswith("_") and not a.name.startswith("__") and node.module not in (own, package):
                    found.append(f"{own} imports {node.module}.{a.name}")
                if f"{node.module}.{a.name}" in MODULES:
                    aliases[a.asname or a.name] = f"{node.module}.{a.name}"
    for node in ast.walk(tree):
        if (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases
                and node.attr.startswith("_") and not node.attr.startswith("__") and aliases[node.value.id] != own):
            found.append(f"{own} reads {aliases[node.value.id]}.{node.attr}")
    return found


def test_no_module_uses_another_modules_private_names():
    """A module's underscored names are its own: another module that needs one needs a public name
    (the run loop and the ensemble once shared six private helpers; now both drive run/segment.py)."""
    found = [use for path in MODULES.values() for use in private_uses(path)]
    assert not found, found


#: the lines a module may have (about 400)
STANDARD_LINES = 420
#: a module is split by responsibility before it fills: none within 5% of the rule (399 lines or more) unless listed
FULL_LINES = int(0.95 * STANDARD_LINES)
#: the few modules allowed at or past :data:`FULL_LINES`, each at its size and why it is one: a module that grows
#: changes this list in the same diff (and one that shrinks below it leaves the list)
ALLOWED_LINES = {
    "simulator.equations.base": 413,  # the protocols every equation implements (explicit, semi-linear, IMEX), defaults
    "simulator.fft.base": 400,  # the one interface every backend implements: its methods and their shared defaults
    "simulator.fft.local": 421,  # the local FFT's two paths: each FFTW call (r2c, c2r, c2c, DCT-I) with its transpose
    "simulator.fft.window": 418,  # the windows' weights and their gather and scatter as JAX primitives, one per path
    "simulator.output.checkpoints": 425,  # writing, validating, restoring and listing read one marker and layout
    "simulator.output.hdf5": 512,  # the writer and the readers share one file layout: apart, one could change alone
    "simulator.output.rows": 412,  # one policy for every row file on a restart: continue it, cut it, set it aside
    "simulator.run.simulation": 445,  # the one class users hold: chunks, programs, rollouts, outputs (run/states.py)
}


def test_modules_are_of_a_readable_size():
    """Below :data:`FULL_LINES` (5% under the rule of :data:`STANDARD_LINES`), or a module's own listed allowance
    (:data:`ALLOWED_LINES`, with its reason)."""
    for name, path in MODULES.items():
        lines = path.read_text().count("\n")
        assert lines < FULL_LINES or lines <= ALLOWED_LINES.get(name, 0), \
            f"{name} has {lines} lines: split it by responsibility, or list it in ALLOWED_LINES with its reason"
    for name, allowed in ALLOWED_LINES.items():
        assert name in MODULES and allowed >= FULL_LINES, f"{name}: list only a module of {FULL_LINES} lines or more"
        lines = MODULES[name].read_text().count("\n")
        assert lines >= FULL_LINES, f"{name} has {lines} lines: no allowance needed, take it off the list"


def test_no_equation_package_imports_another():
    """Equations stand beside each other: what two of them share lives in a module of its own
    (simulator/equations/flow/, operators.py, scalars/), never in one equation's package that the other
    imports (Boussinesq and MHD once took their forcing, checks and initial fields from Navier-Stokes)."""
    from simulator.equations import PACKAGES

    packages = [p for p in PACKAGES if (PACKAGE.parent / p.replace(".", "/") / "__init__.py").exists()]
    assert len(packages) >= 5
    found = []
    for package in packages:
        others = [p for p in packages if p != package]
        for path in (PACKAGE.parent / package.replace(".", "/")).rglob("*.py"):
            found += [f"{module_name(path)} imports {m}" for m in imports(path, False)
                      if any(m == o or m.startswith(o + ".") for o in others)]
    assert not found, found


@pytest.mark.parametrize("name", list(registry()))
def test_every_equation_keeps_its_declared_contract(name):
    """Its implementation follows the protocol it declares (so its integrators fit), builds every
    initial condition it declares (``file`` is built in), rebuilds its state from fields its snapshots
    hold, its default integrator is one its protocol allows, and one that declares a diagonal L
    (``diagonal_linear``, what ``etdrk4`` needs) defines it."""
    info = registry()[name]
    cls = info.load()
    assert issubclass(cls, PROTOCOLS[info.protocol]) and cls.info is info
    assert not getattr(cls, "__abstractmethods__", None), cls.__abstractmethods__
    assert set(cls.builders) | {FILE} == set(info.initial_table)
    assert set(cls.snapshot_sources or info.state_fields) <= {n for n, f in info.fields.items() if f.snapshot}
    schemes = compatible(info.protocol, info.diagonal_linear)
    assert info.default_integrator in schemes
    assert all(SCHEMES[s].protocol == info.protocol for s in schemes)
    if info.protocol == SEMILINEAR and info.diagonal_linear:  # what an exponential scheme calls: its own diagonal L
        from simulator.equations.base import SemiLinearEquation

        assert cls.linear is not SemiLinearEquation.linear, f"{name}: declares diagonal_linear without linear()"
    from simulator.equations.scalars import PassiveScalar
    from simulator.schema import section_list_item, type_hints

    if any(f.name == "scalars" and section_list_item(type_hints(info.params)[f.name]) is PassiveScalar
           for f in dataclasses.fields(info.params)):
        # a host of periodic passive scalars implements the declared protocol: every member of ScalarHost is a
        # class attribute or one of the pytree's leaves or static fields (scalars between plates are the flow
        # core's, simulator.equations.wall_scalars)
        from simulator.equations.scalars.terms import CarriesScalars, ScalarHost

        assert issubclass(cls, CarriesScalars), cls
        members = set(ScalarHost.__annotations__) | {n for n in vars(ScalarHost) if not n.startswith("_")}
        provided = {n for n in members if hasattr(cls, n)} | set(cls._LEAVES) | set(cls._STATIC)
        assert members <= provided, members - provided


def test_the_module_to_tests_table_covers_every_module():
    """docs/ARCHITECTURE.md's "Tests by module" table lists every module of simulator/ (a folder row
    covers the modules inside it), and every test file it names exists."""
    import re

    text = (PACKAGE.parent / "docs" / "ARCHITECTURE.md").read_text()
    table = text.split("## Tests by module", 1)[1].split("\n## ", 1)[0]
    covered, named = set(), set()
    for row in (line for line in table.splitlines() if line.startswith("| `")):
        modules, tests = row.strip("|").split("|")[:2]
        covered |= set(re.findall(r"`(simulator/[^`]*)`", modules))
        named |= set(re.findall(r"`(test_\w+\.py)`", tests))
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE.parent).as_posix()
        assert rel in covered or any(c.endswith("/") and rel.startswith(c) for c in covered), \
            f"{rel} is not in the module -> tests table of docs/ARCHITECTURE.md"
    missing = sorted(t for t in named if not (PACKAGE.parent / "tests" / t).exists())
    assert not missing, f"the table names test files that do not exist: {missing}"
    assert len(named) > 20
