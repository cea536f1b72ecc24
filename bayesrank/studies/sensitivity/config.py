# Over 450 lines because: the sweep configuration is one schema (settings and spec
# types, key checks, sections, entry points) whose checks share one error style;
# split, a key would be checked in two places.
"""Sweep configuration: TOML loading and validation before any work starts.

A configuration has three tables (see ``examples/sweep.toml``)::

    [sweep]                      # how to run: rounds, seeds, checkpoints, executor
    T = 500
    runs = 4
    checkpoints = [100, 500]
    [sweep.quick]                # overrides used with --quick
    T = 150

    [env]                        # the environment grid: scalars or lists
    K = 10
    seed = [0, 1]

    [priors.weak]                # one block per named prior: scalars or lists
    family = "gaussian"
    scale = [1.0, 10.0]

Every list is a grid axis; a block expands to the Cartesian product of its lists. Errors
(unknown keys or families, negative scales, empty grids, bad types) raise a ValueError
whose message names the key, e.g. ``priors.weak.scale``.

Example:
    >>> spec = parse_config({"priors": {"weak": {"family": "gaussian"}}})
    >>> len(spec.cells)
    1
"""

from __future__ import annotations

import itertools
import tomllib
from collections.abc import Mapping
from dataclasses import asdict, dataclass, replace
from pathlib import Path

from bayesrank._validate import check_int, check_real, is_bool
from bayesrank.studies.sensitivity.grid import (
    HYPERPRIORS,
    NUTS_OPTION_KEYS,
    PRIOR_FAMILIES,
    PRIOR_KEYS,
    W_PRIOR_FAMILIES,
    Cell,
    EnvSpec,
    PriorSpec,
)

__all__ = ["SweepSettings", "SweepSpec", "load_config", "parse_config"]

TOP_KEYS = ("sweep", "env", "priors")
ENV_KEYS = ("K", "L", "d", "w_max", "noise_sd", "seed")
EXECUTORS = ("local", "dask")


@dataclass(frozen=True)
class SweepSettings:
    """How a sweep runs.

    Attributes:
        name: a title for the report.
        T: rounds per run; runs: seeds per cell; seed: the master seed.
        checkpoints: rounds (1..T) after which posterior diagnostics are taken.
        positions: positions diagnosed (None: all).
        diagnostic_runs: runs per cell whose posteriors are diagnosed.
        draws, chains: posterior draws per chain and chains of each diagnosis
            (NUTS: fresh chains with ``draws`` warm-up transitions).
        quantiles: quantiles of the cumulative regret over runs.
        batch_cells: conjugate cells vmapped at once, one unit of work each (0: a
            whole family x environment group); set it to spread a large conjugate
            grid over Dask workers. Numbers depend on it in the last bits only.
        save_posteriors: also store every diagnosed posterior as a NetCDF DataTree.
        executor: "local" or "dask"; scheduler: a Dask scheduler address (None: a
            LocalCluster of ``workers`` processes).

    Example:
        >>> from bayesrank.studies.sensitivity import parse_config
        >>> s = parse_config({"sweep": {"T": 100, "runs": 2, "checkpoints": [50, 100]},
        ...                   "priors": {"weak": {"scale": 10.0}}}).settings
        >>> s.T, s.runs, s.checkpoints, s.executor
        (100, 2, (50, 100), 'local')
    """

    name: str = "prior sensitivity"
    T: int = 500
    runs: int = 4
    seed: int = 0
    checkpoints: tuple = ()
    positions: tuple | None = None
    diagnostic_runs: int = 1
    draws: int = 250
    chains: int = 4
    quantiles: tuple = (0.05, 0.5, 0.95)
    batch_cells: int = 0
    save_posteriors: bool = False
    executor: str = "local"
    scheduler: str | None = None
    workers: int = 2

    def numbers_key(self) -> dict:
        """The settings that change a cell's numbers (part of its storage key)."""
        return {
            "T": self.T,
            "runs": self.runs,
            "seed": self.seed,
            "checkpoints": list(self.checkpoints),
            "positions": None if self.positions is None else list(self.positions),
            "diagnostic_runs": self.diagnostic_runs,
            "draws": self.draws,
            "chains": self.chains,
        }

    def to_dict(self) -> dict:
        """The settings as a JSON-able dict (tuples as lists)."""
        out = asdict(self)
        for k in ("checkpoints", "quantiles", "positions"):
            if out[k] is not None:
                out[k] = list(out[k])
        return out


