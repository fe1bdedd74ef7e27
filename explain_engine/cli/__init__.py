"""Sub-commands of ``python -m explain_engine``: one module each, exposing ``register(subparsers)``.

``register`` adds a parser and sets ``func`` (called with the parsed arguments, returning an
exit status).
"""
