"""Off-policy estimators against an exact truth (``bayesrank study ope``)."""
