"""The web view models: what each page and partial shows, built from the backend's trace views."""
