"""The paper's algorithms on Open Bandit Dataset items (``bayesrank study obd``)."""
