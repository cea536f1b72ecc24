"""The request's context checks (:mod:`bayesrank.policies.parts.context`): what is accepted,
and every refusal naming the argument and what was expected."""

from __future__ import annotations

import numpy as np
import pytest

from bayesrank._validate import check_mask, check_v0


def test_valid_contexts_pass_through():
    v = check_v0([1, 2, 3], 3)
    assert v.dtype == np.float64 and v.tolist() == [1.0, 2.0, 3.0]
    assert check_v0(np.ones((2, 3)), 3, batch=True).shape == (2, 3)
    m = np.array([True, False, True])
    assert check_mask(m, 3, 2, distinct=True) is m
    assert check_mask(None, 3, 2, distinct=False) is None
    assert check_mask(np.ones((4, 3), bool), 3, 2, False, batch=True).shape == (4, 3)


BAD_V0 = [
    (dict(v0=np.ones(4), d=3), ValueError, r"v0: expected shape \(d,\) = \(3,\)"),
    (dict(v0=np.ones((2, 3)), d=3), ValueError, r"v0: expected shape \(d,\)"),
    (dict(v0=np.ones(3), d=3, batch=True), ValueError, r"v0: expected shape \(B, d\)"),
    (dict(v0=np.zeros((0, 3)), d=3, batch=True), ValueError, "with B >= 1"),
    (dict(v0=[1.0, np.nan, 0.0], d=3), ValueError, "v0: expected finite"),
    (dict(v0=[1.0, np.inf, 0.0], d=3), ValueError, "v0: expected finite"),
    (dict(v0=["a", "b", "c"], d=3), TypeError, "v0: expected real numbers"),
    (dict(v0=np.ones(3, bool), d=3), TypeError, "v0: expected real numbers"),
    (dict(v0=np.ones(3) * 1j, d=3), TypeError, "v0: expected real numbers"),
]


@pytest.mark.parametrize("kwargs,exc,match", BAD_V0)
def test_bad_v0_is_refused(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        check_v0(**kwargs)


BAD_MASK = [
    (dict(mask=np.ones(4, bool)), r"mask: expected a \(3,\) bool array"),
    (dict(mask=np.ones(3, int)), r"mask: expected a \(3,\) bool array"),
    (dict(mask=np.ones((2, 3), bool)), r"mask: expected a \(3,\) bool array"),
    (dict(mask=np.zeros(3, bool)), "at least 1 available"),
    (dict(mask=np.array([True, False, False]), distinct=True),
     "at least 2 available"),
    (dict(mask=np.array([[True, True, False], [False, False, False]]), batch=True),
     "at least 1 available"),
]


@pytest.mark.parametrize("kwargs,match", BAD_MASK)
def test_bad_mask_is_refused(kwargs, match):
    args = dict(K=3, L=2, distinct=False) | kwargs
    with pytest.raises(ValueError, match=match):
        check_mask(**args)
