"""The one home of argument checks (:mod:`bayesrank._validate`): what each check takes,
what it refuses and with which exception and message, and that the layers' own
arguments go through it (one message shape everywhere)."""

from __future__ import annotations

import math

import numpy as np
import pytest

import bayesrank as br
from bayesrank._validate import (
    check_array,
    check_bool,
    check_choice,
    check_int,
    check_lists,
    check_position,
    check_probabilities,
    check_real,
    is_bool,
    is_integer,
)

# ------------------------------------------------------------------------ check_int
GOOD_INTS = [(3, {}, 3), (np.int64(4), {"low": 1}, 4), (0, {"low": 0}, 0),
             (5, {"low": 1, "high": 5}, 5)]
BAD_INTS = [
    (True, {}, TypeError, "n: expected an integer, got bool"),
    (np.bool_(False), {}, TypeError, "n: expected an integer, got bool"),
    (2.0, {}, TypeError, "n: expected an integer, got float"),
    ("3", {}, TypeError, "n: expected an integer, got str"),
    (None, {}, TypeError, "n: expected an integer, got NoneType"),
    (0, {"low": 1}, ValueError, "n: expected an integer >= 1, got 0"),
    (6, {"low": 1, "high": 5}, ValueError, r"n: expected an integer in \[1, 5\], got 6"),
    (-1, {"high": 0, "low": None}, None, None),  # in range: no error
]


@pytest.mark.parametrize("value, bounds, want", GOOD_INTS)
def test_check_int_returns_a_python_int(value, bounds, want):
    got = check_int(value, "n", **bounds)
    assert got == want and type(got) is int


@pytest.mark.parametrize("value, bounds, exc, msg", BAD_INTS)
def test_check_int_refuses_with_the_argument_name(value, bounds, exc, msg):
    if exc is None:
        assert check_int(value, "n", **bounds) == value
        return
    with pytest.raises(exc, match=f"^{msg}"):
        check_int(value, "n", **bounds)


# ----------------------------------------------------------------------- check_real
@pytest.mark.parametrize("value", [2, 2.5, np.float32(2.5), np.array(2.5), np.int8(2)])
def test_check_real_takes_python_and_numpy_scalars(value):
    got = check_real(value, "x")
    assert type(got) is float and got == float(value)


BAD_REALS = [
    (True, {}, TypeError, "x: expected a real number, got a bool"),
    ("1.5", {}, TypeError, "x: expected a real number, got str"),
    (1 + 2j, {}, TypeError, "x: expected a real number, got complex"),
    (np.array([1.0]), {}, ValueError, r"x: expected a scalar, got shape \(1,\)"),
    (math.nan, {}, ValueError, "x: expected a finite number, got nan"),
    (math.inf, {}, ValueError, "x: expected a finite number, got inf"),
    (0.0, {"low": 0, "inclusive": "neither"}, ValueError, "x: expected a finite number > 0"),
    (1.0, {"low": 0, "high": 1, "inclusive": "left"}, ValueError,
     r"x: expected a finite number in \[0, 1\)"),
    (-0.1, {"low": 0}, ValueError, "x: expected a finite number >= 0"),
    (2.0, {"high": 1}, ValueError, "x: expected a finite number <= 1"),
]


@pytest.mark.parametrize("value, bounds, exc, msg", BAD_REALS)
def test_check_real_refuses_with_the_argument_name(value, bounds, exc, msg):
    with pytest.raises(exc, match=f"^{msg}"):
        check_real(value, "x", **bounds)


@pytest.mark.parametrize("inclusive, low_ok, high_ok", [
    ("both", True, True), ("left", True, False), ("right", False, True),
    ("neither", False, False)])
def test_check_real_ends_follow_inclusive(inclusive, low_ok, high_ok):
    for v, ok in ((0.0, low_ok), (1.0, high_ok), (0.5, True)):
        if ok:
            assert check_real(v, "x", low=0, high=1, inclusive=inclusive) == v
        else:
            with pytest.raises(ValueError):
                check_real(v, "x", low=0, high=1, inclusive=inclusive)


def test_check_real_refuses_an_unknown_inclusive():
    with pytest.raises(ValueError, match="^inclusive: expected one of"):
        check_real(0.5, "x", inclusive="open")


# ---------------------------------------------------------------------- check_array
def test_check_array_converts_and_checks_dimensions():
    got = check_array([[1, 2], [3, 4]], "items", ndim=2)
    assert got.dtype == np.float64 and got.tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert check_array([1.0, np.nan], "r", finite=False).shape == (2,)


