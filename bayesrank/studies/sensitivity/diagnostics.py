"""Diagnostics of a sweep's cells: MCMC and sensitivity diagnostics of one posterior
(R-hat, ESS, MCSE, power-scaling sensitivity, per coordinate of theta) and the round
after which a run settles on an optimal list.

Example:
    >>> import numpy as np
    >>> from bayesrank.studies.sensitivity.diagnostics import settle_round
    >>> settle_round(np.array([[1.0, 0.0, 0.5, 0.0, 0.0]]), best_value=3.0).tolist()
    [3]
"""

from __future__ import annotations

import numpy as np

__all__ = ["DIAGNOSTICS", "PSENSE_THRESHOLD", "posterior_diagnostics", "settle_round"]

#: Per-coordinate diagnostics stored for each (diag_run, checkpoint, position).
DIAGNOSTICS = (
    "rhat",
    "ess_bulk",
    "ess_tail",
    "mcse_mean",
    "psense_prior",
    "psense_likelihood",
)
#: The usual threshold of power-scaling sensitivity (``arviz.psense_summary``).
PSENSE_THRESHOLD = 0.05


def _as_dataset(obj):
    import xarray as xr

    return obj.to_dataset() if isinstance(obj, xr.DataTree) else obj


def posterior_diagnostics(dt, var_name: str = "theta") -> dict[str, np.ndarray]:
    """ArviZ diagnostics of one posterior DataTree, per coordinate of ``var_name``.

    Args:
        dt: DataTree with posterior, sample_stats, log_prior and log_likelihood.
        var_name: the (chain, draw, p) posterior variable.

    Returns:
        dict of (p,) arrays ``rhat`` (rank-normalised), ``ess_bulk``, ``ess_tail``,
        ``mcse_mean``, ``psense_prior``, ``psense_likelihood`` (NaN when the tree
        has no log_likelihood group), and ``divergences`` (int, the count of
        divergent transitions).

    Example:
        >>> import jax, bayesrank as br
        >>> from bayesrank.studies.sensitivity import posterior_diagnostics
        >>> env = br.RankingEnv.paper(seed=0, K=10, L=2, d=3)
        >>> ts = br.RankTS(items=env.items, w=env.w, seed=0)
        >>> for t in range(20):
        ...     items = ts.select()
        ...     ts.update(items, env.sample(jax.random.key(t), items))
        >>> diag = posterior_diagnostics(ts.posterior(0))
        >>> diag["rhat"].shape, bool(diag["rhat"].max() < 1.01), diag["divergences"]
        ((3,), True, 0)
    """
    import arviz as az

    v = [var_name]
    out = {
        "rhat": az.rhat(dt, var_names=v),
        "ess_bulk": az.ess(dt, var_names=v, method="bulk"),
        "ess_tail": az.ess(dt, var_names=v, method="tail"),
        "mcse_mean": az.mcse(dt, var_names=v, method="mean"),
        "psense_prior": az.psense(dt, var_names=v, group="prior"),
    }
    if "log_likelihood" in dt.children:
        out["psense_likelihood"] = az.psense(dt, var_names=v, group="likelihood")
    res = {
        k: np.atleast_1d(np.asarray(_as_dataset(x)[var_name].values, float))
        for k, x in out.items()
    }
    # a posterior with no pointwise likelihood (latent w: theta and w are drawn
    # from the collapsed posterior) has no likelihood sensitivity to report
    res.setdefault("psense_likelihood", np.full_like(res["psense_prior"], np.nan))
    res["divergences"] = int(np.asarray(dt["sample_stats"]["diverging"]).sum())
    return res


def settle_round(regret: np.ndarray, best_value: float) -> np.ndarray:
    """Rounds after which only optimal lists are played: (runs,) ints in [0, T].

    Args:
        regret: (runs, T) pseudo-regret per round.
        best_value: the optimal expected total reward (sets the zero tolerance).

    Returns:
        For each run the count of rounds before the optimal value is played in every
        remaining round; T when the last round is not optimal.

    Example:
        >>> import numpy as np
        >>> from bayesrank.studies.sensitivity import settle_round
        >>> regret = np.array([[1.0, 0.0, 0.5, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0, 0.2]])
        >>> settle_round(regret, best_value=3.0).tolist()
        [3, 5]
    """
    regret = np.asarray(regret)
    tol = 1e-9 * max(1.0, abs(float(best_value)))
    bad = regret > tol
    T = regret.shape[-1]
    last_bad = np.where(bad.any(-1), T - 1 - np.argmax(bad[..., ::-1], axis=-1), -1)
    return (last_bad + 1).astype(np.int64)
