"""Studies beyond the paper: :mod:`bayesrank.studies.obd` (real items)."""
