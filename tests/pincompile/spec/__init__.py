"""Tests of the spec language: loader, schema, semantic checks, CLI and pre-commit hook."""
