"""What runs a policy object's core: the compiled programs it calls
(:mod:`~bayesrank.policies.runtime.program`), its host-side checks
(:mod:`~bayesrank.policies.runtime.checks`), the bounded history of impressions, the
round arguments and keys, the read-only inspection, and its file
(:mod:`~bayesrank.policies.runtime.persist` with its checks and the posterior model's
configuration).
"""
