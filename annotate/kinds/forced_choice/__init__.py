"""The forced-choice family: human-grounded evaluation of explanation methods (Lertvittayakumjorn &
Toni 2019 §3, Table 1), three task kinds on one page and one results page.

* :mod:`.reveal_model` (task 1), :mod:`.justify` (task 2), :mod:`.investigate` (task 3): each kind's
  config, which texts qualify and what a question shows;
* :mod:`.kind`: the family's kind class, what the three share (answers, scores, agreement categories);
* :mod:`.config`: the config schema the three share;
* :mod:`.generation`: questions drawn from the model runs, predictions and explanations in the app;
* :mod:`.results`: the scoring tables of a study (Table 4, Figure 3, Fleiss κ) and the family's results
  page (:class:`~.results.ForcedChoiceResults`, mounted for every kind at ``studies/<uid>/results/``);
* :mod:`.forms`, :mod:`.views`, :mod:`.api`, :mod:`.urls`: the researcher's create form
  (``forced-choice/new/``), the question preview and the results as JSON; :mod:`.demo`: demo studies
  built from tiny CNNs trained in-process.

Importing the package registers the three kinds.
"""

from annotate.kinds.forced_choice import investigate, justify, reveal_model

__all__ = ["investigate", "justify", "reveal_model"]
