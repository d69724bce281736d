"""Validation of values at the boundary, one module per kind of value.

Everything that reaches a command line (here or on a host), a path on a host, or the sizing
arithmetic is checked once, where it is read (inventory, CLI, model files), by the functions
here; later code trusts it. Each check raises InputError naming the field and where it came from.
"""
