"""Choose ε from risk: the ε advisor, one idea per module.

``targets`` the two sides as typed input (RiskLimit, UtilityTarget) and their checks; ``risk`` the closed-form risk
maths (worst-case trade-off facts of the Gaussian and of any pure ε-DP mechanism, the privacy-loss tail); ``advice``
the parts every advice shares (the question, the loss-tail entry, the ε range); ``dpsgd``
DP-SGD from the privacy-loss distribution (its risk, loss tail, the noise-multiplier solver, a sweep's accuracy
curve); ``solve`` :func:`~dpcore.advisor.solve.advise`, which solves both sides for a mechanism; ``links`` where the
advice is applied (noise page, query console, training page), each link's risk recomputed at its own setting;
``decision`` the advice as a decision record (a signed statement and its words). Import the modules.
"""
