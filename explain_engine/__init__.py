"""hatlab's engine: classifiers, explanation methods, metrics and data loaders.

A pure library: it never imports Django, and everything it returns is plain data
(lists, dicts, numpy arrays) that the web app stores.
"""

__all__ = ["text"]
