"""The harness-free core: parsing, pure metrics, typed records and errors. Imports no harness and no protocol."""
