"""Tests of the assembler core: rules, trace, golden corpus, properties, the layers."""
