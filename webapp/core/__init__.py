"""The pure core: readers, assembler, rules, trace, diagnosis (no I/O, no web, no storage)."""
