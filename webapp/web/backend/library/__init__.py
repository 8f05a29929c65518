"""The library of streams: what each holds (`holdings`), kept for its search and titles when it
is stored (`indexing`)."""
