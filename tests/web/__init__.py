"""Tests of the web layer: API, pages, and the browser."""
