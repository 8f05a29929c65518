"""The recording proxy, a wing of its own: `/proxy/NAME/...` forwarded to an upstream and each
stream recorded as it arrives, with when each piece came. `streamviz serve` mounts it in front
of the web app, recording into the store; `streamviz record` serves it alone, recording into
files. It imports nothing of the web (`tests/core/test_layers.py`).

`forward` (the exchange: forwarding, batching, the bounds), `target` (the path forwarded),
`coding` (a compressed body inflated for what is kept), `store` and `files` (the recorders),
`guard` (the Host and cross-site checks), `mount` (the ASGI middleware an app mounts) and
`app` (the proxy alone, as `record` serves it).
"""
