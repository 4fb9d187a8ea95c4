"""Approval requests from any agent: over HTTP (``forgeui.api.requests``) and MCP.

Each request is a run of the built-in graph in ``graph`` that pauses once; ``shapes``
checks what an agent sends and turns it into that run's input, ``service`` creates,
reads and decides requests, ``waiting`` lets long polls sleep without a thread each,
``callbacks`` posts the outcome to an agent's ``callback_url``.
"""
