"""NumPyroModel infers link and reward support from the observed site, or asks."""

import functools

import jax.numpy as jnp
import numpy as np
import numpyro
import numpyro.distributions as dist
import pytest
from jax.scipy.special import ndtr

import bayesrank as br
from bayesrank.posteriors.nuts import numpyro_models as models
from bayesrank.posteriors.nuts.model_link import infer_link


def _model(likelihood):
    def model(x, y=None):
        theta = numpyro.sample(
            "theta", dist.Normal(0, 1).expand([x.shape[-1]]).to_event(1)
        )
        with numpyro.plate("obs", x.shape[0]):
            numpyro.sample("y", likelihood(x @ theta), obs=y)

    return model


# a click model written as the README shows: no link= argument
def click_model(x, y=None):
    theta = numpyro.sample("theta", dist.Normal(0, 1).expand([x.shape[-1]]).to_event(1))
    with numpyro.plate("obs", x.shape[0]):
        numpyro.sample("y", dist.Bernoulli(logits=x @ theta), obs=y)


CASES = [
    (lambda e: dist.Bernoulli(logits=e), "logistic", "binary"),
    (lambda e: dist.BernoulliProbs(1 / (1 + jnp.exp(-e))), "logistic", "binary"),
    (lambda e: dist.Bernoulli(probs=ndtr(e)), "probit", "binary"),
    (lambda e: dist.Poisson(jnp.exp(e)), "exp", "count"),
    (lambda e: dist.Normal(e, 0.5), "identity", "real"),
    (lambda e: dist.StudentT(4.0, e, 1.0), "identity", "real"),
]


@pytest.mark.parametrize("likelihood, link, support", CASES)
def test_link_and_support_are_inferred(likelihood, link, support):
    model = br.NumPyroModel(_model(likelihood))
    assert (model.link.name, model.reward_support) == (link, support)


def test_readme_click_model_is_scored_with_the_logistic_link():
    model = br.NumPyroModel(click_model)
    assert model.link.name == "logistic" and model.reward_support == "binary"
    with pytest.raises(ValueError, match="rewards"):
        model.check_rewards(np.array([0.5, 1.0]))


@pytest.mark.parametrize(
    "fn, link",
    [
        (functools.partial(models.glm, link="probit"), "probit"),
        (functools.partial(models.glm, link="exp"), "exp"),
        (models.hierarchical_glm, "identity"),
        (functools.partial(models.hierarchical_glm, link="logistic"), "logistic"),
    ],
)
def test_library_models_are_recognised(fn, link):
    assert br.NumPyroModel(fn).link.name == link


UNKNOWN = [
    lambda e: dist.Bernoulli(logits=2.0 * e + 1.0),  # an offset: not a named link
    lambda e: dist.Poisson(jnp.exp(e) + 1.0),
    lambda e: dist.Gamma(2.0, jnp.exp(-e)),  # positive support
    lambda e: dist.Bernoulli(probs=0.5 + 0.0 * e),
    # no analytic mean: NumPyro raises NotImplementedError, bayesrank asks for link=
    lambda e: dist.TransformedDistribution(
        dist.Normal(e, 1.0), dist.transforms.AffineTransform(0.0, 2.0)),
]


@pytest.mark.parametrize("likelihood", UNKNOWN)
def test_unrecognised_models_raise_asking_for_link(likelihood):
    with pytest.raises(ValueError, match="link="):
        br.NumPyroModel(_model(likelihood))
    # and an explicit link is accepted
    assert br.NumPyroModel(_model(likelihood), link="exp").link.name == "exp"


def test_two_observed_sites_raise():
    def two(x, y=None):
        theta = numpyro.sample(
            "theta", dist.Normal(0, 1).expand([x.shape[-1]]).to_event(1)
        )
        with numpyro.plate("obs", x.shape[0]):
            numpyro.sample("y", dist.Normal(x @ theta, 1.0), obs=y)
            numpyro.sample("y2", dist.Normal(x @ theta, 1.0), obs=y)

    with pytest.raises(ValueError, match="2 observed sites"):
        infer_link(two, "theta", 3)
