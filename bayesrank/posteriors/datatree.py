"""Build ArviZ-1.x ``xarray.DataTree`` objects for one position's posterior.

ArviZ 1.x works on ``xarray.DataTree`` with one child node per group. The groups made
here are those that ``arviz.summary``, ``arviz.rhat``, ``arviz.ess`` and
``arviz.psense_summary`` read:

    posterior        theta (chain, draw, theta_dim) [+ other variables]
    sample_stats     diverging (chain, draw) [+ whatever the sampler recorded]
    log_likelihood   y (chain, draw, obs): log p(y_i | draw), one per observation
    log_prior        theta (chain, draw): log p(draw) under the prior
    observed_data    y (obs,)
    constant_data    X (obs, theta_dim), optional

Used by the closed-form models (exact independent draws) and the NUTS models alike.
Only xarray is imported (lazily), never ArviZ, so the core stays light.

Example:
    >>> import numpy as np
    >>> theta = np.random.default_rng(0).normal(size=(4, 100, 3))
    >>> dt = make_datatree(theta, log_prior=-0.5 * (theta**2).sum(-1))
    >>> sorted(dt.children)
    ['log_prior', 'posterior', 'sample_stats']
"""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np

__all__ = ["PSENSE_GROUPS", "make_datatree", "require_groups"]

#: Groups that ``arviz.psense_summary`` needs (prior and likelihood power-scaling).
PSENSE_GROUPS = ("posterior", "log_likelihood", "log_prior")


def _as_dict(value, default_name: str, argname: str) -> dict[str, np.ndarray]:
    if isinstance(value, Mapping):
        out = {}
        for k, v in value.items():
            if not isinstance(k, str):
                raise TypeError(f"{argname}: expected str variable names, got {k!r}")
            out[k] = np.asarray(v)
        return out
    return {default_name: np.asarray(value)}


def _refuse_bad_sample_shape(
    arrays: Mapping[str, np.ndarray], sample_shape, argname: str, min_ndim: int = 2
):
    for name, arr in arrays.items():
        if arr.ndim < min_ndim or arr.shape[:2] != tuple(sample_shape):
            raise ValueError(
                f"{argname}[{name!r}]: expected leading dims (chain, draw) = "
                f"{tuple(sample_shape)}, got shape {arr.shape}"
            )


def _dims_for(name: str, arr: np.ndarray, dims: Mapping[str, Iterable[str]] | None):
    if dims is not None and name in dims:
        extra = list(dims[name])
        if len(extra) != arr.ndim - 2:
            raise ValueError(
                f"dims[{name!r}]: expected {arr.ndim - 2} names for shape {arr.shape}, "
                f"got {extra}"
            )
        return ["chain", "draw", *extra]
    if arr.ndim == 2:
        return ["chain", "draw"]
    if arr.ndim == 3:
        return ["chain", "draw", f"{name}_dim"]
    return ["chain", "draw", *(f"{name}_dim_{i}" for i in range(arr.ndim - 2))]


