"""Tests of secret removal (webapp/core/redact/)."""
