"""Passive scalars, for any equation with an incompressible velocity: what such an equation declares
(no JAX here; the terms are in :mod:`.terms`).

Any number of scalars theta_i, each advected by the flow with its own diffusivity kappa_i and an
optional uniform mean gradient G_i:

    d theta_i/dt + u . grad theta_i = kappa_i lap theta_i - u . G_i

theta_i is the fluctuation about the mean profile G_i . x, which the flow stirs: -u . G_i is the source
of its variance (the standard set-up of scalar turbulence: Overholt & Pope 1996, Phys. Fluids 8, 3128;
Pope, Turbulent Flows, 2000, §5.5). Without G_i it is a freely decaying scalar.

An equation composes them by declaring:

* in its parameters, ``scalars: tuple[PassiveScalar, ...] = scalar_list()`` (``physics.scalars``, a
  list of sections: the number of scalars is structure, their diffusivities and gradients are traced);
* in each initial condition, ``scalars: ScalarInitial = scalar_initial()`` (``initial.scalars``: one
  section for every scalar, whatever the flow's initial condition, so ``initial.name`` keeps choosing
  the velocity) and :func:`check_initial` in its ``check``;
* :data:`FIELD` as its field ``scalar`` (and :func:`field_info` for an instance's), and :data:`DIAGNOSTICS`,
  :data:`ADVICE`, :data:`SPECTRA`, :data:`PANELS`, :data:`MORE_SPECTRA` and :data:`LABELS` after its own
  (:func:`carried` appends them all; per-scalar names are templates: ``scalar{i}_variance``).

Normalisations (volume means, theta' = theta - <theta>): ``scalar{i}_variance`` <theta'^2>;
``scalar{i}_dissipation`` chi = 2 kappa <|grad theta|^2>; ``scalar{i}_flux`` <u' theta'> . G/|G|, so that
d<theta'^2>/dt = -2 |G| flux - chi. The spectrum ``scalar{i}_variance`` is |theta_hat|^2 summed over
shells (shell 0 holds <theta>^2, the others sum to the variance); ``transfer_scalar{i}_variance`` is its
rate of change by advection (it sums to zero) and ``production_scalar{i}_variance`` by the mean
gradient, so that dE_theta(k)/dt = T(k) + P(k) - 2 kappa k^2 E_theta(k) shell by shell.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulator.equations.spec import Curve, FieldInfo, Panel, PlotSpec
from simulator.errors import ConfigError
from simulator.schema import param, random_seed, section, setting

#: initial conditions of the scalars (``initial.scalars.name``)
SCALAR_INITIALS = ("zero", "random")


@dataclass(frozen=True)
class PassiveScalar:
    """One passive scalar: an entry of ``physics.scalars``."""

    diffusivity: float = param(1e-3, "diffusivity kappa of this scalar", min=0.0)
    mean_gradient: tuple[float, float, float] = param(
        (0.0, 0.0, 0.0), "uniform mean gradient G = (Gx, Gy, Gz): the scalar is the fluctuation about G.x, "
        "forced by -u.G; [0, 0, 0] = none")


def scalar_list() -> Any:
    """The ``scalars`` field of an equation's parameters: a list of :class:`PassiveScalar`, empty by default."""
    return setting((), "passive scalars advected by the flow, one section each, e.g. [{diffusivity: 1e-3, "
                   "mean_gradient: [0, 0, 1]}]; [] = none (see initial.scalars)")


@dataclass(frozen=True)
class ScalarInitial:
    """The initial condition of every passive scalar (``initial.scalars``)."""

    name: str = setting("zero", "initial scalars: zero, or random (isotropic, variance spectrum ~ k^4 "
                        "exp(-2 (k/k_peak)^2); scalar i drawn from seed and i, the same on any device layout)",
                        choices=SCALAR_INITIALS)
    amplitude: float = param(1.0, "rms of each scalar (random)", gt=0.0)
    k_peak: float = param(4.0, "peak mode number of the variance spectrum (random)", gt=0.0)
    seed: int = random_seed("random seed of the scalars (0 to 2^32 - 1)")


def scalar_initial() -> Any:
    """The ``scalars`` field of an initial condition: one :class:`ScalarInitial` for every scalar."""
    return section(ScalarInitial, "initial condition of every passive scalar of physics.scalars")


