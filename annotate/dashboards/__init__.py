"""The dashboards of a study: its progress, labels and agreement, and its human maps against machine
attention and explanations (Sen et al. 2020 §4). The figures are the engine's; this package gathers the
data with a few indexed queries, shapes the results for the pages and caches them.

* :mod:`~annotate.dashboards.gather` — answers, maps and machine maps read from the database
* :mod:`~annotate.dashboards.study` — label distribution, agreement with intervals, human maps, annotators
* :mod:`~annotate.dashboards.similarity` — human vs machine, and one text's maps (the drill-down)
* :mod:`~annotate.dashboards.notes` — notes beside values that are easy to misread
* :mod:`~annotate.dashboards.charts` — chart and table shapes, and their CSV
* :mod:`~annotate.dashboards.presentation` — a dashboard's figures as an ordered list of figure builders
* :mod:`~annotate.dashboards.cache` — fingerprints of the data, the cache, the POS tags per document
* :mod:`~annotate.dashboards.compute` — computing a dashboard now and caching it
* :mod:`~annotate.dashboards.serve` — a request's dashboard: cached, computed inline, or by a background job
* :mod:`~annotate.dashboards.params` — who may see a dashboard, and validated request parameters
"""