@dataclass(frozen=True)
class SweepSpec:
    """A validated sweep: its settings, the expanded cells and the source config.

    Example:
        >>> from bayesrank.studies.sensitivity import parse_config
        >>> spec = parse_config({"sweep": {"T": 100, "runs": 2},
        ...                      "priors": {"shift": {"location": [-1.0, 0.0, 1.0]}}})
        >>> len(spec.cells), [c.prior.location for c in spec.cells]
        (3, [-1.0, 0.0, 1.0])
        >>> spec.with_settings(runs=8).settings.runs
        8
    """

    settings: SweepSettings
    cells: tuple
    source: dict

    def with_settings(self, **changes) -> SweepSpec:
        """A copy with some settings replaced (validated again)."""
        s = replace(self.settings, **changes)
        _refuse_settings_beyond_cells(s, self.cells)
        return SweepSpec(s, self.cells, self.source)


# ------------------------------------------------------------------ primitives
def _err(key: str, msg: str) -> ValueError:
    return ValueError(f"{key}: {msg}")


def _as_list(value, key: str) -> list:
    if isinstance(value, list):
        if not value:
            raise _err(key, "expected a non-empty list (an empty grid axis)")
        return value
    return [value]


def _int(value, key: str, low: int = 1) -> int:
    if not isinstance(value, int):  # TOML integers only (no NumPy scalars in a file)
        raise TypeError(f"{key}: expected an integer, got {value!r}")
    return check_int(value, key, low=low)


def _float(value, key: str, *, positive=False, nonneg=False, lo=None, hi=None) -> float:
    """A TOML number checked by :func:`bayesrank._validate.check_real`: ``positive``
    (> 0), ``nonneg`` (>= 0), ``lo`` (>= lo), ``hi`` (< hi)."""
    if not isinstance(value, (int, float)):
        raise TypeError(f"{key}: expected a number, got {value!r}")
    low = 0.0 if (positive or nonneg) else lo
    closed_left, closed_right = not positive, hi is None
    inclusive = {(True, True): "both", (True, False): "left",
                 (False, True): "right", (False, False): "neither"}[closed_left, closed_right]
    return check_real(value, key, low=low, high=hi, inclusive=inclusive)


def _table(value, key: str) -> Mapping:
    if not isinstance(value, Mapping):
        raise _err(key, f"expected a table, got {type(value).__name__}")
    return value


def _unknown(table: Mapping, allowed, prefix: str) -> None:
    for k in table:
        if k not in allowed:
            raise _err(
                f"{prefix}{k}", f"unknown key; expected one of {sorted(allowed)}"
            )


# ------------------------------------------------------------------- sections
SETTING_KEYS = (
    "name",
    "T",
    "runs",
    "seed",
    "checkpoints",
    "positions",
    "diagnostic_runs",
    "draws",
    "chains",
    "quantiles",
    "batch_cells",
    "save_posteriors",
    "executor",
    "scheduler",
    "workers",
)
QUICK_KEYS = ("T", "runs", "checkpoints", "diagnostic_runs", "draws", "chains")


def _settings(table: Mapping, prefix: str = "sweep.") -> dict:
    out: dict = {}
    for k, v in table.items():
        key = prefix + k
        if k == "name":
            if not isinstance(v, str):
                raise _err(key, f"expected a string, got {v!r}")
            out[k] = v
        elif k in ("T", "runs", "diagnostic_runs", "draws", "chains", "workers"):
            out[k] = _int(v, key)
        elif k in ("seed", "batch_cells"):
            out[k] = _int(v, key, low=0)
        elif k == "checkpoints":
            vals = _as_list(v, key)
            out[k] = tuple(sorted({_int(x, key) for x in vals}))
        elif k == "positions":
            vals = _as_list(v, key)
            out[k] = tuple(sorted({_int(x, key, low=0) for x in vals}))
        elif k == "quantiles":
            vals = _as_list(v, key)
            qs = [_float(x, key, nonneg=True) for x in vals]
            if any(q > 1 for q in qs):
                raise _err(key, f"expected quantiles in [0, 1], got {vals}")
            out[k] = tuple(sorted(set(qs)))
        elif k == "save_posteriors":
            if not is_bool(v):
                raise _err(key, f"expected true or false, got {v!r}")
            out[k] = v
        elif k == "executor":
            if v not in EXECUTORS:
                raise _err(key, f"expected one of {list(EXECUTORS)}, got {v!r}")
            out[k] = v
        elif k == "scheduler":
            if not isinstance(v, str):
                raise _err(key, f"expected an address string, got {v!r}")
            out[k] = v or None
        elif k == "quick":
            continue
        else:
            raise _err(key, f"unknown key; expected one of {sorted(SETTING_KEYS)}")
    return out


