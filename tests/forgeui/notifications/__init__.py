"""Tests of webhooks and e-mail."""
