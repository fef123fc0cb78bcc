"""Privacy–utility sweeps: train one model per (ε, seed) plus the non-private baseline, attack each one.

A sweep is a group of background jobs (:mod:`dpcore.jobs.store`), one per point, each running
:func:`~dpcore.sweep.point.run_point`: train with :func:`dpcore.training.loop.train`, run the
membership-inference attacks of :mod:`dpcore.attacks.mia` on members (training rows) and as many held-out
non-members, and — for DP points — the empirical ε audit of :mod:`dpcore.attacks.audit`. The sweep itself is a
row of the same store — a group whose members are its points (:func:`dpcore.jobs.store.submit_group`): its name,
owner, config and, once finished, the assembled points, so a finished sweep is reopened and compared from there.

The default demo (``python -m dpcore sweep``, the page's Start button) tells the true story on the full digits
training set (1,438 images): an MLP with 256 hidden units, 20 epochs, batch 256, non-private test accuracy about
0.96; DP-SGD keeps a median of about 0.90 at ε = 1 and 0.95 at ε = 8 (3 seeds per ε; bench/sweep.py prints the
figures and the wall time, about a minute on 2 busy cores).

Risk where it lives: ordinary records leak little from a model that generalises, so the audit plants
:data:`~dpcore.sweep.config.DEFAULT_CANARIES` *canaries* — records with public random inputs and random labels
(:mod:`dpcore.training.canaries`), the kind of unusual record a model memorises — each included in training with probability ½ (drawn per run from a secret
source). The model's confidence in each canary's label is its score; the scores feed the one-run audit of
Steinke, Nasr & Jagielski (2023), whose 95% lower bound on ε holds for any (ε, δ)-DP training. The non-private
model is caught (it memorises the canaries it saw); under DP the bound stays below the claimed ε. The
loss/threshold/LiRA attacks still run on ordinary records (members = training rows, non-members = test rows).

A control for the training-set size (:data:`~dpcore.sweep.config.DEFAULT_SIZE_FRACTIONS` of the rows, at ε =
``size_epsilon``, with their own baselines) shows that the same ε costs less accuracy with more data.

* :mod:`~dpcore.sweep.config` — :class:`~dpcore.sweep.config.SweepConfig`, its limits, attack names.
* :mod:`~dpcore.sweep.point` — one point (job target ``"sweep.point"``): canaries, shadows, train, attack, audit.
* :mod:`~dpcore.sweep.runs` — start / state / cancel / list / load / save, executors, inline and parallel runs.
* :mod:`~dpcore.sweep.summary` — per-ε rows, the reading, violations, the title, the CLI JSON.
* :mod:`~dpcore.sweep.timing` — how long a sweep or a DP run takes here, from the job store's measured times.

Nothing is re-exported here: import each name from its module.
"""
