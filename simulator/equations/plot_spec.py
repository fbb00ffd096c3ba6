"""The plot defaults an equation declares (:attr:`simulator.equations.spec.EquationInfo.plot`, no JAX): its
time-series panels and their curves, the spectra drawn and how (Kolmogorov's conventions, the budget terms).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from simulator.equations.templates import INDEX, TERMS, instances


@dataclass(frozen=True)
class Curve:
    """One line of a time-series panel: a diagnostic column, its label, and how it is drawn:
    ``relative`` plots a conserved quantity's drift (x - x[0]) / |x[0]|, or, when ``scale`` names
    columns, (x - x[0]) / (sum of their absolute values at each time): the drift of a sum measured
    against the size of its parts (the total energy K + W against |K| + |W|). A column template
    (``{i}``) draws a line per column it declares, ``{i}`` in the label replaced by the index.
    ``hyperviscous``: what the label adds for a run with hyperviscous terms (a coefficient of
    :meth:`EquationParams.hyperviscous_coefficients` > 0), their part of the quantity. ``terms``: the
    (column, symbol) pairs of a sum the column is made of, which ``{terms}`` in the label names, those of the
    run's columns only (:meth:`with_terms`: a run without a component has no column of its energy, and its
    total none of it)."""

    column: str
    label: str
    relative: bool = False
    scale: tuple[str, ...] = ()
    hyperviscous: str = ""
    terms: tuple[tuple[str, str], ...] = ()

    def label_for(self, hyperviscous: bool) -> str:
        """The label of a run with (``hyperviscous``) or without hyperviscous terms."""
        return self.label + self.hyperviscous if hyperviscous else self.label

    def with_terms(self, columns: Iterable[str]) -> Curve:
        """This curve, ``{terms}`` in its label the symbols of :attr:`terms` whose columns are among ``columns``."""
        have = set(columns)
        named = " + ".join(symbol for column, symbol in self.terms if column in have)
        return dataclasses.replace(self, label=self.label.replace(TERMS, named)) if self.terms else self


@dataclass(frozen=True)
class Panel:
    """One panel of the time-series figure. ``log``: "auto" uses a log axis when the values are
    positive and span more than a decade."""

    ylabel: str
    curves: tuple[Curve, ...]
    log: str = "never"


@dataclass(frozen=True)
class Kolmogorov:
    """Kolmogorov's conventions for an equation's spectrum: the time-series columns whose sum is the dissipation
    rate eps of its energy (the compensated spectrum is eps^(-2/3) k^(5/3) E(k), and eps with the
    ``physics.<viscosity>`` key places the Kolmogorov scale, which says whether the spectrum's guide is drawn),
    and the ``constant`` its plateau takes in the inertial range, drawn dashed (Kolmogorov's C_K of the 3D
    kinetic energy spectrum; None for spectra without an established one)."""

    dissipation: tuple[str, ...]
    viscosity: str = "viscosity"
    constant: float | None = None


@dataclass(frozen=True)
class Budget:
    """An energy budget the run's time series must close: d(``quantity``)/dt = sum of ``gains`` - sum of
    ``losses`` (diagnostic columns; absent ones, e.g. the injection of an unforced run, count as 0).
    ``label``: the quantity in TeX, e.g. ``E_K + E_P``."""

    quantity: str
    losses: tuple[str, ...]
    gains: tuple[str, ...] = ()
    label: str = "E"


@dataclass(frozen=True)
class PlotSpec:
    """Plot defaults of an equation: time-series panels, the spectrum drawn and its axis label, an optional
    power-law guide (its exponent), and the field a slice shows. ``more_spectra``: further spectra (templates
    allowed), each present one drawn alone in ``spectra_<name>.png``. Panels whose columns a run lacks are left out.

    ``resolved``: the largest resolved wavenumber as a fraction of the grid's Nyquist wavenumber
    min_i pi N_i / L_i (2/3 for an equation dealiased by the 2/3 rule); spectra are drawn up to there.
    ``viscosity``: the ``physics.*`` key of a kinematic viscosity, if any: a sweep over it gets a
    secondary Reynolds-number axis.
    ``reference``: another of its spectra (e.g. linear theory) drawn dashed beside each row shown.
    ``budget``: the energy budget ``plots/budget.png`` checks against the time series.
    ``side_by_side``: spectra drawn side by side in ``plots/spectra_side_by_side.png`` (e.g. kinetic and
    magnetic energy), each above its budget terms (``transfer_<name>``, ``conversion_<name>``,
    ``injection_<name>``, those the file holds).
    ``maps``: 2D spectra over (k_h, |k_z|) (``simulator.observables.spectra.cylinder_sum``), each drawn as a map in
    ``plots/spectra_<name>.png``.
    ``kolmogorov``: the conventions of the compensated spectrum and of the guide (:class:`Kolmogorov`).
    ``labels``: what titles and axes call its spectra, by name (templates allowed), e.g. ``kinetic energy``
    (:meth:`name_of`).
    ``slice_fallback``: the fields a slice shows in a run whose snapshots lack ``slice_field`` (the structure
    leaves it out: a particle-only run has no wave density), the first they hold."""

    panels: tuple[Panel, ...]
    spectrum: str
    spectrum_label: str
    slice_field: str
    spectrum_guide: float | None = None
    resolved: float = 1.0
    viscosity: str | None = None
    more_spectra: tuple[str, ...] = ()
    reference: str | None = None
    reference_label: str = ""
    budget: Budget | None = None
    side_by_side: tuple[str, ...] = ()
    maps: tuple[str, ...] = ()
    kolmogorov: Kolmogorov | None = None
    labels: Mapping[str, str] = dataclasses.field(default_factory=dict)
    slice_fallback: tuple[str, ...] = ()
    #: further power laws the spectrum is drawn compensated by (``spectra_compensated_<exponent>.png``: a plane's
    #: inverse-cascade k^(-5/3) beside its enstrophy range's k^(-3))
    more_guides: tuple[float, ...] = ()
    #: further fields drawn by ``simulator plot`` beside the slice field, each in ``slice_<field>.png`` (a shallow
    #: layer's divergence beside its potential vorticity), those the snapshots hold
    more_slices: tuple[str, ...] = ()
    #: time-series columns whose mean over ``simulator plot --window T0 T1`` the time-series figure draws as a running
    #: mean from T0 and states with its standard error (convection's Nusselt numbers, a channel's Re_tau)
    averaged: tuple[str, ...] = ()

    def name_of(self, spectrum: str) -> str:
        """What a figure calls ``spectrum``: its label (a template's with ``{i}`` replaced by the index), else
        its name with spaces for underscores (``power_cdm`` -> ``power cdm``)."""
        for template, label in self.labels.items():
            for i, _ in instances(template, [spectrum]):
                return label if i is None else label.replace(INDEX, str(i))
        return spectrum.replace("_", " ")
