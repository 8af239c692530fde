"""One module per CLI command; ``pincompile.cli`` assembles them."""