def make_datatree(
    posterior,
    log_likelihood=None,
    log_prior=None,
    observed=None,
    *,
    sample_stats: Mapping[str, Any] | None = None,
    constant_data: Mapping[str, Any] | None = None,
    dims: Mapping[str, Iterable[str]] | None = None,
    var_name: str = "theta",
    obs_name: str = "y",
    attrs: Mapping[str, Any] | None = None,
):
    """Assemble an ArviZ DataTree from draws and their log densities.

    Args:
        posterior: (chain, draw, p) draws of ``var_name``, or a dict of arrays with
            leading dims (chain, draw). A 3-d array named ``theta`` gets the extra
            dim ``theta_dim``; others get ``<name>_dim`` or ``<name>_dim_<i>``
            unless ``dims`` names them.
        log_likelihood: (chain, draw, n) pointwise log-likelihood of the observations,
            or a dict of such arrays keyed by observed variable; ``None`` to omit.
            Its last dim is ``obs``.
        log_prior: (chain, draw) log prior density of each draw, or a dict of
            per-variable terms (psense sums them); ``None`` to omit.
        observed: (n,) observed rewards (``obs_name``), or a dict; ``None`` to omit.
        sample_stats: dict of (chain, draw) arrays; ``diverging`` (all False) is
            added when missing (closed-form or exact draws never diverge).
        constant_data: dict of arrays whose first dim is ``obs`` (e.g. the design
            matrix ``X`` (n, p), which gets dims ``(obs, theta_dim)``).
        dims: extra dim names per posterior variable, e.g. ``{"theta": ["item"]}``.
        var_name: the name of a bare ``posterior`` array (and of a bare log_prior).
        obs_name: the name of bare ``log_likelihood`` and ``observed`` arrays.
        attrs: attributes stored on every group.

    Returns:
        ``xarray.DataTree`` with groups posterior, sample_stats and, when given,
        log_likelihood, log_prior, observed_data, constant_data.

    Raises:
        ValueError: inconsistent (chain, draw) or observation shapes.
    """
    import xarray as xr

    post = _as_dict(posterior, var_name, "posterior")
    if not post:
        raise ValueError("posterior: expected at least one variable")
    first = next(iter(post.values()))
    if first.ndim < 2:
        raise ValueError(
            "posterior: expected arrays with dims (chain, draw, ...), got "
            f"{first.shape}"
        )
    sample_shape = first.shape[:2]
    _refuse_bad_sample_shape(post, sample_shape, "posterior")
    n_chain, n_draw = sample_shape
    base_coords = {"chain": np.arange(n_chain), "draw": np.arange(n_draw)}
    group_attrs = {
        "created_at": datetime.datetime.now(datetime.UTC).isoformat(),
        "inference_library": "bayesrank",
        **(dict(attrs) if attrs else {}),
    }

    def dataset(arrays: Mapping[str, np.ndarray], dim_fn):
        data_vars = {k: (dim_fn(k, v), v) for k, v in arrays.items()}
        ds = xr.Dataset(data_vars)
        coords = {k: v for k, v in base_coords.items() if k in ds.dims}
        for dim, size in ds.sizes.items():
            if dim not in coords:
                coords[dim] = np.arange(size)
        return ds.assign_coords(coords).assign_attrs(group_attrs)

    groups = {"posterior": dataset(post, lambda k, v: _dims_for(k, v, dims))}

    stats = {} if sample_stats is None else _as_dict(sample_stats, "", "sample_stats")
    stats.setdefault("diverging", np.zeros(sample_shape, dtype=bool))
    _refuse_bad_sample_shape(stats, sample_shape, "sample_stats")
    groups["sample_stats"] = dataset(stats, lambda k, v: _dims_for(k, v, None))

    n_obs = None
    if observed is not None:
        obs = _as_dict(observed, obs_name, "observed")
        for k, v in obs.items():
            if v.ndim != 1:
                raise ValueError(f"observed[{k!r}]: expected shape (n,), got {v.shape}")
        n_obs = {k: v.shape[0] for k, v in obs.items()}
        groups["observed_data"] = dataset(obs, lambda k, v: ["obs"])

    if log_likelihood is not None:
        ll = _as_dict(log_likelihood, obs_name, "log_likelihood")
        _refuse_bad_sample_shape(ll, sample_shape, "log_likelihood")
        for k, v in ll.items():
            if v.ndim != 3:
                raise ValueError(
                    f"log_likelihood[{k!r}]: expected dims (chain, draw, obs), "
                    f"got shape {v.shape}"
                )
            if n_obs is not None and k in n_obs and v.shape[2] != n_obs[k]:
                raise ValueError(
                    f"log_likelihood[{k!r}]: {v.shape[2]} observations but observed "
                    f"has {n_obs[k]}"
                )
        groups["log_likelihood"] = dataset(ll, lambda k, v: ["chain", "draw", "obs"])

    if log_prior is not None:
        lp = _as_dict(log_prior, var_name, "log_prior")
        _refuse_bad_sample_shape(lp, sample_shape, "log_prior")
        groups["log_prior"] = dataset(lp, lambda k, v: _dims_for(k, v, dims))

    if constant_data is not None:
        cd = _as_dict(constant_data, "X", "constant_data")

        def cdims(k, v):
            if k == "X" and v.ndim == 2 and "theta_dim" in groups["posterior"].dims:
                return ["obs", "theta_dim"]
            return ["obs", *(f"{k}_dim_{i}" for i in range(v.ndim - 1))]

        groups["constant_data"] = dataset(cd, cdims)

    return xr.DataTree.from_dict(groups)


def require_groups(
    dt, groups: Iterable[str] = PSENSE_GROUPS, purpose: str = ""
) -> None:
    """Raise a ValueError naming the groups of ``dt`` that are missing.

    Args:
        dt: an ``xarray.DataTree``.
        groups: the group names needed (default: those of ``arviz.psense_summary``).
        purpose: what they are needed for, quoted in the message.

    Raises:
        ValueError: some groups are missing.
    """
    missing = [g for g in groups if g not in dt.children]
    if missing:
        why = f" for {purpose}" if purpose else ""
        raise ValueError(
            f"dt: missing group(s) {missing}{why}; the log_likelihood and "
            "observed_data groups need the observations: pass data=(X, y) to "
            "to_datatree (policies do this from their history)"
        )
