"""The `streamviz` command line."""


def main() -> None:
    """Entry point of the console script."""
    raise SystemExit("not built yet")
