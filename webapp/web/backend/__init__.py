"""The web backend, in rooms: the service (`service`: stored streams, readings, trace views,
computed once and cached), a stream's bytes by line (`rawlines`) and the built-in examples as
streams (`example_source`) directly; `trace/` a trace view and its parts, `memory/` the cache
and the bytes in flight, `intake/` getting a stream in, `team/` owners, notes and retention,
`library/` what each stream holds, `jobs/` heavy work in the background, `capture/` the
captured streams' timing and live views and the proxy wing's recorder as the web runs it."""
