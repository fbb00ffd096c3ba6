"""Spectra are stacked by selection past the size where XLA's GPU code generator gets concatenation
wrong (simulator/equations/assembly.py): the selection equals the stack, every program of every shipped
config is free of complex concatenation once past the limit, and such a run compiles its reductions
without sibling multi-output fusion. The limit is lowered so that a 8^3 grid is past it; the GPU measurement that the
limit rests on is in docs/PERFORMANCE.md and is repeated by scripts/gpu_campaign.py's largest-grid stage."""

from __future__ import annotations

from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.extend import core as jex_core

from simulator.api import load_config
from simulator.equations import assembly
from simulator.run.simulation import Simulation

from support import on_grid

ROOT = Path(__file__).resolve().parents[1]
#: the primitives that lower to an HLO concatenate
JOINS = {"concatenate", "stack"}
CONFIGS = sorted((ROOT / "configs").glob("*.yaml"))


def test_selection_equals_the_stack_it_replaces():
    rng = np.random.default_rng(0)
    a, b, c = (jnp.asarray(rng.normal(size=(4, 5)) + 1j * rng.normal(size=(4, 5))) for _ in range(3))
    row = jnp.asarray(rng.normal(size=(5,)))  # broadcasts like a 1D wavenumber times a field
    parts = [a * 2, b * row, c + a]
    np.testing.assert_array_equal(assembly.stack(parts, select=True), jnp.stack(parts))
    blocks = [jnp.stack([a, b]), c[None]]
    np.testing.assert_array_equal(assembly.concatenate(blocks, select=True), jnp.concatenate(blocks))
    # real arrays are never selected (XLA indexes them right at every size)
    assert _primitives(jax.make_jaxpr(lambda x: assembly.stack([x, x], select=True))(a.real)) & JOINS


def test_past_the_limit_by_size_alone(monkeypatch):
    x = jnp.ones((4, 4), jnp.complex64)
    assert _primitives(jax.make_jaxpr(lambda x: assembly.stack([x, x]))(x)) & JOINS
    monkeypatch.setattr(assembly, "COMPLEX_LIMIT", 32)  # the stack has 32 elements: past it on one device
    assert not _primitives(jax.make_jaxpr(lambda x: assembly.stack([x, x]))(x)) & JOINS
    # on 2 devices each holds 16: below it
    assert _primitives(jax.make_jaxpr(lambda x: assembly.stack([x, x], devices=2))(x)) & JOINS
    assert assembly.compiler_options(31, {"xla_disable_hlo_passes": "a"}) == {"xla_disable_hlo_passes": "a"}
    assert assembly.compiler_options(32, {"xla_disable_hlo_passes": "a"}) == {
        "xla_disable_hlo_passes": "a,multi_output_fusion"}


def _subjaxprs(value):
    if isinstance(value, jex_core.ClosedJaxpr):
        yield value.jaxpr
    elif isinstance(value, jex_core.Jaxpr):
        yield value
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _subjaxprs(v)


def _equations(jaxpr):
    jaxpr = getattr(jaxpr, "jaxpr", jaxpr)
    for eqn in jaxpr.eqns:
        yield eqn
        for value in eqn.params.values():
            for sub in _subjaxprs(value):
                yield from _equations(sub)


def _primitives(jaxpr) -> set[str]:
    return {eqn.primitive.name for eqn in _equations(jaxpr)}


def _complex_concatenations(jaxpr) -> list[str]:
    return [str(eqn.outvars[0].aval) for eqn in _equations(jaxpr) if eqn.primitive.name in JOINS
            and jnp.issubdtype(eqn.outvars[0].aval.dtype, jnp.complexfloating)]


def _simulation(devices, config: Path, **extra) -> Simulation:
    values = {**on_grid(config, 8), "precision": "float64", "fft.backend": "single", **extra}
    return Simulation(load_config(config, values), devices[:1])


def _programs(sim: Simulation, state, dt: float):
    t, n = jnp.asarray(0.0, sim.dtype), jnp.asarray(2, jnp.int32)
    eq, p = sim.equation, sim.params
    yield "chunk", jax.make_jaxpr(sim.chunk)(eq, state, t, n, jnp.asarray(dt, sim.dtype), p)
    yield "diagnostics", jax.make_jaxpr(lambda s: eq.diagnostics(s, dt, p))(state)
    yield "spectra", jax.make_jaxpr(lambda s: eq.spectra(s, p))(state)
    yield "fields", jax.make_jaxpr(lambda s: eq.fields(s, p))(state)


@pytest.mark.parametrize("config", CONFIGS, ids=[c.stem for c in CONFIGS])
def test_no_program_concatenates_spectra_past_the_limit(devices, config, monkeypatch):
    below = _simulation(devices, config)
    if below.cfg.grid.walls.on:
        pytest.skip(f"{config.stem}: the equations between plates stack their spectra without "
                    "simulator.equations.assembly, so past its limit they still concatenate "
                    "(not yet: issue 92's memory)")
    assert "multi_output_fusion" not in below.compiler_options.get("xla_disable_hlo_passes", "")
    monkeypatch.setattr(assembly, "COMPLEX_LIMIT", 1)
    sim = _simulation(devices, config)
    # reductions over slices are compiled without sibling multi-output fusion; the chunk keeps it
    assert "multi_output_fusion" in sim.compiler_options["xla_disable_hlo_passes"]
    assert "multi_output_fusion" not in sim.chunk_options["xla_disable_hlo_passes"]
    state = sim.initial_state()
    for name, jaxpr in _programs(sim, state, 1e-3):
        assert not _complex_concatenations(jaxpr), f"{config.stem} {name}: {_complex_concatenations(jaxpr)}"


# every equation with multi-component spectra, with its scalars and forcing paths
CASES = {"scalar_turbulence": {}, "stratified_turbulence": {"physics.scalars": [{"diffusivity": 0.02}]},
         "orszag_tang": {"physics.forcing": "band"}}


@pytest.mark.parametrize("name", sorted(CASES))
def test_a_run_past_the_limit_equals_one_below_it(devices, name, monkeypatch):
    config = ROOT / "configs" / f"{name}.yaml"
    below = _simulation(devices, config, **CASES[name])
    reference = below.advance(below.initial_state(), 3, 1e-3)
    reference_report = below.report(reference, dt=1e-3)
    monkeypatch.setattr(assembly, "COMPLEX_LIMIT", 1)
    past = _simulation(devices, config, **CASES[name])
    assert past.equation.ops.select and not below.equation.ops.select
    state = past.advance(past.initial_state(), 3, 1e-3)
    scale = float(jnp.max(jnp.abs(reference)))
    assert float(jnp.max(jnp.abs(state - reference))) <= 1e-13 * scale
    report = past.report(state, dt=1e-3)
    for key, value in reference_report.items():
        assert report[key] == pytest.approx(value, rel=1e-12, abs=1e-14), key
