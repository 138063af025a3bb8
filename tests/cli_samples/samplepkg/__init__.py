"""A package for tests/test_cli.py's -m cases."""
