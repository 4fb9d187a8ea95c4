"""Approval policies: rules, defined on the server only, that an interrupt's answer must meet.

``FORGE_POLICIES`` names each policy and what it covers (graph nodes, agents' requests);
``config`` reads and checks it, ``rules`` is the small declarative language of
``auto_approve``, ``votes`` says what an answer counts as, ``approvals`` counts who
approved, ``auto`` decides by rule and ``escalation`` reassigns what waited too long.
"""
