"""Helpers the tests share across folders (each folder's own helpers stay beside it)."""
