"""A sweep's results: one ``xarray.Dataset`` per finished cell, the resumable store of
those files (``OUT/cells/<key>.nc``), and the combined ``OUT/results.nc`` along ``cell``.

Example:
    >>> import tempfile, xarray as xr
    >>> from bayesrank.studies.sensitivity.results import SweepStore
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     store = SweepStore(folder)
    ...     store.has("abc")
    False
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from bayesrank.studies import store as files
from bayesrank.studies.sensitivity.config import SweepSettings, SweepSpec
from bayesrank.studies.sensitivity.diagnostics import DIAGNOSTICS, PSENSE_THRESHOLD
from bayesrank.studies.sensitivity.grid import Cell

__all__ = ["SweepStore"]


def _cell_coords(cell: Cell, key: str) -> dict:
    p, e = cell.prior, cell.env
    return {
        "cell_key": key,
        "label": cell.label,
        "prior": p.name,
        "family": p.family,
        "location": p.location,
        "scale": p.scale,
        "correlation": p.correlation,
        "noise_scale": p.noise_scale,
        "df": p.df,
        "a0": p.a0,
        "b0": p.b0,
        "w_prior": p.w_prior,
        "w_location": p.w_location,
        "w_scale": p.w_scale,
        "hyperprior": p.hyperprior,
        "hyper_scale": p.hyper_scale,
        "env_index": cell.env_index,
        "env_K": e.K,
        "env_L": e.L,
        "env_d": e.d,
        "env_w_max": e.w_max,
        "env_noise_sd": e.noise_sd,
        "env_seed": e.seed,
    }


def _cell_dataset(cell: Cell, key: str, res: dict, s: SweepSettings):
    import xarray as xr

    regret = res["regret"]
    cum = np.cumsum(regret, axis=-1)
    diag_dims = ("diag_run", "checkpoint", "position", "theta_dim")
    data = {
        "regret": (("run", "round"), regret),
        "cum_regret_mean": (("round",), cum.mean(0)),
        "cum_regret_quantile": (
            ("quantile", "round"),
            np.quantile(cum, list(s.quantiles), axis=0),
        ),
        "final_regret": (("run",), cum[:, -1]),
        "settle_round": (("run",), res["settle_round"]),
        "loop_divergences": (("run", "env_position"), res["loop_divergences"]),
        "divergences": (diag_dims[:-1], res["diagnostics"]["divergences"]),
        "best_value": ((), res["best_value"]),
        "seconds": ((), res["seconds"]),
    }
    for k in DIAGNOSTICS:
        data[k] = (diag_dims, res["diagnostics"][k])
    T = regret.shape[-1]
    coords = {
        "run": np.arange(regret.shape[0]),
        "round": np.arange(1, T + 1),
        "quantile": list(s.quantiles),
        "checkpoint": list(s.checkpoints),
        "position": res["positions"],
        "diag_run": np.arange(s.diagnostic_runs),
        "theta_dim": np.arange(res["diagnostics"]["rhat"].shape[-1]),
        "env_position": np.arange(res["loop_divergences"].shape[-1]),
    }
    ds = xr.Dataset(data, coords=coords)
    ds = ds.assign_coords({k: v for k, v in _cell_coords(cell, key).items()})
    ds.attrs["cell"] = json.dumps(cell.to_dict())
    ds.attrs["cell_key"] = key
    ds["regret"].attrs["long_name"] = "pseudo-regret per round"
    ds["settle_round"].attrs["long_name"] = (
        "rounds after which only optimal lists are played (T: never)"
    )
    ds["psense_prior"].attrs["threshold"] = PSENSE_THRESHOLD
    ds["loop_divergences"].attrs["long_name"] = (
        "divergent transitions of the warm per-round NUTS chains (0 if conjugate)"
    )
    return ds


class SweepStore:
    """Finished cells as NetCDF files under ``root/cells`` (resumable sweeps).

    Args:
        root: the output folder.

    Example:
        >>> import tempfile, xarray as xr
        >>> from bayesrank.studies.sensitivity import SweepStore
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     store = SweepStore(folder)
        ...     _ = store.write("abc", xr.Dataset({"x": ("i", [1.0, 2.0])}))
        ...     store.has("abc"), store.load("abc")["x"].values.tolist()
        (True, [1.0, 2.0])
    """

    def __init__(self, root):
        self.root = Path(root)
        self.cells_dir = self.root / "cells"

    def path(self, key: str) -> Path:
        """The NetCDF file of the cell ``key``."""
        return self.cells_dir / f"{key}.nc"

    def has(self, key: str) -> bool:
        """True when the cell's file exists (written atomically, so complete)."""
        return self.path(key).is_file()

    def write(self, key: str, ds) -> Path:
        """Write a cell atomically (temporary file, then rename)."""
        return files.save_netcdf(ds, self.path(key))

    def load(self, key: str):
        """The stored cell ``key`` as an ``xarray.Dataset`` (read into memory)."""
        return files.load_netcdf(self.path(key))

    def write_posteriors(self, key: str, trees: dict) -> None:
        """Write the cell's diagnosed posteriors, ``{name: DataTree}``, as NetCDF."""
        for name, dt in trees.items():
            files.save_netcdf(dt, self.root / "posteriors" / key / f"{name}.nc")


def _combine(spec: SweepSpec, store: SweepStore, keys: list[str]):
    import xarray as xr

    parts = [store.load(k) for k in keys]
    for p in parts:
        p.attrs.pop("cell", None)
        p.attrs.pop("cell_key", None)
        # Fixed-width strings would be cut to the first cell's width by concat
        # ("correlated" -> "corre"): use variable-length ones.
        for k in list(p.coords):
            if p[k].dtype.kind == "U":
                p.coords[k] = p[k].astype(object)
    ds = xr.concat(
        parts,
        dim="cell",
        join="outer",
        data_vars="all",
        coords="different",
        compat="equals",
        combine_attrs="drop",
    )
    n = len(parts)
    ds = ds.assign_coords(cell=np.arange(n))
    # Cell descriptions always run along ``cell`` (concat keeps equal ones scalar).
    names = [k for k in ds.coords if k != "cell" and ds[k].ndim == 0]
    ds = ds.assign_coords(
        {k: ("cell", np.repeat(ds[k].values[None], n)) for k in names}
    )
    ds.attrs["settings"] = json.dumps(spec.settings.to_dict())
    ds.attrs["config"] = json.dumps(spec.source, default=str)
    ds.attrs["psense_threshold"] = PSENSE_THRESHOLD
    return ds
