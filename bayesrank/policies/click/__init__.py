"""The online learning-to-rank baselines for click models, each a
:class:`~bayesrank.policies.click.base.ClickCore` under the same ``Policy`` class
(:class:`~bayesrank.policies.click.base.ClickPolicy`): CascadeKLUCB (Kveton et al.
2015), CascadeLinTS and CascadeLinUCB (Zong et al. 2016), PBMUCB (Lagree et al. 2016)
and TopRank (Lattimore et al. 2018).

Example:
    >>> from bayesrank.policies.click import CascadeKLUCB
    >>> CascadeKLUCB(8, L=3).select().shape
    (3,)
"""

from bayesrank.policies.click.base import ClickCore, ClickPolicy
from bayesrank.policies.click.cascade_klucb import CascadeKLUCB
from bayesrank.policies.click.cascade_lin import CascadeLinTS, CascadeLinUCB
from bayesrank.policies.click.pbm_ucb import PBMUCB
from bayesrank.policies.click.toprank import TopRank

__all__ = ["PBMUCB", "CascadeKLUCB", "CascadeLinTS", "CascadeLinUCB", "ClickCore",
           "ClickPolicy", "TopRank"]
