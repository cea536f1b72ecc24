"""The unknown-w study's logistic part: which Laplace posterior its policies run."""

import pytest

import bayesrank as br
from bayesrank.posteriors.laplace import LaplaceGLM
from bayesrank.studies.paper import unknown_w


def _laplace_of(policy):
    """The LaplaceGLM-family posterior a study policy runs (LatentLaplace and
    GenRankTS wrap one)."""
    m = policy.core.model
    for attr in ("laplace", "glm", "base"):
        inner = getattr(m, attr, None)
        if isinstance(inner, LaplaceGLM):
            return inner
    return m


@pytest.mark.parametrize("scale, learnt", [(None, True), (1.0, False)])
def test_glm_policies_run_the_prior_scale_asked_for(scale, learnt):
    env = br.RankingEnv.paper(seed=0, K=6, L=3, d=2, w_max=2.0, link="logistic")
    pols = unknown_w.glm_policies(env, n_max=10, prior_scale=scale)
    for name, make in pols.items():
        lap = _laplace_of(make(0))
        assert type(lap) is LaplaceGLM and lap.learnt_scale == learnt, name
        if scale is not None:
            assert lap.lam == pytest.approx(1.0 / scale**2), name


def test_glm_policies_refuse_a_bad_prior_scale():
    env = br.RankingEnv.paper(seed=0, K=6, L=3, d=2, w_max=2.0, link="logistic")
    with pytest.raises(ValueError, match="prior_scale"):
        unknown_w.glm_policies(env, n_max=10, prior_scale=-1.0)["RankTS (known w)"](0)


def test_run_unknown_w_refuses_a_bad_prior_scale_before_running_anything(tmp_path):
    out = tmp_path / "out"
    with pytest.raises(ValueError, match="prior_scale"):
        unknown_w.run_unknown_w(out, scale="quick", glm_prior_scale=0.0, progress=False,
                                parts=("d5", "d5_logistic"))
    assert not out.exists()
