"""streamviz: see how a streamed chat-completions tool call is assembled, fragment by fragment."""

__version__ = "0.1.0"
