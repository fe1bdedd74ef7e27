"""The study protocol around the items: consent, the pre- and post-study questionnaires with their
screening rules, and the worker's controls (skip an item with a reason, go back and change an answer)."""
