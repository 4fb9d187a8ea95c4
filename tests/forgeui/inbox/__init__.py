"""Tests of the inbox websocket and rows."""
