"""Tests of the JSON API."""
