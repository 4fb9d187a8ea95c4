"""Tests of the site as deployed: settings, commands, processes."""
