"""Building blocks of ``tensorqa.agqa.balancing.balance`` and ``tensorqa.agqa.splits``: columnar passes over Parquet pools.

* ``config``     — the switches of ``balance`` and its presets;
* ``scan``       — pool shards, column batches, small string codebooks;
* ``hashing``    — 64-bit hashes of string columns (group keys, seeded priorities);
* ``hashindex``  — hash -> dense code maps, vectorized over batches;
* ``labels``     — AGQA's temporal-change labels and the order in which they give up questions;
* ``smoothing``  — answer-count targets: binary 50/50, open-answer smoothing, uniform;
* ``waterfill``  — spreading a cut by lowering the largest first;
* ``structural`` — structural rejection sampling targets;
* ``select``     — keep a quota per cell, chosen at random, with one sort;
* ``output``     — writing a pool in the Hugging Face layout;
* ``report``     — entropy and majority-baseline figures.
"""
