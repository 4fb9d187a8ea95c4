"""Telling people outside the dashboard: webhooks and e-mail, fed from the event table."""
