"""Results of the sentence_rating (paper 001) and token_marking (paper 003) studies.

* :mod:`~annotate.ratings.scoring` — pure scoring functions (majority, confidence, agreement, Figure 4
  curve, importance alignment).
* :mod:`~annotate.ratings.results` — gathering a study's answers, trust and model outputs; CSV tables.
"""
