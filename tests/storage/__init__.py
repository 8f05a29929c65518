"""Tests of the store (webapp/storage/)."""
