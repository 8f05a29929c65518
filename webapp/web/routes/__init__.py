"""The web routes: the pages, the JSON API and the htmx partials."""
