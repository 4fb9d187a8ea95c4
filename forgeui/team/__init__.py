"""Who people are and what they may do: roles, assignment, accounts, login lockouts."""
