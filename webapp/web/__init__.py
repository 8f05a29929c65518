"""The web layer: pages, the JSON API, and the view models between them and the core."""
