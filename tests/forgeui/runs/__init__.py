"""Tests of the run services, tasks and registry."""
