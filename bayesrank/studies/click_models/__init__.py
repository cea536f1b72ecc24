"""The click-model study: the Bayesian ranking policies and the online learning-to-rank
baselines on Eq. 1 and on the click models (issue 45).

One item catalogue (:func:`~bayesrank.studies.click_models.setup.catalogue`: K items
with a constant last feature, attraction ``sigmoid(items @ theta)``) gives six
environments: Eq. 1 with logistic clicks (theta at every position, a drawn w), Eq. 1
seen through a cascade, and the PBM, cascade, DCM and DBN models built with
``from_features``. Every policy of
:data:`~bayesrank.studies.click_models.setup.POLICIES` plays every environment with
common random numbers (:func:`bayesrank.simulate`); a policy that cannot play an
environment is skipped with its reason.

    bayesrank study click-models [--quick] [--out DIR]

writes ``results.nc`` (xarray: regret over env, policy, run, round), ``report.md``
and ``regret.png``.
"""

from bayesrank.studies.click_models.setup import POLICIES, SCALES, environments
from bayesrank.studies.click_models.study import (
    click_cells,
    merge_cells,
    run_click_models_study,
)

__all__ = ["POLICIES", "SCALES", "click_cells", "environments", "merge_cells",
           "run_click_models_study"]
