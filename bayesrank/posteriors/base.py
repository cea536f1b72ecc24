"""The contract every per-position posterior model follows.

A model holds one independent posterior over theta^l for each of the L positions, in a
single state batched over positions (leading axis L). All methods except
``check_rewards``, ``to_datatree`` and ``config`` are pure JAX functions, so policies can
be jitted, scanned over rounds and vmapped over runs.

    state = model.init(L, p)                       # p: feature dimension (d, or 2d)
    state = model.update(state, x, y, valid)       # x (L, p), y (L,), valid (L,) bool
    theta, state = model.draw(key, state)          # theta (L, p): one draw per position
    mean = model.mean(state)                       # (L, p): posterior mean (or MAP)
    state = model.refresh(key, state)              # make ``mean`` current (MCMC: advance)
    chol, logdet_ratio = model.gram(state)         # optional: precision factor (L, p, p)
                                                   # and log det over the prior's (L,)
    model.check_rewards(y)                          # host-side support check, raises
    dt = model.to_datatree(state, position, key=key, data=None)  # ArviZ DataTree
                                                   # (host side; data = (X, y), the
                                                   # observations folded in: used by
                                                   # sufficient-statistic models,
                                                   # ignored by buffered ones)
    cfg = model.config(); type(model).from_config(cfg)   # JSON-able, for save/load

``draw`` returns the state too: MCMC models advance their chains there; conjugate
models return it unchanged. ``valid`` marks the positions whose reward counts (all True
for a normal impression; policies pass ``isfinite(reward)`` so that a NaN reward means
"position not observed", with the NaN replaced by 0 before the call).

``gram`` exists only for models whose posterior has a Gaussian precision (conjugate,
Laplace); UCB policies over other models (NUTS) keep their own Gram factor.
``refresh`` is a no-op for the closed-form and Laplace models (their mean is current
after ``update``); NUTS models advance their chains one round there.

Families: GaussianLinear, GaussianLinearUnknownNoise (closed form), LaplaceGLM
(Laplace approximation at the regularised MLE), BayesGLM / NumPyroModel (NUTS).
"""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import jax
import jax.numpy as jnp

from bayesrank._static import Part
from bayesrank.model.links import Link

__all__ = ["PosteriorModel", "ScaleHolder", "update_args", "update_many"]


@runtime_checkable
class PosteriorModel(Protocol):
    """What a per-position posterior model provides (see the module docstring).

    Every family in :mod:`bayesrank.posteriors` follows it; a class of your own that
    does can be given to any policy as ``model=``. ``isinstance`` checks the method
    names only (a runtime-checkable protocol).

    Example:
        >>> import bayesrank as br
        >>> from bayesrank.posteriors import PosteriorModel
        >>> isinstance(br.GaussianLinear(), PosteriorModel)
        True
        >>> isinstance(object(), PosteriorModel)
        False
    """

    link: Link

    def init(self, L: int, p: int) -> Any:
        """The prior state for L positions and feature dimension p."""
        ...

    def update(self, state, x, y, valid=None) -> Any:
        """Fold one observation per position in: x (L, p), y (L,), valid (L,)."""
        ...

    def draw(self, key, state) -> tuple[Any, Any]:
        """One posterior draw per position, (L, p), and the (advanced) state."""
        ...

    def mean(self, state) -> Any:
        """The posterior mean (or MAP) per position, (L, p)."""
        ...

    def refresh(self, key, state) -> Any:
        """Make ``mean`` current (MCMC models advance their chains)."""
        ...

    def check_rewards(self, y) -> None:
        """Raise if the rewards ``y`` are outside the likelihood's support."""
        ...

    def to_datatree(self, state, position: int, *, key, data=None, **kwargs):
        """The posterior of one position as an ArviZ ``DataTree``."""
        ...

    def config(self) -> dict:
        """A JSON-able configuration; ``type(model).from_config`` rebuilds it."""
        ...


def update_many(model, state, X, Y, valid=None):
    """Fold n impressions into the state in order: X (n, L, p), Y (n, L).

    Args:
        model: a posterior model.
        state: its state.
        X: (n, L, p) features of n impressions.
        Y: (n, L) rewards.
        valid: (n, L) bool, True where the reward counts (default: all).

    Returns:
        The state after the n updates (one ``lax.scan``).

    Example:
        >>> import jax.numpy as jnp, bayesrank as br
        >>> from bayesrank.posteriors import update_many
        >>> model = br.GaussianLinear()
        >>> state = update_many(model, model.init(L=2, p=2), jnp.ones((5, 2, 2)),
        ...                     jnp.ones((5, 2)))
        >>> state.n.tolist()
        [5.0, 5.0]
    """
    if valid is None:
        valid = jnp.ones(Y.shape, bool)

    def body(s, xyv):
        x, y, v = xyv
        return model.update(s, x, y, v), None

    state, _ = jax.lax.scan(body, state, (X, Y, valid))
    return state


