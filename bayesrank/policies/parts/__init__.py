"""The parts a policy is composed from (:func:`~bayesrank.policies.parts.core.compose`):
the features of a shown list (:mod:`~bayesrank.policies.parts.features`), the
estimate to score with (:mod:`~bayesrank.policies.parts.estimate`: a posterior draw
or the mean and a width), the tables the decoder reads
(:mod:`~bayesrank.policies.parts.tables`, :mod:`~bayesrank.policies.parts.bonus`), the
request's context and the functional core that holds them
(:mod:`~bayesrank.policies.parts.core`), and the keyword-only guard of the
constructors. No module here imports a policy class or the runtime.
"""
