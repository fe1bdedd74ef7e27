"""Gold questions and worker reliability (Pappas & Popescu-Belis 2016 §3, Lertvittayakumjorn & Toni 2019 §5).

* :mod:`~annotate.quality.policy` — a study's quality policy (gold rate, trust threshold, actions).
* :mod:`~annotate.quality.grading` — grading gold answers and keeping trust up to date (the share of
  golds passed with a Wilson interval, :func:`explain_engine.api.trust_table`).
* :mod:`~annotate.quality.exclusion` — excluding, blocking and unblocking workers.
* :mod:`~annotate.quality.gold_review` — flagging gold items that trusted workers miss; fix, retire.
* :mod:`~annotate.quality.gold_mixing` — mixing gold items into a worker's queue at the study's rate.
* :mod:`~annotate.quality.aggregation` — one label per item by majority vote and Dawid-Skene.
* :mod:`~annotate.quality.signals` — behaviour signals per response (time, focus, paste, speed).
* :mod:`~annotate.quality.risk` — a risk score per worker with its reasons (reading speed, no input,
  no page token, answer patterns, gold failures).
* :mod:`~annotate.handout.hooks` — what the submission path calls after storing an answer.
"""
