"""A log's other formats: a pandas DataFrame in long format
(:mod:`~bayesrank.ope.formats.frame`), Parquet files (:mod:`~bayesrank.ope.formats.parquet`)
and Open Bandit Pipeline's slate feedback (:mod:`~bayesrank.ope.formats.obp`). The
functions are on :mod:`bayesrank.ope` (``to_dataframe``, ``to_parquet``,
``read_parquet``, ``from_obp``, ``to_obp``).
"""
