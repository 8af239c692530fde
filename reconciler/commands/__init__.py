"""CLI commands that talk to clusters (registered by ``pincompile.cli``)."""
