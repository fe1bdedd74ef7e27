"""Human-grounded evaluation of explanation methods (paper 004): question generation from the model
runs, predictions and explanations stored in the app (:mod:`.generation`), and the scoring tables
of a finished study (:mod:`.results`)."""
