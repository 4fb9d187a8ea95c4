"""Who may do what, and which team owns what: the rules every layer asks, models included.

``roles``: the role table and the teams in which a person holds each role; ``teams``:
``FORGE_TEAMS``, the teams' graphs and agents. Neither reads a model.
"""
