"""Today's object-per-step assembler, kept as the straightforward reference loop.

`assembler.py`, `toolcalls.py` and `trace.py` here are the assembler as it was before the trace
became columns (`webapp.core.columns`): every step, fragment and event a Python object, every reason
written by the rules table's own handlers (`webapp.core.rules.resolve`). The tests check that the
columnar trace and this loop agree on every step of the corpus and of generated streams.
"""
