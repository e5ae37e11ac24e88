"""Building blocks of ``balance`` and ``tensorqa.agqa.splits``: columnar passes over Parquet pools
(``config``, ``scan``, ``hashing``, ``hashindex``, ``labels``, ``smoothing``, ``waterfill``,
``structural``, ``select``, ``output``, ``report``; each module says what it holds)."""
