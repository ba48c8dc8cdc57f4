"""State the worker processes of one machine share with no Redis: a SQLite store in a private directory.

``store.py`` opens it; ``buckets.py`` (rate limits), ``approvals.py`` (used approvals),
``person_approvals.py`` (approvals a person decides), ``tasks.py`` (task records),
``metrics.py`` (each worker's metrics, for a ``/metrics`` answer about the machine) use it;
``state.py`` hands them to a served bridge, as ``replicas.shared`` does with Redis.
"""