def _env_grid(table: Mapping) -> list[EnvSpec]:
    _unknown(table, ENV_KEYS, "env.")
    axes = {}
    for k in ENV_KEYS:
        if k not in table:
            continue
        key = f"env.{k}"
        vals = _as_list(table[k], key)
        if k in ("K", "L"):
            axes[k] = [_int(x, key) for x in vals]
        elif k == "d":
            axes[k] = [_int(x, key, low=2) for x in vals]
        elif k == "seed":
            axes[k] = [_int(x, key, low=0) for x in vals]
        elif k == "w_max":
            axes[k] = [_float(x, key, nonneg=True) for x in vals]
        else:
            axes[k] = [_float(x, key, positive=True) for x in vals]
    names = list(axes)
    return [
        EnvSpec(**dict(zip(names, combo)))
        for combo in itertools.product(*axes.values())
    ]


def _prior_block(name: str, table: Mapping) -> list[PriorSpec]:
    prefix = f"priors.{name}."
    family = table.get("family", "gaussian")
    if family not in PRIOR_FAMILIES:
        raise _err(
            prefix + "family",
            f"unknown prior family {family!r}; expected one of {list(PRIOR_FAMILIES)}",
        )
    allowed = ("family", *PRIOR_KEYS[family])
    _unknown(table, allowed, prefix)
    axes: dict[str, list] = {}
    for k, v in table.items():
        if k in ("family", "nuts"):
            continue
        key = prefix + k
        vals = _as_list(v, key)
        if k == "w_prior":
            bad = [x for x in vals if x not in W_PRIOR_FAMILIES]
            if bad:
                raise _err(key, f"expected some of {list(W_PRIOR_FAMILIES)}, got {bad}")
            axes[k] = list(vals)
        elif k == "hyperprior":
            bad = [x for x in vals if x not in HYPERPRIORS]
            if bad:
                raise _err(key, f"expected some of {list(HYPERPRIORS)}, got {bad}")
            axes[k] = list(vals)
        elif k in ("location", "w_location"):
            axes[k] = [_float(x, key) for x in vals]
        elif k == "correlation":
            axes[k] = [_float(x, key, lo=0.0, hi=1.0) for x in vals]
        else:  # scale, noise_scale, df, a0, b0, hyper_scale
            axes[k] = [_float(x, key, positive=True) for x in vals]
    nuts = ()
    if "nuts" in table:
        opts = _table(table["nuts"], prefix + "nuts")
        _unknown(opts, NUTS_OPTION_KEYS, prefix + "nuts.")
        for k, v in opts.items():
            key = f"{prefix}nuts.{k}"
            if k == "dense_mass":
                if not is_bool(v):
                    raise _err(key, f"expected true or false, got {v!r}")
            elif k in ("readapt_growth",):
                _float(v, key, lo=1.0 + 1e-12)
            elif k == "target_accept_prob":
                _float(v, key, positive=True, hi=1.0)
            else:
                _int(v, key, low=0 if k == "num_warmup" else 1)
        nuts = tuple(sorted(opts.items()))
    names = list(axes)
    return [
        PriorSpec(name=name, family=family, nuts=nuts, **dict(zip(names, combo)))
        for combo in itertools.product(*axes.values())
    ]


def _refuse_settings_beyond_cells(s: SweepSettings, cells) -> None:
    if s.positions is not None:
        min_L = min(c.env.L for c in cells)
        bad = [p for p in s.positions if p >= min_L]
        if bad:
            raise _err(
                "sweep.positions",
                f"positions {bad} do not exist in an environment with L={min_L}",
            )
    bad = [c for c in s.checkpoints if c > s.T]
    if bad:
        raise _err("sweep.checkpoints", f"expected rounds in [1, T={s.T}], got {bad}")
    if s.diagnostic_runs > s.runs:
        raise _err(
            "sweep.diagnostic_runs",
            f"expected at most runs={s.runs} diagnosed runs, got {s.diagnostic_runs}",
        )
    if s.executor not in EXECUTORS:
        raise _err("executor", f"expected one of {list(EXECUTORS)}, got {s.executor!r}")


