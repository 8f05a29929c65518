"""streamviz: see how a streamed chat-completions tool call is assembled, fragment by fragment."""

from webapp.compiled import choose

__version__ = "0.1.0"

choose()  # the core's compiled modules, or their sources (see webapp/compiled.py)
