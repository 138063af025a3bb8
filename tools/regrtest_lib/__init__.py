"""The parts of tools/regrtest.py (its docstring says which module owns what)."""