# -------------------------------------------------------------------- entry
def parse_config(config: Mapping, *, quick: bool = False) -> SweepSpec:
    """Validate a configuration mapping and expand it into a :class:`SweepSpec`.

    Args:
        config: the parsed TOML (tables ``sweep``, ``env``, ``priors``).
        quick: apply ``[sweep.quick]`` (default: at most 150 rounds, 2 runs and
            checkpoints clipped to T).

    Returns:
        SweepSpec with the settings and the cells (priors x environments).

    Raises:
        ValueError: naming the offending key.

    Example:
        >>> from bayesrank.studies.sensitivity import parse_config
        >>> spec = parse_config({"sweep": {"T": 100, "runs": 2},
        ...                      "priors": {"grid": {"location": [0.0, 1.0],
        ...                                          "scale": [0.1, 1.0, 10.0]}}})
        >>> len(spec.cells)                                # 2 locations x 3 scales
        6
        >>> parse_config({"sweep": {"T": 0}})
        Traceback (most recent call last):
        ...
        ValueError: sweep.T: expected an integer >= 1, got 0
    """
    config = _table(config, "config")
    _unknown(config, TOP_KEYS, "")
    sweep = _table(config.get("sweep", {}), "sweep")
    settings = _settings(sweep)
    if quick:
        quick_table = _table(sweep.get("quick", {}), "sweep.quick")
        _unknown(quick_table, QUICK_KEYS, "sweep.quick.")
        q = _settings(quick_table, "sweep.quick.")
        T = q.get("T", min(settings.get("T", SweepSettings.T), 150))
        settings.update(
            T=T,
            runs=q.get("runs", min(settings.get("runs", SweepSettings.runs), 2)),
            draws=q.get("draws", min(settings.get("draws", SweepSettings.draws), 200)),
        )
        for k in ("chains", "diagnostic_runs"):
            if k in q:
                settings[k] = q[k]
        cps = q.get("checkpoints", settings.get("checkpoints", ()))
        settings["checkpoints"] = tuple(sorted({min(c, T) for c in cps}))
        settings["diagnostic_runs"] = min(
            settings.get("diagnostic_runs", 1), settings["runs"]
        )
    elif "quick" in sweep:
        _table(sweep["quick"], "sweep.quick")
        _unknown(sweep["quick"], QUICK_KEYS, "sweep.quick.")
        _settings(sweep["quick"], "sweep.quick.")
    s = SweepSettings(**settings)
    if not s.checkpoints:
        s = replace(s, checkpoints=(s.T,))

    envs = _env_grid(_table(config.get("env", {}), "env"))
    priors_table = _table(config.get("priors", {}), "priors")
    if not priors_table:
        raise _err("priors", "expected at least one [priors.<name>] block (empty grid)")
    priors: list[PriorSpec] = []
    for name, block in priors_table.items():
        priors.extend(_prior_block(name, _table(block, f"priors.{name}")))
    cells = tuple(
        Cell(i, prior, env, j)
        for i, (prior, (j, env)) in enumerate(
            itertools.product(priors, enumerate(envs))
        )
    )
    _refuse_settings_beyond_cells(s, cells)
    return SweepSpec(s, cells, dict(config))


def load_config(path, *, quick: bool = False) -> SweepSpec:
    """Read and validate a sweep's TOML file (see :func:`parse_config`).

    Raises:
        FileNotFoundError: no such file; ValueError: invalid TOML or config.

    Example:
        >>> import os, tempfile
        >>> from bayesrank.studies.sensitivity import load_config
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     path = os.path.join(folder, "sweep.toml")
        ...     with open(path, "w") as f:
        ...         _ = f.write('[sweep]\\nT = 100\\n'
        ...                     '[priors.weak]\\nscale = [1.0, 10.0]\\n')
        ...     spec = load_config(path)
        >>> spec.settings.T, len(spec.cells)
        (100, 2)
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"config: no such file {str(path)!r}")
    try:
        with open(path, "rb") as fh:
            data = tomllib.load(fh)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ValueError(f"config: {path} is not valid UTF-8 TOML ({exc})") from None
    return parse_config(data, quick=quick)
