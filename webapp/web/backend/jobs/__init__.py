"""Jobs: heavy work a page asks for that takes seconds, processes or memory: bounded per worker,
queued in arrival order, and kept in the store so that no worker or host does it twice.

`lensqueue` runs the client lenses (at most `Settings.lens_processes` processes at a time,
streams served first come, first served), `clientjobs` turns their results into a stream's
verdict and keeps them, `lensinstall` reads the log of a lens install `make run` started, and
`fixture` builds a stream's fixture.zip once and keeps it as an artefact; `minimise` runs a
minimise job in the background and keeps it in the store.
"""
