"""Tests of the models package."""
