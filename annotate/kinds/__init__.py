"""The task kinds, one folder each, built on the contract of :mod:`annotate.tasks`; the app imports them once it is ready (:func:`annotate.tasks.load_kinds`)."""
