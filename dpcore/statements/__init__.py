"""Privacy statements: what a release claims, signed so that anyone can check it.

* :mod:`~dpcore.statements.build` — the statement of a training run, a sweep, a sweep point or a dataset's query
  history: the claim (ε, δ, neighbour relation, what is public), its recomputation inputs and its diagnostics.
* :mod:`~dpcore.statements.signing` — signing a statement and checking its signature.
* :mod:`~dpcore.statements.verify` — ``statement --verify``: parse a statement file strictly, check its signature
  and recompute every figure it claims.
"""
