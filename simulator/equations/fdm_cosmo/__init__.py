"""Fuzzy dark matter in an expanding universe: the comoving Schrodinger-Poisson equations, what the
equation declares (the implementation is :mod:`.equation`).

In cosmic time t and comoving coordinates x, with psi normalised so that |psi|^2 = rho is the comoving
mass density (Widrow & Kaiser 1993, ApJ 416, L71; Schive, Chiueh & Broadhurst 2014, Nat. Phys. 10, 496):

    i dpsi/dt = -(nu / 2 a^2) lap(psi) + (V_tot / nu) psi,      V_tot = V + g (|psi|^2 - rho_bar) / a^3,
    lap(V) = (4 pi G / a) (|psi|^2 - rho_bar),                    nu = hbar / m,

with a(t) from the Friedmann equation (:mod:`.cosmology`), rho_bar = omega_m rho_crit,0 the mean
comoving density and g an optional self-interaction (> 0 repulsive, < 0 attractive; its uniform part
g rho_bar / a^3 only turns the global phase of psi, so it is left out like the mean density's gravity). Units are those
of :mod:`.cosmology`: lengths (``grid.box``) in comoving Mpc/h, the run's clock ``time`` is
s = ln(a / a_start) (so ``time.t_end`` follows from ``physics.z_end``, and ``time.dt`` is a step in
ln a), densities in rho_crit,0. Outputs at given redshifts are ``output.*.times`` at s(z).

Host-side hooks: the end time and output times from redshifts (:meth:`FDMCosmoParams.resolve`), the
unit system and a, z, t of every output, redshift labels for figures, and the running Layzer-Irvine
residual of the time series.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from simulator.equations import cold, resolution, scales
from simulator.equations.fdm_cosmo import cosmology
from simulator.equations.spec import Clock, Curve, EquationParams, FieldInfo, InitialCondition, Panel, PlotSpec
from simulator.errors import ConfigError
from simulator.schema import param, random_seed, setting


@dataclass(frozen=True)
class FDMCosmoParams(cold.ColdParams, EquationParams):
    """The cosmology (background, linear spectrum), the boson, and the span of the run in redshift."""

    name: str = setting("fdm_cosmo", "equation to solve")
    h: float = param(0.7, "dimensionless Hubble constant, H0 = 100 h km/s/Mpc", gt=0.0)
    omega_m: float = param(0.3, "matter density today over the critical density (all of it the box's dark "
                           "matter, the wave's and the particles': the mean comoving density is omega_m rho_crit,0)",
                           gt=0.0)
    omega_lambda: float = param(0.7, "cosmological constant over the critical density; flat when omega_m + "
                                "omega_lambda = 1, else curvature omega_k = 1 - omega_m - omega_lambda")
    m22: float = param(1.0, "boson mass in units of 1e-22 eV/c^2", gt=0.0)
    fdm_fraction: float = param(1.0, "fraction f of the matter in the wave (mean |psi|^2 = f omega_m), 0 <= f <= 1; "
                                "the rest, 1 - f, is cold dark matter in physics.cdm_particles particles; 1 = a pure "
                                "wave run; 0 = pure cold dark matter, the particles alone (no wave is allocated or "
                                "stepped; the wave's own keys m22, self_interaction, f_a, fdm_transfer are refused "
                                "when given, whatever the value); "
                                "an f > 0 at least 2^-126 / (2^-23 omega_m) in float32 (3.3e-31 at omega_m = 0.3), "
                                "2^-1022 / (2^-52 omega_m) in float64, else the wave's contrasts underflow",
                                min=0.0, max=1.0, structural_zero=True)
    cdm_particles: int = setting(0, "number of cold dark matter particles, a cube n^3 whose n divides every grid "
                                 "axis (placed on a lattice, displaced to physics.cdm_lpt's order); needs "
                                 "physics.fdm_fraction < 1 (and is required at 0); 0 = none; a restart keeps it", min=0,
                                 restart="kept")
    cdm_window: str = cold.window_setting()
    cdm_capacity: float = cold.capacity_setting()
    cdm_lpt: int = setting(1, "order of Lagrangian perturbation theory of the particles' initial displacements: "
                           "1 (Zel'dovich) or 2 (2LPT: the second-order displacement too, fewer transients from the "
                           "start)", choices=(1, 2))
    cdm_exchange: float = cold.exchange_setting()
    self_interaction: float = param(0.0, "g of the self-interaction potential g |psi|^2 / a^3 in code units "
                                    "(100 km/s)^2 / rho_crit,0; > 0 repulsive, < 0 attractive (see physics.f_a)")
    f_a: float | None = setting(None, "axion decay constant in GeV: sets physics.self_interaction to the attractive "
                                "quartic term of a cosine potential, g = -(hbar c)^3 / (8 f_a^2 m^2); null = not used",
                                gt=0.0)
    z_start: float = param(127.0, "redshift of the initial conditions, where the run's clock ln(a/a_start) is 0 "
                           "(another value would make a state's time another redshift); a restart keeps it", gt=0.0,
                           restart="kept")
    z_end: float = setting(3.0, "redshift where the run ends: sets time.t_end = ln((1 + z_start) / (1 + z_end)); "
                           "may change on a restart", min=0.0, restart="free")
    output_redshifts: tuple[float, ...] = setting((), "redshifts of snapshots and spectra rows: set "
                                                  "output.snapshots.times and output.spectra.times; may change on "
                                                  "a restart", min=0.0, restart="free")
    sigma8: float = param(0.811, "rms linear density contrast in spheres of 8 Mpc/h at z = 0 (normalises the "
                          "spectrum before the FDM cut-off)", gt=0.0)
    n_s: float = param(0.965, "primordial spectral index of the built-in spectrum")
    omega_b: float = param(0.049, "baryon density over critical: shapes the built-in spectrum only (baryons are "
                           "not simulated)", min=0.0)
    spectrum_file: str | None = setting(None, "two-column text file of the linear P(k), k in h/Mpc and P in "
                                        "(Mpc/h)^3 as CAMB or CLASS write it (its shape is used, normalised to "
                                        "sigma8; a path relative to the working directory); null = Eisenstein & "
                                        "Hu's no-wiggle CDM spectrum")
    fdm_transfer: bool = setting(True, "multiply the spectrum by the FDM transfer function of Hu, Barkana & "
                                 "Gruzinov 2000 (false for a file that already holds the FDM cut-off)")

    @property
    def a_start(self) -> float:
        return 1.0 / (1.0 + self.z_start)

    def absent_keys(self) -> dict[str, tuple[str, str]]:
        """Without the wave (f = 0) the wave's own keys, :data:`WAVE_KEYS`
        (:func:`simulator.equations.cold.absent_wave_keys`)."""
        return cold.absent_wave_keys(self, WAVE_KEYS, "configs/cold_dark_matter.yaml")

    def time_at(self, z: float) -> float:
        """The run time s = ln(a / a_start) at redshift z."""
        return math.log((1.0 + self.z_start) / (1.0 + z))

    def end_settings(self, t_end: float) -> dict[str, Any]:
        """physics.z_end, the redshift at run time ``t_end`` (the inverse of :meth:`time_at`): it sets time.t_end.
        Past today it is negative, which the key refuses."""
        return {"physics.z_end": (1.0 + self.z_start) * math.exp(-t_end) - 1.0}

    def check(self, cfg: Any) -> None:
        _check_particles(self, cfg)
        if self.z_end >= self.z_start:
            raise ConfigError("physics.z_end", self.z_end, f"must be below physics.z_start = {self.z_start:g}",
                              "is not later than the start")
        for z in self.output_redshifts:
            if not self.z_end <= z <= self.z_start:
                raise ConfigError("physics.output_redshifts", list(self.output_redshifts),
                                  f"every redshift must lie between z_end = {self.z_end:g} and z_start = "
                                  f"{self.z_start:g}", f"holds {z:g}, outside the run")
        why = cosmology.check_expansion(self.omega_m, self.omega_lambda, self.a_start, 1.0 / (1.0 + self.z_end))
        if why:
            raise ConfigError("physics.omega_lambda", self.omega_lambda, f"with omega_m = {self.omega_m:g} the "
                              "universe must expand from z_start to z_end", why)
        if self.spectrum_file is not None:
            from simulator.equations.fdm_cosmo.power import read_table

            try:
                read_table(self.spectrum_file)
            except (OSError, ValueError) as err:
                raise ConfigError("physics.spectrum_file", self.spectrum_file, "give a readable two-column text "
                                  "file: k [h/Mpc], P(k) [(Mpc/h)^3]", f"cannot be used ({err})") from None

    def cautions(self, cfg: Any) -> list[str]:
        """A spectrum file continued past its ends over the grid's modes or the sigma8 integral (:func:`.power.
        table_cautions`); a start that is not perturbative (:func:`.power.start_cautions`); a wave the grid does not
        resolve (:func:`.wave_resolution.wave_cautions`); a wave carrying almost none of the mass, yet stepped."""
        from simulator.equations.fdm_cosmo.power import read_table, start_cautions, table_cautions
        from simulator.equations.fdm_cosmo.wave_resolution import wave_cautions

        table = read_table(self.spectrum_file) if self.spectrum_file is not None else None
        out = []
        if table is not None:
            out += table_cautions(table, self.traced(), cfg.grid.cells, cfg.grid.lengths)
        # the particles start from the spectrum without the wave's cut-off, the wave alone from its own
        fdm = self.fdm_transfer and not self.cdm_particles
        out += start_cautions(self.traced(), table, fdm, cfg.grid.cells, cfg.grid.lengths)
        out += wave_cautions(self, cfg, table)
        if 0.0 < self.fdm_fraction <= TRACE_FRACTION:
            out.append(f"physics.fdm_fraction = {self.fdm_fraction:g}: the wave carries that little of the mass, yet "
                       "it is allocated and stepped, and its phase limits an adaptive time step; "
                       "physics.fdm_fraction = 0 runs the particles alone")
        return out

    @staticmethod
    def derived_keys(physics: Mapping[str, Any]) -> tuple[str, ...]:
        """The keys :meth:`resolve` fills in from these ``physics`` values (a run's ``config.yaml`` holds them):
        left out when that file is run again, so that ``--set physics.z_end=...`` is not refused as contradicting
        the t_end of the earlier z_end (:func:`simulator.config.load`)."""
        times = ("output.snapshots.times", "output.spectra.times") if physics.get("output_redshifts") else ()
        return ("time.t_end", *times)

    def resolve(self, cfg: Any) -> Any:
        """time.t_end from z_end; output times from output_redshifts (snapshots and spectra; spectra rows
        only there unless output.spectra.every is set); self_interaction from f_a."""
        physics = self
        if self.f_a is not None:
            g = cosmology.self_interaction_of_decay_constant(self.f_a, self.m22, self.h)
            if self.self_interaction not in (0.0, g):
                raise ConfigError("physics.self_interaction", self.self_interaction, "give physics.f_a or "
                                  "physics.self_interaction, not both", f"differs from the f_a value {g:.6g}")
            physics = dataclasses.replace(self, self_interaction=g)
        t_end = self.time_at(self.z_end)
        default = next(f.default for f in dataclasses.fields(cfg.time) if f.name == "t_end")
        # the value this message prints (12 digits) is accepted, as is a run's config.yaml (its t_end written
        # to the digit): equal to round-off, not bit for bit
        if cfg.time.t_end != default and not math.isclose(cfg.time.t_end, t_end, rel_tol=1e-10):
            raise ConfigError("time.t_end", cfg.time.t_end, f"leave it out: physics.z_end = {self.z_end:g} ends a "
                              f"cosmological run (time is ln(a/a_start): t_end = {t_end:.12g})", "contradicts z_end")
        output = cfg.output
        if self.output_redshifts:
            times = tuple(self.time_at(z) for z in self.output_redshifts)
            snapshots, spectra = output.section("snapshots"), output.section("spectra")
            for key, section in (("snapshots", snapshots), ("spectra", spectra)):
                if section.times not in (None, times):
                    raise ConfigError(f"output.{key}.times", list(section.times), "leave it out: "
                                      "physics.output_redshifts sets it", "contradicts the output redshifts")
            output = dataclasses.replace(output, snapshots=dataclasses.replace(snapshots, times=times),
                                         spectra=dataclasses.replace(spectra, times=times, every=spectra.every or 0))
        return dataclasses.replace(cfg, physics=physics, time=dataclasses.replace(cfg.time, t_end=t_end),
                                   output=output)

    def clock(self) -> ComovingClock:
        return ComovingClock(self)

    def scales(self, diagnostics: Any, shape: Any, box: Any) -> dict[str, float]:
        """hbar/m in code units, and the comoving Jeans and de Broglie lengths at the row's scale factor
        (:mod:`simulator.equations.scales`: k_J^4 = 6 Omega_m H0^2 a/nu^2, H0 = 1 in code units); none in a
        run without the wave (they are the wave's)."""
        if not cold.has_wave(self):
            return {}
        nu = float(cosmology.nu_code(self.m22, self.h))
        k_j = scales.jeans_wavenumber(1.5 * self.omega_m * diagnostics["a"], nu)
        return {"hbar_over_m": nu, **scales.quantum(k_j, diagnostics["kmax_de_broglie"], shape, box)}


def _check_particles(p: FDMCosmoParams, cfg: Any) -> None:
    """The cold particles (:func:`simulator.equations.cold.check_particles`: there exactly when f < 1, a cube
    that fits the grid, the window's halo within every device's block, a start that places them), their
    Lagrangian order, which needs particles. (Without the wave, f = 0, its own keys are refused as the config is
    read: :meth:`FDMCosmoParams.absent_keys`.)"""
    if p.cdm_particles == 0 and p.fdm_fraction >= 1.0 and p.cdm_lpt != 1:
        raise ConfigError("physics.cdm_lpt", p.cdm_lpt, "1 without cold particles (it orders their initial "
                          "displacements)", "has no particles to displace")
    cold.check_particles(p, cfg, ("gaussian", "mode"), p.omega_m)  # mean |psi|^2 = f omega_m


#: a wave fraction at or below which the run is cautioned that the wave carries next to nothing (what a
#: particle-only run would give to about this fraction) while it still costs its steps
TRACE_FRACTION = 1e-6

#: the settings of the wave alone, refused in a run without it (physics.fdm_fraction = 0)
WAVE_KEYS = ("m22", "self_interaction", "f_a", "fdm_transfer")


@dataclass(frozen=True)
class ComovingClock(Clock):
    """A cosmological run's clock: run time s = ln(a/a_start), labelled by redshift; outputs in physical
    units (Mpc/h, the Hubble time) with a, z, cosmic time and H; the Layzer-Irvine residual."""

    physics: FDMCosmoParams

    def units(self) -> dict[str, str]:
        m22 = self.physics.m22 if cold.has_wave(self.physics) else None  # no boson without the wave
        return cosmology.describe_units(self.physics.h, m22, self.physics.z_start, self.physics.cdm_particles > 0)

    def output_attrs(self, t: float) -> dict[str, Any]:
        a = self.physics.a_start * math.exp(t)
        # the age in Gyr, as the time series' cosmic_time and the units' "cosmic_time" say (it was in 1/H0 here
        # under the same name); cosmic_time_gyr, the same value, is the name files of before gave it
        age = float(cosmology.cosmic_time(a, self.physics.omega_m, self.physics.omega_lambda)) / (
            cosmology.hubble_si(self.physics.h) * cosmology.GYR)
        return {"a": a, "redshift": float(cosmology.redshift(a)), "cosmic_time": age, "cosmic_time_gyr": age,
                "hubble": float(cosmology.hubble(a, self.physics.omega_m, self.physics.omega_lambda)),
                **({"hbar_over_m": float(cosmology.nu_code(self.physics.m22, self.physics.h))}
                   if cold.has_wave(self.physics) else {})}  # the boson's: none without the wave

    def time_coordinates(self, t: float) -> dict[str, float]:
        a = self.physics.a_start * math.exp(t)
        return {"a": a, "z": float(cosmology.redshift(a))}

    def time_label(self, t: float) -> str:
        return f"redshift z = {self.time_coordinates(t)['z']:.4g}"

    def derived_columns(self, previous: Mapping[str, float] | None, row: Mapping[str, float]) -> dict[str, float]:
        """The Layzer-Irvine residual R = E - E_start + int (2K + W + 3U) dln a, over |W|, continued from
        the previous row by Hermite (cubic) quadrature with the rate d(2K + W + 3U)/dln a of each row:
        fourth order in the row spacing, so R measures the time integration's error."""
        scale = max(abs(row["potential"]), 1e-300)
        if previous is None:
            return {"layzer_irvine": 0.0}
        h = row["time"] - previous["time"]
        integral = 0.5 * h * (previous["li_source"] + row["li_source"]) + h**2 / 12 * (
            previous["li_rate"] - row["li_rate"])
        residual = previous["layzer_irvine"] * max(abs(previous["potential"]), 1e-300)
        residual += row["total"] - previous["total"] + integral
        return {"layzer_irvine": residual / scale}


@dataclass(frozen=True)
class Gaussian(InitialCondition):
    """A Gaussian random field with the linear spectrum of physics.* at z_start, psi = sqrt(rho_bar (1 + delta))
    exp(i theta), the phase theta giving the growing mode's velocity (delta' = H f delta); drawn from ``seed``,
    the same on any backend, device or process count."""

    name: str = setting("gaussian", "initial condition")
    seed: int = random_seed("random seed (0 to 2^32 - 1)")


@dataclass(frozen=True)
class Mode(InitialCondition):
    """delta = eps cos(k x), a single density wave along x at z_start moving as the growing mode (delta' =
    H f delta): the linear-growth test."""

    name: str = setting("mode", "initial condition")
    amplitude: float = param(1e-3, "density contrast eps of the wave", gt=0.0, max=1.0)
    wavenumber: int = setting(1, "mode number of the wave along x", min=1, mode_axes="x")


INFO = cold.info(
    FDMCosmoParams, (Gaussian, Mode), "FDMCosmo",
    summary="Fuzzy dark matter in an expanding universe: comoving Schrodinger-Poisson, kick-drift-kick in ln a",
    fields=cold.fields(
        density=FieldInfo(0, "comoving mass density |psi|^2 (rho_crit,0)", r"\rho", "inferno", log=True,
                          units=r"\rho_{\rm crit,0}"),
        potential=FieldInfo(0, "peculiar gravitational potential V", r"V", "RdBu_r", units=r"(100\,{\rm km/s})^2"),
        cdm_density=FieldInfo(0, "the cold particles' comoving mass density, assigned by the window (runs with "
                              "particles)", r"\rho_{\rm CDM}", "inferno", log=True, units=r"\rho_{\rm crit,0}"),
        total_density=FieldInfo(0, "wave plus particles' comoving mass density (mixed runs)", r"\rho_{\rm tot}",
                                "inferno", log=True, units=r"\rho_{\rm crit,0}"),
    ),
    diagnostics={
        "a": "scale factor a = a_start exp(time)",
        "z": "redshift 1/a - 1",
        "cosmic_time": "age of the universe t(a), Gyr",
        "mass": "total mass int rho d^3x, wave and particles (rho_crit,0 (Mpc/h)^3)",
        "kinetic": "K = (nu^2 / 2 a^2) int |grad psi|^2 d^3x, plus sum m p^2 / 2 a^2 of the particles",
        "potential": "W = (1/2) int rho V d^3x (V the peculiar potential; rho the total density)",
        "interaction": "U = (g / 2 a^3) int (rho - <rho>)^2 d^3x (the self-interaction energy; 0 without)",
        "total": "E = K + W + U",
        "max_density": "max rho / mean rho",
        "psi_tail": resolution.PSI_TAIL,
        "li_source": "2K + W + 3U = -dE/dln a (the cosmic energy equation)",
        "li_rate": "d(2K + W + 3U)/dln a, from the state and the equations of motion",
        "layzer_irvine": "[E - E_start + int (2K + W + 3U) dln a] / |W|: the Layzer-Irvine residual (host, "
                         "Hermite quadrature between rows)",
        "cfl": "dln a max(6 nu / (a^2 dx^2), max|V_tot| / nu, max|p_i| / (a^2 dx_i)) / E(a): phase change per "
               "step in radians, or the particles' largest move per step in cells",
        # a ratio of two comoving wavenumbers (h/Mpc each): a pure number, as in schrodinger_poisson
        "kmax_de_broglie": resolution.KMAX_DE_BROGLIE + " (a ratio of comoving wavenumbers: no unit)",
    },
    progress=("z", "max_density", "psi_tail", "cfl"),
    clocks=("a", "z", "cosmic_time"),
    resolution_advice=dict.fromkeys(
        ("kmax_de_broglie", "psi_tail"),
        "refine grid.shape, or end earlier (a larger physics.z_end): the flows of the densest halos speed up as they "
        "form, and heavier bosons (a larger physics.m22) have shorter de Broglie wavelengths"),
    scales={"hbar_over_m": "hbar/m of the boson in code units, (Mpc/h)^2 H0",
            "jeans_length": "comoving quantum Jeans length 2 pi/k_J, k_J = (6 Omega_m H0^2 a/nu^2)^(1/4), Mpc/h",
            "de_broglie_length": "comoving de Broglie length 2 pi/k_rms, Mpc/h"},
    spectra={
        "power": "P(k) = V <|delta_k|^2> of the density contrast delta = rho/<rho> - 1, averaged over the modes "
                 "of shell k (Nyquist planes excluded; without the wave the particles', as power_cdm; in a mixed run "
                 "f delta_fdm + (1 - f) delta_cdm, the particles' with the window divided out as in power_cdm, so not "
                 "the spectrum of the total_density snapshot, which holds them as assigned), (Mpc/h)^3",
        "power_fdm": "P(k) of the wave's own contrast |psi|^2 / <|psi|^2> - 1 (mixed runs), (Mpc/h)^3",
        "power_cdm": "P(k) of the particles' own contrast, the window divided out (mixed runs; with their shot "
                     "noise), (Mpc/h)^3",
        "power_linear": "the linear P(k, z) of physics.* averaged over the same modes: linear theory, P(k, z_start) "
                        "(D(z) / D(z_start))^2 (in a mixed run the total's, (f sqrt(P_fdm) + (1 - f) sqrt(P_cold))^2 "
                        "of the two initial spectra; without the wave P_cold, no FDM cut-off), (Mpc/h)^3",
    },
    plot=PlotSpec(
        panels=(
            Panel("mass change", (Curve("mass", r"$M/M_0 - 1$", relative=True),)),
            # a run without the wave has no U (interaction): its E and its Layzer-Irvine source are K and W alone
            Panel("energy", (Curve("kinetic", r"$K$"), Curve("potential", r"$W$"), Curve("interaction", r"$U$"),
                             Curve("total", r"$E = {terms}$", terms=(("kinetic", "K"), ("potential", "W"),
                                                                      ("interaction", "U"))))),
            Panel("Layzer–Irvine", (Curve("layzer_irvine", r"$[\Delta E + \int({terms})\,d\ln a]\,/\,|W|$",
                                          terms=(("kinetic", "2K"), ("potential", "W"), ("interaction", "3U"))),)),
            Panel("peak density", (Curve("max_density", r"$\max\rho/\bar\rho$"),), log="auto"),
        ),
        spectrum="power",
        spectrum_label=r"$P(k)$ [(Mpc/h)$^3$]",
        slice_field="density",
        slice_fallback=("cdm_density",),
        reference="power_linear",
        reference_label=r"linear theory $P(k, z_{start})\,D^2(z)/D^2(z_{start})$",
    ),
)
