"""The studies, under one roof: the paper's reproduction (:mod:`~bayesrank.studies.paper`),
prior sensitivity (:mod:`~bayesrank.studies.sensitivity`), calibration
(:mod:`~bayesrank.studies.calibration`), real items (:mod:`~bayesrank.studies.obd`) and
off-policy evaluation (:mod:`~bayesrank.studies.ope`). They share the plots
(:mod:`~bayesrank.studies.plots`), the NetCDF store and report writer
(:mod:`~bayesrank.studies.store`) and the config checks (:mod:`bayesrank._validate`).

The package face imports nothing: ``bayesrank study``'s parser is built without JAX.
"""
