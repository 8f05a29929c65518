"""An independent oracle of the assembly rules as the spec states them (`oracle.py`), and the
tests that hold the real assembler to it (`test_oracle.py`)."""
