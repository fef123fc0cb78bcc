"""Privacy statements: what a release claims, signed so that anyone can check it and only the home can sign it.

Each kind is built beside its recomputation:

* :mod:`~dpcore.statements.training` — a finished training run; :mod:`~dpcore.statements.sweep` — a privacy–utility
  sweep, one block per DP point; :mod:`~dpcore.statements.ledger` — a registered dataset's query history. (An
  advice's statement lives with the advisor, :mod:`dpcore.advisor.decision`; a synthetic release's with it,
  :mod:`dpcore.synth.statement`.) :mod:`~dpcore.statements.dpsgd` is the DP-SGD block a run and a sweep point share;
  :mod:`~dpcore.statements.common` what every kind says the same way; :mod:`~dpcore.statements.checks` the checker.
* :mod:`~dpcore.statements.signing` — Ed25519 signatures over canonical JSON (:mod:`~dpcore.statements.canonical`),
  with the home's key pair (:mod:`~dpcore.statements.keys`: the private key 0600 in the home, the public key
  published); :func:`~dpcore.statements.signing.issue` covers each file a statement ships with by SHA-256
  (:mod:`~dpcore.statements.files`). Old HMAC statements: :mod:`~dpcore.statements.legacy`.
* :mod:`~dpcore.statements.verify` — ``statement --verify``: parse a statement strictly, check its signature and
  files, and recompute every figure it claims, on any machine.
"""