def update_args(x, y, valid, L: int, p: int, dtype, y_dtype=None):
    """An update's arguments checked against a state of L positions and p features
    (ValueError naming the argument): ``x (L, p)`` and ``y (L,)`` as arrays of
    ``dtype`` (``y_dtype`` if given) and ``valid (L,)`` bool (None: all True). Every
    model's ``update`` starts here.

    Example:
        >>> import jax.numpy as jnp
        >>> x, y, valid = update_args(jnp.ones((2, 3)), jnp.zeros(2), None, 2, 3,
        ...                           jnp.float32)
        >>> valid.tolist()
        [True, True]
    """
    x = jnp.asarray(x, dtype)
    y = jnp.asarray(y, dtype if y_dtype is None else y_dtype)
    if x.shape != (L, p):
        raise ValueError(f"x: expected shape (L, p) = ({L}, {p}), got {x.shape}")
    if y.shape != (L,):
        raise ValueError(f"y: expected shape (L,) = ({L},), got {y.shape}")
    valid = jnp.ones((L,), bool) if valid is None else jnp.asarray(valid)
    if valid.shape != (L,):
        raise ValueError(f"valid: expected a (L,) = ({L},) bool array, got {valid.shape}")
    return x, y, valid.astype(bool)


class ScaleHolder(Part):
    """A model that holds the part doing its maths, :attr:`scale_model` (fixed or
    learnt scales: ``GaussianLinear`` and ``LaplaceGLM``): the contract's methods run
    the part's, and every other attribute is the part's too, so ``hasattr`` says what
    it offers. Subclasses build the part in ``__init__`` and name the parts a file may
    hold in ``PARTS``.

    Example:
        >>> from bayesrank.posteriors import GaussianLinear
        >>> model = GaussianLinear(prior_scale=1.0, noise_scale=0.5)
        >>> isinstance(model, ScaleHolder), type(model.scale_model).__name__
        (True, 'FixedScaleLinear')
    """

    #: the part doing the maths (set by a subclass's ``__init__``)
    scale_model: Any = None
    #: The parts a config may name (its ``class``), looked up here, never imported.
    PARTS: dict = {}
    #: The config ``class`` rebuilt through the constructor, not a part (None for none).
    CONSTRUCTED: str | None = None

    @classmethod
    def _holding(cls, scale_model):
        """The model holding a part already built (``from_config``)."""
        obj = object.__new__(cls)
        obj.scale_model = scale_model
        return obj

    def __getattr__(self, name):
        # reached only where the model itself has no such attribute: the part's
        part = self.__dict__.get("scale_model")
        if part is None or name.startswith("__"):
            raise AttributeError(
                f"{type(self).__name__!r} object has no attribute {name!r}")
        return getattr(part, name)

    @property
    def learnt_scale(self) -> bool:
        """Whether a scale is learnt (the part says)."""
        return bool(self.scale_model.learnt_scale)

    @property
    def link(self) -> Link:
        """The part's link function."""
        return self.scale_model.link

    def __repr__(self) -> str:
        return repr(self.scale_model)

    # --------------------------------------------------------- the contract
    def init(self, L: int, p: int):
        """The prior for L positions (the part's state)."""
        return self.scale_model.init(L, p)

    def update(self, state, x, y, valid=None):
        """Fold one observation per position in: x (L, p), y (L,), valid (L,) bool."""
        return self.scale_model.update(state, x, y, valid)

    def draw(self, key, state):
        """One theta per position, (L, p), and the state unchanged."""
        return self.scale_model.draw(key, state)

    def draw_batch(self, key, state, n: int) -> jax.Array:
        """n independent draws at once: (n, L, p)."""
        return self.scale_model.draw_batch(key, state, n)

    def mean(self, state) -> jax.Array:
        """The posterior mean of theta per position, (L, p)."""
        return self.scale_model.mean(state)

    def refresh(self, key, state):
        """The part's refresh (a no-op where the mean is always current)."""
        return self.scale_model.refresh(key, state)

    def check_rewards(self, y) -> None:
        """Host-side check of rewards against the part's likelihood (raises)."""
        self.scale_model.check_rewards(y)

    def to_datatree(self, state, position: int, *, key, data=None, draws: int = 1000,
                    chains: int = 4):
        """The posterior at one position as an ArviZ DataTree (the part's)."""
        return self.scale_model.to_datatree(state, position, key=key, data=data,
                                            draws=draws, chains=chains)

    def config(self) -> dict:
        """The part's JSON-able constructor arguments with its ``class`` (the names
        every earlier version wrote)."""
        return self.scale_model.config()

    @classmethod
    def from_config(cls, cfg: dict):
        """Rebuild from :meth:`config` output (of any earlier version too): the part
        its ``class`` names in :attr:`PARTS`, held by this class."""
        if not isinstance(cfg, dict):
            raise TypeError(f"cfg: expected a dict, got {type(cfg).__name__}")
        name = cfg.get("class", cls.__name__)
        if name == cls.CONSTRUCTED:
            return cls(**{k: v for k, v in cfg.items() if k != "class"})
        part = cls.PARTS.get(name)
        if part is None:
            raise ValueError(f"cfg: describes a {name!r}, not a {cls.__name__!r}")
        return cls._holding(part.from_config(cfg))
