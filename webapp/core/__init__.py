"""The pure core: readers, assembler, rules, trace, diagnosis, the contract (no I/O, no web, no
storage)."""
