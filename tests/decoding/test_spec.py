"""The decode spec and tables (:mod:`bayesrank.decoding.spec`): the dense pair tables
of each kind, and the refusals of specs and tables that do not fit together (every
message names the spec field or the table)."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayesrank.decoding.spec import (
    BonusTables,
    DecodeSpec,
    MonotoneTables,
    SeparableTables,
    dense_bonus,
    dense_pairs,
)
from bayesrank.model.links import get_link

K, L, Q = 5, 4, 2


def _z(*shape):
    return jnp.zeros(shape, jnp.float32)


SEP = SeparableTables(_z(L - 1, K), _z(L - 1, K))
MONO = MonotoneTables(_z(L - 1, K), _z(L - 1, K))
BONUS = BonusTables(_z(L - 1, K), _z(L - 1, K), _z(L - 1, Q, K), _z(L - 1, Q, K),
                    jnp.ones(L - 1))

#: (spec, tables, exception, message) of dense_pairs
BAD_DENSE_PAIRS = {
    "separable_B_short_K": (DecodeSpec("separable"), SEP._replace(B=_z(L - 1, K - 1)),
                            ValueError,
                            r"tables\.B: expected shape \(L-1, K\) = \(3, 5\), "
                            r"got \(3, 4\)"),
    "separable_B_other_L": (DecodeSpec("separable"), SEP._replace(B=_z(L - 2, K)),
                            ValueError,
                            r"tables\.B: expected shape \(L-1, K\) = \(3, 5\), "
                            r"got \(2, 5\)"),
    "separable_A_1d": (DecodeSpec("separable"), SEP._replace(A=_z(K)), ValueError,
                       r"tables\.A: expected shape \(L-1, K\), got \(5,\)"),
    "separable_list_of_lists_ragged": (
        DecodeSpec("separable"), SEP._replace(A=[[0.0] * K, [0.0]]), TypeError,
        r"tables\.A: expected real scores"),
    "monotone_B_3d": (DecodeSpec("monotone"), MONO._replace(B=_z(L - 1, K, 1)),
                      ValueError, r"tables\.B: expected shape \(L-1, K\) = \(3, 5\)"),
    "monotone_A_complex": (DecodeSpec("monotone"),
                           MONO._replace(A=jnp.zeros((L - 1, K), jnp.complex64)),
                           TypeError, r"tables\.A: expected real scores .*complex64"),
    "separable_B_object": (DecodeSpec("separable"),
                           SEP._replace(B=np.zeros((L - 1, K), object)), TypeError,
                           r"tables\.B: expected real scores .*object"),
    "monotone_A_nan": (DecodeSpec("monotone"), MONO._replace(A=MONO.A.at[0, 0].set(
        jnp.nan)), ValueError, r"tables\.A: scores must be finite or -inf"),
    "bonus_Ub_other_q": (DecodeSpec("bonus"), BONUS._replace(Ub=_z(L - 1, Q + 1, K)),
                         ValueError,
                         r"tables\.Ub: expected shape \(L-1, q, K\) = \(3, 2, 5\), "
                         r"got \(3, 3, 5\)"),
    "bonus_Ua_other_K": (DecodeSpec("bonus"), BONUS._replace(Ua=_z(L - 1, Q, K + 1)),
                         ValueError,
                         r"tables\.Ua: expected shape \(L-1, q, K\) = \(3, q, 5\)"),
    "bonus_c_2d": (DecodeSpec("bonus"), BONUS._replace(c=jnp.ones((L - 1, 1))),
                   ValueError, r"tables\.c: expected shape \(L-1,\) = \(3,\)"),
    "bonus_c_nan": (DecodeSpec("bonus"), BONUS._replace(c=jnp.full(L - 1, jnp.nan)),
                    ValueError, r"tables\.c: expected finite widths >= 0"),
    "bonus_Ub_bool": (DecodeSpec("bonus"), BONUS._replace(Ub=jnp.zeros((L - 1, Q, K),
                                                                        bool)),
                      TypeError, r"tables\.Ub: expected real scores .*bool"),
    "link_unknown": (DecodeSpec("monotone", "tandem"), MONO, ValueError,
                     "spec.link: unknown link 'tandem'"),
    "link_none": (DecodeSpec("bonus", None), BONUS, TypeError,
                  "spec.link: expected a link name, a Link or a callable, "
                  "got NoneType"),
}


@pytest.mark.parametrize("case", BAD_DENSE_PAIRS.values(), ids=BAD_DENSE_PAIRS.keys())
def test_dense_pairs_refuses_tables_that_do_not_fit_naming_the_table(case):
    spec, tables, exc, match = case
    with pytest.raises(exc, match=match):
        dense_pairs(spec, tables)


def test_dense_pairs_refuses_mismatched_tables_under_jit():
    bad = SEP._replace(B=_z(L - 1, K - 1))
    with pytest.raises(ValueError, match=r"tables\.B: expected shape \(L-1, K\)"):
        jax.jit(lambda t: dense_pairs(DecodeSpec("separable"), t))(bad)


@pytest.mark.parametrize(
    "tables, exc, match",
    [
        (BONUS._replace(Ub=_z(L - 1, Q + 1, K)), ValueError,
         r"tables\.Ub: expected shape \(L-1, q, K\) = \(3, 2, 5\)"),
        (BONUS._replace(c=jnp.ones(L)), ValueError,
         r"tables\.c: expected shape \(L-1,\) = \(3,\), got \(4,\)"),
        (MONO, TypeError,
         "tables: a .bonus. spec expects BonusTables, got MonotoneTables"),
    ],
)
def test_dense_bonus_refuses_tables_that_do_not_fit(tables, exc, match):
    with pytest.raises(exc, match=match):
        dense_bonus(tables, get_link("logistic"))


@pytest.mark.parametrize("name", ["identity", "logistic", "probit", "exp"])
@pytest.mark.parametrize("kind", ["monotone", "bonus"])
def test_dense_pairs_takes_a_link_by_name_or_as_a_link(kind, name):
    rng = np.random.default_rng(0)
    A, B = rng.normal(size=(2, L - 1, K))
    tabs = MonotoneTables(jnp.asarray(A), jnp.asarray(B)) if kind == "monotone" else \
        BonusTables(jnp.asarray(A), jnp.asarray(B),
                    *(jnp.asarray(rng.normal(size=(L - 1, Q, K))) for _ in "ab"),
                    jnp.asarray(rng.uniform(0, 1, L - 1)))
    by_name = dense_pairs(DecodeSpec(kind, name), tabs)
    np.testing.assert_array_equal(by_name, dense_pairs(DecodeSpec(kind, get_link(name)),
                                                       tabs))
    if kind == "bonus":
        np.testing.assert_array_equal(dense_bonus(tabs, name), by_name)


def test_dense_pairs_of_integer_and_list_tables_equal_the_float_tables():
    rng = np.random.default_rng(1)
    A, B = rng.integers(-3, 4, (L - 1, K)), rng.integers(-3, 4, (L - 1, K))
    want = dense_pairs(DecodeSpec("separable"),
                       SeparableTables(jnp.asarray(A, jnp.float32),
                                       jnp.asarray(B, jnp.float32)))
    for tabs in (SeparableTables(A, B), SeparableTables(A.tolist(), B.tolist())):
        got = dense_pairs(DecodeSpec("separable"), tabs)
        assert got.shape == (L - 1, K, K) and jnp.issubdtype(got.dtype, jnp.floating)
        np.testing.assert_array_equal(got, want)

