"""The web backend: the service, its caches and memory gates, intake and background jobs."""
