"""Monte Carlo checks of the paper's Section 5 guarantees (issue 5).

One module per job:

- :mod:`bfio.theory.config`         profiles (``full``/``smoke``) and grid resolution
- :mod:`bfio.theory.distributions`  bounded prefill laws on ``{1..s_max}`` (Section 5 model)
- :mod:`bfio.theory.assign`         BF-IO (H=0) assignments that are provably ``s_max``-balanced
- :mod:`bfio.theory.homogeneous`    Theorem 1 (one admission round, Lemma 1)
- :mod:`bfio.theory.drift`          drift sequences ``delta_k`` of Definition 3 (Theorem 3)
- :mod:`bfio.theory.slot_model`     the overloaded slot model of Theorems 2 and 3
- :mod:`bfio.theory.estimates`      its steady-state estimates with batch-means standard errors
- :mod:`bfio.theory.predictions`    what Theorems 2 and 3 predict for it (snapshot moments, rates)
- :mod:`bfio.theory.energy`         Theorem 4, Remark 2 and Corollary 1 checks
- :mod:`bfio.theory.fit`            constant fits ``IIR ~ c * rate`` and their stability
- :mod:`bfio.theory.checks`         statistical tolerances (z-tests) shared by the checks
- :mod:`bfio.theory.run`            whole-grid drivers used by the pipeline and the benchmark
- :mod:`bfio.theory.report`         Markdown summary table
- :mod:`bfio.theory.figures`        figures under ``figures/theory``
"""
