"""Captured streams in the web backend: the proxy's recorder into the store (`recorder`), when
each step of a view arrived (`timing`: a capture's, a cassette's or a HAR entry's), and a live
capture's view, made again at the pace its size allows (`live`)."""
