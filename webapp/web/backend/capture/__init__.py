"""Captured streams in the web backend: the proxy's recorder into the store (`recorder`), when
each step of a view arrived (`timing`: a capture's, a cassette's or a HAR entry's), a live
capture's view, made again at the pace its size allows (`live`), the path a request is
forwarded to (`target`), and a compressed body inflated as it arrives (`coding`)."""
