"""Budgets that protect the data: the data owner sets one cap per dataset, analysts sign in and spend quotas inside
it, visitors share one quota on the built-in synthetic data. One SQLite file, ``$DP_EXPLORER_HOME/ledger.sqlite``.

* :mod:`~dpcore.budgets.amounts` — ε in integer micro-ε, δ in integer atto-δ; charges round up, totals down.
* :mod:`~dpcore.budgets.store` — the file, its faults and the one ``BEGIN IMMEDIATE`` helper
  (:func:`~dpcore.budgets.store.transaction`, used through :func:`~dpcore.budgets.store.immediate`).
* :mod:`~dpcore.budgets.schema` — the tables and the migration of schema-1, -2 and -3 ledgers.
* :mod:`~dpcore.budgets.registry` — registered datasets (a copy kept on the server), their caps, near-duplicates.
* :mod:`~dpcore.budgets.identities` — checked identities: the admin token, analysts' keys, OpenID Connect.
* :mod:`~dpcore.budgets.quotas` — quotas inside a cap (grant, reset, close) and what each identity may read.
* :mod:`~dpcore.budgets.gate` — **the one gate**: every release of every kind (answers, DP training runs, sweeps,
  synthetic tables, planned releases) charged before it runs; tickets of jobs, refunds; rows that arrive as files.
* :mod:`~dpcore.budgets.charged` — queueing jobs whose release the gate charged: each ticket tied to its job.
* :mod:`~dpcore.budgets.spend` — a console answer through the gate.
* :mod:`~dpcore.budgets.visitors` — the built-in synthetic data and the visitors' shared quota.

Invariants (each enforced by one piece of SQL inside the one transaction helper):

1. **The dataset's cap is the patients' guarantee.** Every release from a registered dataset's rows, of any kind,
   by anyone, is charged against the dataset's ε and δ cap *and* the asker's quota, in the same transaction
   (:func:`dpcore.budgets.gate.charge`, the only function that spends a cap); when either (or the per-release ε
   cap) would be exceeded the release is refused before anything runs (exit 3), and the refusal is recorded. What
   a dataset has released is never reset; only a job that failed before anything left the server is refunded,
   with a history row saying why. A cap is changed only by an admin, with a reason, and never below what was
   released.
2. **One neighbour relation**: add or remove one record (unbounded DP); charges add up by basic composition, ε and δ
   separately, in integers (a charge rounds up, a total down: rounding never overspends).
3. **δ is budgeted like ε**: caps and quotas have δ totals below 1/n (default 1/(10·n)); one query's δ is below 1/n.
4. **Identities are checked, never typed.** An analyst is their name *and* key (a salted scrypt hash is stored) or
   their identity provider's verified e-mail or subject; admin actions need the admin token, compared with the hash
   the data owner stored (``python -m dpcore admin init``), never with the caller's environment; before that, admin
   actions are refused. A name without a key spends nothing and sees nothing of a registered dataset; visitors ask
   only of the built-in synthetic data, from one shared quota. Links never carry an identity.
5. **Data stays on the server**: registering copies the data into the home (0600); analysts choose a dataset by
   name. Data holding the same people as a registered dataset is refused unless the admin confirms; rows uploaded
   for a release that are (nearly) a registered dataset's are charged to it. Its exact number of rows is the
   admin's unless its owner declared it public; "no such dataset" and "not yours" are one refusal.
6. **Nothing stored is lost**: the noise is drawn inside the transaction and the answer stored with the charge (a
   crash before the commit spends and releases nothing; after it, the same question returns the stored answer for
   free); a ledger file is never re-created over an existing one (an empty or damaged file is refused); earlier
   ledgers are migrated in one transaction; faults are one message that says what to do.

Whoever can write the home folder can edit these files: mode 0600/0700 is the boundary. Stdlib only (with
dpcore.noise.charge), so that many processes can use it cheaply; the registry loads pandas when it reads data.
"""