def check_initial(initial: ScalarInitial, cfg: Any) -> None:
    """Scalar initial conditions need scalars: set without any, they would be ignored silently."""
    if initial != ScalarInitial() and not cfg.physics.scalars:
        raise ConfigError("initial.scalars.name", initial.name, "declare scalars in physics.scalars, or leave "
                          "initial.scalars out", "has no scalar to apply to")


FIELD = FieldInfo(1, "passive scalars theta_i, one per entry of physics.scalars (n_scalars, Nx, Ny, Nz)",
                  r"\theta", cmap="RdBu_r", stacked=True)


def field_info(fields: Mapping[str, FieldInfo], count: int) -> dict[str, FieldInfo]:
    """An equation's declared ``fields`` for an instance with ``count`` scalars: ``scalar`` (:data:`FIELD`)
    holding that many, or absent without any."""
    out = dict(fields)
    scalar = out.pop("scalar")
    if count:
        out["scalar"] = dataclasses.replace(scalar, components=count)
    return out

DIAGNOSTICS = {
    "scalar{i}_variance": "variance <theta_i'^2> of passive scalar i (theta' = theta - <theta>)",
    "scalar{i}_dissipation": "scalar dissipation chi_i = 2 kappa_i <|grad theta_i|^2>",
    "scalar{i}_flux": "flux <u' theta_i'> . G_i/|G_i| along the mean gradient (0 without one); "
                      "d<theta_i'^2>/dt = -2 |G_i| flux - chi_i",
    "scalar{i}_kmax_eta": "k_max times the smallest scale of scalar i: the Batchelor scale eta Sc^(-1/2) for "
                          "Sc = nu/kappa_i >= 1, else the Obukhov-Corrsin scale eta Sc^(-3/4); below 1 under-resolved",
}

SPECTRA = {
    "scalar{i}_variance": "variance spectrum E_theta(k) of scalar i: |theta_hat|^2 / N^2 (Parseval-weighted) "
                          "summed over the modes of shell k; shell 0 holds <theta>^2, the others sum to the "
                          "variance <theta'^2>",
    "transfer_scalar{i}_variance": "transfer T_theta(k): rate of change of E_theta(k) by advection, "
                                   "2 Re(conj(theta_hat) (-u.grad theta)_hat) / N^2 per shell; sums to 0",
    "production_scalar{i}_variance": "production P_theta(k): rate of change of E_theta(k) by the mean gradient, "
                                     "2 Re(conj(theta_hat) (-u.G)_hat) / N^2 per shell",
}

PANELS = (
    Panel(r"$\langle\theta'^2\rangle$", (Curve("scalar{i}_variance", r"$\langle\theta_{i}'^2\rangle$"),), log="auto"),
    Panel(r"$\chi$", (Curve("scalar{i}_dissipation", r"$\chi_{i} = 2\kappa_{i}\langle|\nabla\theta_{i}|^2\rangle$"),)),
    Panel("flux", (Curve("scalar{i}_flux", r"$\langle u'\theta_{i}'\rangle\cdot\hat G_{i}$"),)),
)

MORE_SPECTRA = ("scalar{i}_variance",)
#: what figures call the spectra (``PlotSpec.labels``)
LABELS = {"scalar{i}_variance": "scalar {i} variance"}
#: what to do when a scalar is under-resolved (``EquationInfo.resolution_advice``)
ADVICE = {"scalar{i}_kmax_eta": "refine grid.shape, or raise physics.scalars[{i}].diffusivity"}


def carried(declared: Mapping[str, Any]) -> dict[str, Any]:
    """An equation's declaration (:class:`~simulator.equations.spec.EquationInfo`'s fields by name) with the passive
    scalars' after its own: the field ``scalar`` (:data:`FIELD`, part of the state), :data:`DIAGNOSTICS`,
    :data:`ADVICE` and :data:`SPECTRA`, and in its figures :data:`PANELS`, :data:`MORE_SPECTRA` and :data:`LABELS`."""
    plot: PlotSpec = declared["plot"]
    return {**declared, "fields": {**declared["fields"], "scalar": FIELD},
            "state_fields": (*declared["state_fields"], "scalar"),
            "diagnostics": {**declared["diagnostics"], **DIAGNOSTICS},
            "resolution_advice": {**declared.get("resolution_advice", {}), **ADVICE},
            "spectra": {**declared["spectra"], **SPECTRA},
            "plot": dataclasses.replace(plot, panels=(*plot.panels, *PANELS), labels={**plot.labels, **LABELS},
                                        more_spectra=(*plot.more_spectra, *MORE_SPECTRA))}