@pytest.mark.parametrize("value, kwargs, exc, msg", [
    (["a", "b"], {}, TypeError, r"v: expected real numbers \(an int or float array\), "
                                "got dtype <U1"),
    ("ab", {}, TypeError, "v: expected real numbers .*, got str"),
    ([1 + 1j], {}, TypeError, "v: expected real numbers"),
    ([True, False], {}, TypeError, "v: expected real numbers .*, got dtype bool"),
    ([[1.0], [2.0, 3.0]], {}, TypeError, "v: expected real numbers .*, got list"),
    ([[1.0, 2.0]], {"shape": (None, 3)}, ValueError, r"v: expected shape \(n, 3\), "
                                                      r"got \(1, 2\)"),
    ([1.0, 2.0], {"shape": (1,)}, ValueError, r"v: expected shape \(1,\), got \(2,\)"),
    ([1.0, 2.0], {"ndim": 2}, ValueError, r"v: expected a 2-d array, got shape \(2,\)"),
    ([[1.0]], {"ndim": (0, 1)}, ValueError, "v: expected a 0-d or 1-d array"),
    ([1.0, np.inf], {}, ValueError, "v: expected finite values, found NaN or inf"),
    ([1.0, np.nan], {}, ValueError, "v: expected finite values, found NaN or inf"),
    ([1.0, -np.inf], {"finite": False}, ValueError,
     r"v: expected finite values or NaN \(not observed\), found inf"),
])
def test_check_array_refuses(value, kwargs, exc, msg):
    with pytest.raises(exc, match=f"^{msg}"):
        check_array(value, "v", **kwargs)


def test_check_array_shape_wildcards_and_unchecked_values():
    assert check_array(np.ones((4, 3), int), "v", shape=(None, 3)).dtype == np.float64
    got = check_array([np.inf, np.nan], "v", finite=None)  # the caller words its own
    assert np.isinf(got[0]) and np.isnan(got[1])


# ------------------------------------------------- flags, choices, positions, probs
@pytest.mark.parametrize("value", [True, False, np.bool_(True)])
def test_check_bool_takes_python_and_numpy_bools(value):
    got = check_bool(value, "distinct")
    assert type(got) is bool and got == bool(value)


@pytest.mark.parametrize("value", [1, 0, None, "yes", np.float64(1.0), np.array([True])])
def test_check_bool_refuses_what_only_looks_like_a_flag(value):
    with pytest.raises(TypeError, match="^distinct: expected a bool, got "):
        check_bool(value, "distinct")


def test_the_predicates_tell_ints_from_bools():
    # an independent reference: the type names
    for v in (1, np.int32(2), -3, True, np.bool_(False), 2.0, "1", None):
        name = type(v).__name__
        assert is_integer(v) == (name in ("int", "int32")), v
        assert is_bool(v) == (name in ("bool", "bool_")), v


def test_check_choice():
    assert check_choice("b", "link", ("a", "b")) == "b"
    for bad in ("c", 1, None):
        with pytest.raises(ValueError, match=r"^link: expected one of \('a', 'b'\), got "):
            check_choice(bad, "link", ("a", "b"))


@pytest.mark.parametrize("value, exc, msg", [
    (3, ValueError, r"position: expected an int in \[0, 2\], got 3"),
    (-1, ValueError, r"position: expected an int in \[0, 2\], got -1"),
    (True, TypeError, r"position: expected an int in \[0, 2\], got bool"),
    (1.0, TypeError, r"position: expected an int in \[0, 2\], got float"),
])
def test_check_position_refuses(value, exc, msg):
    with pytest.raises(exc, match=f"^{msg}"):
        check_position(value, 3)
    assert [check_position(np.int64(p), 3) for p in range(3)] == [0, 1, 2]


@pytest.mark.parametrize("value, kwargs, ok", [
    ([0.5, 1.0], {}, True), ([0.0, 1.0], {}, False), ([0.0, 1.0], {"zero": True}, True),
    ([0.5, 1.5], {"zero": True}, False), ([0.5, np.nan], {}, False),
    ([-0.0], {"zero": True}, True),
])
def test_check_probabilities_ends(value, kwargs, ok):
    # reference: the interval written out by hand
    if ok:
        assert check_probabilities(value, "p", **kwargs).tolist() == value
    else:
        with pytest.raises(ValueError, match=r"^p: expected probabilities in [\[(]0, 1\]"):
            check_probabilities(value, "p", **kwargs)


