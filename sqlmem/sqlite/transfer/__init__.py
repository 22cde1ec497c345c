"""Export to and import from the JSON Lines format, one module per kind of
record."""
