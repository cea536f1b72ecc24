"""The OPE study's Open Bandit Dataset section: what the shipped sample supports.

bayesrank ships, for the OBD uniform-random logging policy, the item features and a
summary of each campaign's 10,000-row log
(:func:`bayesrank.datasets.obd_log_summary`): per position the impressions and
clicks, the logged propensity (1/K for every item at every position) and how many
rows share a timestamp. The rows themselves (item, position, click) are not shipped,
and even they cannot be linked into lists (no timestamp is shared by all three positions).

What that supports, exactly: position IPS (and its self-normalised variant) for a
target whose per-position probability of every item equals the logged one, i.e. the
uniform-random policy's own value; each position's term is computed by
:func:`bayesrank.ope.position_ips` on that position's rows, rebuilt from the counts
(the rows' order and items do not enter when every weight is 1). A target that
picks items ("the best item per position by a fitted model") needs per-item clicks
by position, which the summary does not hold; list, cascade and pair IPS need the
shown lists, which no version of the sample holds.

Example:
    >>> from bayesrank.studies.ope import obd as ope_obd
    >>> sec = ope_obd.obd_section(("all",))["all"]
    >>> sec["clicks"], round(sec["position_ips"]["estimate"], 5)
    ([13, 14, 11], 0.01138)
"""

from __future__ import annotations

import numpy as np

from bayesrank.datasets.obd import CAMPAIGNS, obd_log_summary
from bayesrank.ope import position_ips

__all__ = ["obd_section"]


def _campaign(entry: dict) -> dict:
    n = np.asarray(entry["impressions"], int)
    k = np.asarray(entry["clicks"], int)
    K = int(entry["items_in_log"])
    (p,) = entry[
        "propensity_scores"
    ]  # 1/K: every item equally likely at every position
    out = {"K": K, "pscore": float(p), "impressions": n.tolist(), "clicks": k.tolist()}
    for label, sn in (("position_ips", False), ("position_ips_sn", True)):
        ests, ses = [], []
        for n_l, k_l in zip(n, k):
            r = np.zeros((n_l, 1))
            r[:k_l] = 1.0
            pi = np.full((n_l, 1), 1.0 / K)  # the uniform-random target's P(item at l)
            est = position_ips(r, pi, np.full((n_l, 1), p), self_normalised=sn)
            ests.append(est.estimate)
            ses.append(est.stderr)
        value, se = float(np.sum(ests)), float(np.sqrt(np.sum(np.square(ses))))
        out[label] = {
            "per_position": ests,
            "per_position_stderr": ses,
            "estimate": value,
            "stderr": se,
            "ci": [value - 1.959963984540054 * se, value + 1.959963984540054 * se],
        }
    out["naive_rate_sum"] = float(np.sum(k / n))
    # an item-level target: on average each (item, position) cell holds clicks_l / K
    # clicks; position IPS's relative standard error for one item per position at
    # the position's mean click rate is about sqrt(K / clicks_l)
    out["clicks_per_item_position"] = (k / K).tolist()
    out["relative_stderr_item_target"] = np.sqrt(K / k).tolist()
    out["full_lists"] = int(entry["rows_per_timestamp"].get(str(len(n)), 0))
    out["shared_timestamps"] = int(
        sum(c for s, c in entry["rows_per_timestamp"].items() if int(s) > 1)
    )
    out["distinct_timestamps"] = int(entry["distinct_timestamps"])
    out["rows"] = int(entry["rows"])
    return out


def obd_section(campaigns=("all", "men", "women")) -> dict:
    """The section's numbers for each campaign (JSON-able dict).

    Args:
        campaigns: OBD campaigns (:data:`bayesrank.datasets.obd.CAMPAIGNS`).

    Returns:
        ``{campaign: {...}}`` with the counts, position IPS and its self-normalised
        variant of the uniform-random policy's value (per position, total, stderr,
        normal 95 % interval), the naive sum of click rates, and the quantities
        that show why item-level targets cannot be evaluated.
    """
    summary = obd_log_summary()["campaigns"]
    out = {}
    for c in campaigns:
        if c not in CAMPAIGNS:
            raise ValueError(
                f"campaigns: unknown {c!r}; expected names from {CAMPAIGNS}"
            )
        out[c] = _campaign(summary[c])
    return out
