"""The dashboard's pages, a module per screen: inbox and interrupt, runs, audit.

Views stay short: queries are named QuerySet methods, changes go through
``forgeui.runs.services`` (the same layer as the API), and who may do what is
``forgeui.permissions.roles.allowed``. An htmx request gets just the fragment it swaps
(``"page.html#partial"``); a plain request gets the whole page.
"""
