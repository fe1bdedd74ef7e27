"""Handing out items and taking answers: who the worker is, which item comes next, storing an answer once, the page's proof it was loaded, and what a worker is told when nothing is left."""
