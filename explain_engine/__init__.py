"""hatlab's engine: classifiers, explanation methods, metrics and data loaders.

A pure library: it never imports Django, and everything it returns is plain data (lists, dicts, numpy
arrays) that the web app stores. The web app imports :mod:`explain_engine.api` only; researchers
without a server use the CLI, ``python -m explain_engine``.
"""
