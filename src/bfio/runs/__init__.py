"""One run's identity, its outputs and the tables over runs: the experiments the
config declares, ``RunSpec``, the runner, the paper's tables and their verdicts,
code fingerprints and the results diff.
"""