# ---------------------------------------------------------------------- check_lists
@pytest.mark.parametrize("lists, exc, msg", [
    (np.array([0, 1]), ValueError, r"items: expected shape \(L,\) or \(n, L\) with L=3"),
    (np.array([0.0, 1.0, 2.0]), TypeError, "items: expected integer item indices"),
    (np.array([0, 1, 5]), ValueError, r"items: item indices must lie in \[0, K-1\] = \[0, 4\]"),
    (np.array([[0, 1, 2], [0, -1, 2]]), ValueError, "items: item indices must lie"),
])
def test_check_lists_refuses(lists, exc, msg):
    with pytest.raises(exc, match=f"^{msg}"):
        check_lists(lists, K=5, L=3)
    check_lists(np.array([[0, 1, 4]]), K=5, L=3)  # a good batch passes


# ------------------------------------------- the layers' arguments go through it
SURFACES = {
    "GaussianLinear(discount)": (lambda: br.GaussianLinear(discount=0.0), ValueError,
                                 r"discount: expected a finite number in \(0, 1\]"),
    "LaplaceGLM(n_max)": (lambda: br.LaplaceGLM(n_max=0), ValueError,
                          "n_max: expected an integer >= 1"),
    "LaplaceGLM(prior_scale)": (lambda: br.LaplaceGLM(prior_scale="1"), TypeError,
                                "prior_scale: expected a real number"),
    "noise.Gaussian(sd)": (lambda: br.noise.Gaussian(-1.0), ValueError,
                           "Gaussian.sd: expected a finite number >= 0"),
    "noise.Gaussian(str)": (lambda: br.noise.Gaussian("1"), TypeError,
                            "Gaussian.sd: expected a real number"),
    "RankUCB(delta)": (lambda: br.RankUCB(items=np.eye(3), L=2, w=np.zeros(2), delta=1.0),
                       ValueError, r"delta: expected a finite number in \(0, 1\)"),
    "RankUCB(lam str)": (lambda: br.RankUCB(items=np.eye(3), L=2, w=np.zeros(2), lam="2"),
                         TypeError, "lam: expected a real number"),
    "theorems(delta)": (lambda: br.theorems.rank_ucb_bound(10, L=2, d=2, lam=1.0, delta=0.0,
                                                          m1=1.0, m2=1.0, w_max=1.0),
                        ValueError, r"delta: expected a finite number in \(0, 1\)"),
    "links.link_constants(z_max)": (lambda: br.links.link_constants("logistic", -1.0),
                                    ValueError, "z_max: expected a finite number >= 0"),
    "ope.bootstrap(n_boot)": (
        lambda: next(__import__("bayesrank.ope.bootstrap", fromlist=["x"]).resample_counts(
            5, 0, seed=0)), ValueError, "n_boot: expected an integer >= 1"),
}


#: The one bool-array rule, seen from the layers that used to disagree (four converters
#: took a bool array as 0/1 numbers in some modules and refused it in others).
BOOL_ARRAYS = {
    "RankTS(items)": lambda: br.RankTS(items=np.ones((3, 2), bool), L=2, w=np.zeros(2)),
    "GaussianLinear(prior_mean)": lambda: br.GaussianLinear(prior_mean=np.ones(2, bool)),
    "ope.list_ips(pi)": lambda: br.ope.list_ips(np.ones((2, 2)), np.ones(2, bool),
                                                np.ones(2)),
    "ope.as_log(v0)": lambda: br.ope.as_log(np.array([[0, 1]]), np.ones((1, 2)),
                                            np.ones(2, bool), K=2),
    "PBMUCB(examination)": lambda: br.PBMUCB(5, L=2, examination=np.ones(2, bool)),
}


@pytest.mark.parametrize("case", BOOL_ARRAYS)
def test_a_bool_array_is_not_a_number_anywhere(case):
    with pytest.raises(TypeError, match=r"expected real numbers \(an int or float array\), "
                                        "got dtype bool"):
        BOOL_ARRAYS[case]()


@pytest.mark.parametrize("case", SURFACES)
def test_every_layer_words_its_refusals_the_same_way(case):
    call, exc, msg = SURFACES[case]
    with pytest.raises(exc, match=f"^{msg}"):
        call()
