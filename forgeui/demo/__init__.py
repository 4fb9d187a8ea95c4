"""Demo data: the example graphs ``FORGE_GRAPHS`` names by default, and the demo accounts.

This ``__init__`` imports nothing, so the runtime's tests can run the graphs without Django.
"""
