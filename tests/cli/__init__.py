"""Tests of the `streamviz` command line."""
