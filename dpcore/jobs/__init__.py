"""Background jobs: long work (training, sweeps, shadow models, audits) outside the Streamlit script thread.

* :mod:`~dpcore.jobs.store` — the job API: submit (once per click, within the owner's share), get, list, cancel,
  wait, rename, delete, result files — each for a caller that may see or change the job.
* :mod:`~dpcore.jobs.db` — the SQLite file under ``$DP_EXPLORER_HOME``: schema and migration, connections,
  storage faults.
* :mod:`~dpcore.jobs.liveness` — a slow worker is not a dead one: a running job is given up only when its
  worker's process is gone or its lease lapsed; then failed, or queued again where its target allows.
* :mod:`~dpcore.jobs.hooks` — what runs after a job's end is committed (and what it released).
* :mod:`~dpcore.jobs.owners` — who may see and change a job or sweep: owners, :class:`~dpcore.jobs.owners.Caller`,
  admins, the shared demo, the shares of the queue.
* :mod:`~dpcore.jobs.records` — :class:`~dpcore.jobs.records.JobStatus` and the frozen
  :class:`~dpcore.jobs.records.JobRecord` the store returns.
* :mod:`~dpcore.jobs.work` — a caller's own work of every kind (My work).
* :mod:`~dpcore.jobs.registry` — job targets by registered name (``"train"``, ``"sweep.point"``, ...) and the
  one translation of old ``"dpcore.module:function"`` paths that stored rows may hold.
* :mod:`~dpcore.jobs.groups` — a group of jobs (a sweep): its own row, queued with its members, and its end.
* :mod:`~dpcore.jobs.attempt` — one attempt at a job: its context (progress, stop flag, files), its heartbeat and
  its end, every write fenced by the attempt (a storage fault ends the job, not the worker).
* :mod:`~dpcore.jobs.runner` — running one job: the fair claim, one attempt to its recorded end;
  :func:`~dpcore.jobs.runner.run_inline` runs one in this process.
* :mod:`~dpcore.jobs.workers` — the worker process (``python -m dpcore.jobs``: claim, run, repeat); starting,
  counting and stopping local worker processes.
* :mod:`~dpcore.jobs.executors` — where a unit of long work runs: local worker processes or a Ray cluster;
  device selection.
* :mod:`~dpcore.jobs.settings` — timing knobs from the environment; :mod:`~dpcore.jobs.display` — what a page
  draws for a job; :mod:`~dpcore.jobs.demo_jobs` — tiny job functions for tests and benchmarks.

Nothing is re-exported here: import each name from its module. Importing this package imports nothing heavy.
"""
