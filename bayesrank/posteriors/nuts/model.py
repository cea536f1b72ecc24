"""The NUTS posterior for any NumPyro model: :class:`NumPyroModel`, a
:class:`~bayesrank._static.Part` whose methods are thin calls of the pure functions
of :mod:`~bayesrank.posteriors.nuts.kernel` (its state and steps), :mod:`~bayesrank.posteriors.nuts.sites` (its model's sites),
:mod:`~bayesrank.posteriors.nuts.config` (its checks and configuration) and :mod:`~bayesrank.posteriors.nuts.export` (fresh
chains as a DataTree). The public face, with the description of the sampler, is
:mod:`bayesrank.posteriors.nuts`.

Example:
    >>> import functools
    >>> from bayesrank.posteriors.nuts import numpyro_models as models
    >>> NumPyroModel(functools.partial(models.glm, link="probit")).link.name
    'probit'
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np

from bayesrank._static import jit_method, Part
from bayesrank._validate import check_int, check_position, check_reward_support
from bayesrank.model.links import get_link, Link
from bayesrank.posteriors.buffers import valid_update
from bayesrank.posteriors.nuts import config as nuts_config, kernel as nuts_kernel
from bayesrank.posteriors.nuts.adapt import Schedule
from bayesrank.posteriors.nuts.config import SUPPORT_BY_LINK as _SUPPORT_BY_LINK
from bayesrank.posteriors.nuts.export import fresh_chains
from bayesrank.posteriors.nuts.kernel import NutsState, typed_key as _typed_key
from bayesrank.posteriors.nuts.model_link import infer_link
from bayesrank.posteriors.nuts.sites import MaskObserved, trace_theta_site

__all__ = ["NumPyroModel"]

#: The models' jitted steps, compiled once per model configuration: the model is
#: an argument (a pytree; its kernel caches are carried, not compared).
_UPDATE = jit_method("_update_core", static_argnums=5)
_DRAW = jit_method("_draw_core")
_POTENTIAL = jit_method("_potential_core")


class NumPyroModel(Part):
    """Any NumPyro model ``model(x, y=None)`` per position, sampled by warm NUTS.

    Args:
        model: a NumPyro model following :mod:`bayesrank.posteriors.nuts.numpyro_models`' contract.
        theta_site: name of the (p,)-shaped latent or deterministic site to draw.
        link: the link used to score items (name, Link or callable). None (default):
            inferred from the model's observed site (:mod:`~bayesrank.posteriors.nuts.model_link`: e.g.
            ``Bernoulli(logits=x @ theta)`` -> logistic, ``Poisson(exp(...))`` ->
            exp, ``Normal(x @ theta, s)`` -> identity), or a ValueError asking
            for ``link=``; never a silent identity.
        reward_support: "real", "binary" or "count", checked by ``check_rewards``.
            None (default): from the observed site's support.
        n_max: buffer length per position.
        num_warmup: warm-up (adaptation) transitions per (re-)adaptation.
        steps_per_round: NUTS transitions per ``draw``.
        readapt_start: observation count of the first warm-up re-run.
        readapt_growth: factor by which the count grows between re-runs (> 1), or
            None never to re-run warm-up.
        refit_every: run transitions only every ``refit_every``-th draw (others
            return the previous draw). Uses ``lax.cond``: under ``vmap`` over runs it
            becomes a select and saves nothing.
        max_tree_depth: NUTS tree depth limit (at most 2**depth leapfrog steps).
        target_accept_prob: dual-averaging target.
        dense_mass: adapt a dense mass matrix instead of a diagonal one.
        mean_window: rounds over which ``mean`` averages (see :mod:`bayesrank.posteriors.nuts`).
        overflow: "raise" or "window" (see :mod:`bayesrank.posteriors.nuts`).
        dim: feature dimension for the construction-time check (default 2).
        w_site: the name of a scalar latent site that, if the model declares it,
            makes it a latent-w model (``RankTS`` learns w): the model then takes the
            pair features ``x = (v_{a^l}, v_{a^{l-1}})`` (n, 2d), its theta site has
            shape (d,), and ``draw`` returns ``(theta (L, d), w (L,))``.

    Raises:
        ValueError: the model has no site ``theta_site`` (traced once on dummy data),
            or an option is out of range.

    Example:
        >>> import functools
        >>> from bayesrank.posteriors.nuts import numpyro_models as models
        >>> m = NumPyroModel(functools.partial(models.student_t_glm, df=4.0))
        >>> state = m.init(L=3, p=2)
    """

    #: ``bayesrank.simulate`` runs NUTS policies run by run (each run still one
    #: compiled ``lax.scan``): batched NUTS trees wait for the longest tree, so a
    #: vmap over runs is slower than a loop on CPU (docs/performance.md, "Why the code
    #: is written this way"; ``benchmarks/nuts.py``).
    vmappable = False
    #: per-instance caches of kernels built from the compared settings
    _derived = ("_cache", "_export_cache", "_schedule")

    def __init__(
        self,
        model: Callable,
        theta_site: str = "theta",
        *,
        link: str | Link | Callable | None = None,
        reward_support: str | None = None,
        n_max: int = 2000,
        num_warmup: int = 200,
        steps_per_round: int = 5,
        readapt_start: int = 10,
        readapt_growth: float | None = 4.0,
        refit_every: int = 1,
        max_tree_depth: int = 6,
        target_accept_prob: float = 0.8,
        dense_mass: bool = False,
        mean_window: int = 20,
        overflow: str = "raise",
        dim: int | None = None,
        w_site: str = "w",
    ):
        checked = nuts_config.valid_options(
            model, theta_site, reward_support=reward_support, n_max=n_max,
            num_warmup=num_warmup, steps_per_round=steps_per_round,
            readapt_start=readapt_start, readapt_growth=readapt_growth,
            refit_every=refit_every, max_tree_depth=max_tree_depth,
            target_accept_prob=target_accept_prob, dense_mass=dense_mass,
            mean_window=mean_window, overflow=overflow, w_site=w_site,
        )
        self.model, self.theta_site, self.w_site = model, theta_site, w_site
        self.latent_w = False
        for name, value in checked.items():
            setattr(self, name, value)
        self._dim = 2 if dim is None else check_int(dim, "dim", low=1)
        self._cache: dict = {}
        self._export_cache: dict = {}
        site_support = self._trace_theta_site(self._dim)
        if link is None:
            link, inferred_support = infer_link(
                model, theta_site, self._dim, self.w_site if self.latent_w else None
            )
            site_support = inferred_support
        self.link = get_link(link)
        if reward_support is None:
            reward_support = site_support or _SUPPORT_BY_LINK.get(self.link.name, "real")
        self.reward_support = reward_support
        self._schedule = Schedule(
            self.num_warmup, self.readapt_growth, self.target_accept_prob
        )

    # ------------------------------------------------------------------ model
    def _masked_model(self, x, y, mask):
        with MaskObserved(mask=mask):
            self.model(x, y)

    def _trace_theta_site(self, p: int):
        """Trace the model on dummy (n, p) data (:func:`bayesrank.posteriors.nuts.sites.trace_theta_site`);
        sets ``latent_w`` and whether the latent supports are parameter-free."""
        site = trace_theta_site(self.model, self.theta_site, self.w_site, p)
        self._param_free, self.latent_w = site.param_free, site.latent_w
        return site.support

    def _empty_data(self, p: int):
        """Template data (host arrays: concrete inside any trace)."""
        return nuts_kernel.empty_data(self, p)

    def potential_energy(self, z: dict, x, y, mask=None):
        """The chain's potential (negative log joint, unconstrained space) at ``z``.

        Args:
            z: dict of unconstrained latent values (as in ``state.hmc.z``, one
                position).
            x: (n, p) features; y: (n,) rewards.
            mask: (n,) bool rows that count (default all).

        Returns:
            A scalar.
        """
        x = jnp.asarray(x, jnp.result_type(float))
        y = jnp.asarray(y, jnp.result_type(float))
        mask = jnp.ones(y.shape, bool) if mask is None else jnp.asarray(mask, bool)
        return _POTENTIAL(self, z, x, y, mask)


    def _potential_core(self, z, x, y, mask):
        return nuts_kernel.potential_core(self, z, x, y, mask)

    # --------------------------------------------------------------- contract
    def init(self, L: int, p: int) -> NutsState:
        """Empty buffers and L chains at the prior median, warm-up pending.

        Args:
            L: number of positions.
            p: feature dimension.

        Returns:
            NutsState.
        """
        L = check_int(L, "L", low=1)
        p = check_int(p, "p", low=1)
        return nuts_kernel.init_state(self, L, p)

    def update(self, state: NutsState, x, y, valid=None) -> NutsState:
        """Append one impression per position and refresh the chains' potentials.

        Args:
            state: NutsState.
            x: (L, p) features shown at each position.
            y: (L,) rewards.
            valid: (L,) bool, positions whose reward counts (default all).

        Returns:
            NutsState with the data added and ``potential_energy``/``z_grad``
            recomputed at each chain's ``z`` on its new data.

        Raises:
            ValueError: wrong shapes, or buffer overflow with ``overflow="raise"``.
        """
        n_max = state.x.shape[1]
        x, y, valid = valid_update(state, x, y, valid)
        concrete = not isinstance(state.n, jax.core.Tracer) and not isinstance(
            valid, jax.core.Tracer
        )
        if self.overflow == "raise" and concrete:
            nuts_kernel.raise_overflow(np.asarray(valid) & (np.asarray(state.n) >= n_max), n_max)
            return _UPDATE(self, state, x, y, valid, False)
        return _UPDATE(self, state, x, y, valid, self.overflow == "raise")

    def _update_core(self, state, x, y, valid, check):
        return nuts_kernel.update_core(self, state, x, y, valid, check)

    def draw(self, key, state: NutsState) -> tuple[jax.Array, NutsState]:
        """Advance every chain ``steps_per_round`` NUTS transitions; return theta.

        Args:
            key: a JAX PRNG key.
            state: NutsState.

        Returns:
            (theta (L, p), new state); for a latent-w model ``((theta (L, d),
            w (L,)), new state)``.
        """
        theta, state = _DRAW(self, _typed_key(key), state)
        if self.latent_w:
            return (theta[:, :-1], theta[:, -1]), state
        return theta, state

    def _draw_core(self, key, state):
        return nuts_kernel.draw_core(self, key, state, nuts_kernel.positions_in_turn())

    def mean(self, state: NutsState) -> jax.Array:
        """(L, p) running mean of recent draws (see the module docstring); current
        after :meth:`refresh` or :meth:`draw`; theta only for a latent-w model."""
        return state.theta_mean[:, :-1] if self.latent_w else state.theta_mean

    def w_mean(self, state: NutsState) -> jax.Array:
        """(L,) the running mean of the drawn w (latent-w models)."""
        if not self.latent_w:
            raise TypeError(f"w_mean: the model has no latent site {self.w_site!r}")
        return state.theta_mean[:, -1]

    def refresh(self, key, state: NutsState) -> NutsState:
        """Advance every chain one round (``steps_per_round`` transitions) so that
        :meth:`mean` follows the data; UCB policies call this before reading it.

        Args:
            key: a JAX PRNG key; state: NutsState.

        Returns:
            The advanced state (the draw itself is discarded).
        """
        return self.draw(key, state)[1]

    def diagnostics(self, state: NutsState) -> dict[str, jax.Array]:
        """Per-position sampler health, each (L,).

        Returns:
            dict with ``divergences`` (post-warm-up count), ``accept_rate`` (mean
            acceptance probability), ``mean_steps`` (leapfrog steps per transition),
            ``tree_depth`` (last transition), ``step_size``, ``adapting`` (bool) and
            ``n`` (observations).
        """
        return nuts_kernel.diagnostics(state, self.num_warmup)

    def check_rewards(self, y) -> None:
        """Raise if rewards are outside the likelihood's support (host side)."""
        check_reward_support(y, self.reward_support)

    def data(self, state: NutsState, position: int) -> tuple[np.ndarray, np.ndarray]:
        """The observations held for ``position``: x (n, p), y (n,) as NumPy."""
        L = state.x.shape[0]
        position = check_position(position, L)
        n = min(int(state.n[position]), self.n_max)
        return np.asarray(state.x[position, :n]), np.asarray(state.y[position, :n])

    def to_datatree(
        self,
        state: NutsState,
        position: int,
        *,
        key,
        data=None,
        chains: int = 4,
        draws: int = 500,
        warmup: int | None = None,
        chain_method: str = "vectorized",
        max_tree_depth: int = 10,
    ):
        """A fresh multi-chain NUTS run on ``position``'s data, as an ArviZ DataTree.

        The warm per-round chain is one chain on moving data, so R-hat needs fresh
        chains (:func:`bayesrank.posteriors.nuts.export.fresh_chains`): compiled on
        the first call for a given model, p and run size, cached afterwards.

        Args:
            state: NutsState.
            position: 0-based position.
            key: JAX PRNG key.
            data: accepted for the common protocol and ignored: the model's buffers
                hold exactly the observations its posterior conditions on (a
                policy's history may hold more, e.g. past a sliding window).
            chains, draws: MCMC sizes; warmup: adapting transitions (default draws).
            chain_method: "vectorized" or "sequential".
            max_tree_depth: NUTS tree depth limit of the fresh run.

        Returns:
            xarray.DataTree with groups posterior (every latent and deterministic
            site), sample_stats (diverging, energy, n_steps, acceptance_rate,
            tree_depth), log_likelihood (per observation), log_prior (each draw's
            prior log density: non-observed sample sites, constrained space),
            observed_data and constant_data (X).
        """
        del data
        return fresh_chains(
            self,
            state,
            position,
            key=_typed_key(key),
            chains=chains,
            draws=draws,
            warmup=warmup,
            chain_method=chain_method,
            max_tree_depth=max_tree_depth,
        )


    # ----------------------------------------------------------------- config
    def _options(self) -> dict:
        return nuts_config.options(self)

    def config(self) -> dict:
        """JSON-able description; the model must be a module-level function (or a
        ``functools.partial`` of one with JSON-able keywords)."""
        return nuts_config.model_config(self)

    @classmethod
    def from_config(cls, cfg: dict, *, model: Callable | None = None) -> NumPyroModel:
        """Rebuild from :meth:`config`'s output.

        Args:
            cfg: the configuration.
            model: the model function to use instead of resolving ``cfg["model"]``.
                Without it the name is looked up ONLY in the registry
                (:func:`bayesrank.posteriors.register_model`): no import, no
                attribute walk, so a tampered file cannot reach other code.

        Raises:
            ValueError: an unregistered model name (pass ``model=``), a wrong type.
        """
        return nuts_config.model_from_config(cls, cfg, model)

    def __repr__(self) -> str:
        name = getattr(self.model, "__name__", type(self.model).__name__)
        return f"NumPyroModel({name}, link={self.link.name!r}, n_max={self.n_max})"
