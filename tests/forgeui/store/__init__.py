"""Tests of the ORM checkpoint store."""
