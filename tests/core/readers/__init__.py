"""Tests of the input readers."""
