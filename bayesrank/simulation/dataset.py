"""The results of :func:`bayesrank.simulate` as an xarray Dataset, with the
configuration and the package versions as attributes (``ds.to_netcdf`` round-trips)."""

from __future__ import annotations

import json

import jax
import numpy as np
import xarray as xr

from bayesrank._version import __version__

__all__ = ["results_dataset", "versions"]


def versions() -> dict:
    """The versions of bayesrank and of the libraries its results depend on."""
    import numpyro

    return {
        "bayesrank": __version__,
        "jax": jax.__version__,
        "numpyro": numpyro.__version__,
        "numpy": np.__version__,
        "xarray": xr.__version__,
    }


def results_dataset(names, runs, T, env, seed, regret, reward, lists, seconds, record_lists,
             users) -> xr.Dataset:
    """The results as an xarray Dataset (see :func:`simulate`)."""
    coords = {"policy": names, "run": np.arange(runs), "round": np.arange(T)}
    data = {
        "regret": (("policy", "run", "round"), regret),
        "reward": (("policy", "run", "round"), reward),
        "seconds": (("policy",), seconds),
    }
    if record_lists:
        coords["position"] = np.arange(env.L)
        data["lists"] = (("policy", "run", "round", "position"), lists)
    config = {
        "T": int(T),
        "runs": int(runs),
        "seed": int(seed),
        "K": env.K,
        "L": env.L,
        "d": env.d,
        "S": env.S,
        "link": str(env.link),
        "noise": repr(env.noise),
        "users": users,
    }
    ds = xr.Dataset(data, coords=coords)
    ds.attrs["config"] = json.dumps(config)
    ds.attrs["versions"] = json.dumps(versions())
    ds["regret"].attrs["long_name"] = "pseudo-regret per round"
    ds["reward"].attrs["long_name"] = "realised total reward per round"
    ds["seconds"].attrs["units"] = "s"
    return ds
