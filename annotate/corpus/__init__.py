"""Texts and language resources: importing datasets, the site's opinion lexicon, and the synthetic reviews of the demo and tests."""
