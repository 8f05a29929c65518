"""Captured streams in the web backend: when each step of a view arrived (`timing`: a
capture's, a cassette's or a HAR entry's), a live capture's view, made again at the pace its
size allows (`live`), and the proxy wing's store recorder as the web runs it (`recording`)."""
