"""The parts of tools/dynamo_tests.py (see its docstring)."""
