"""Tests of roles, assignment and accounts."""
