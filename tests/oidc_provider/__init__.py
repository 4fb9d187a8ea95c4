"""A tiny, real OpenID Connect provider for the single sign-on tests (django-oauth-toolkit).

Its own Django project (settings, urls, a login page), run in a process of its own on a
loopback port, signing ID tokens with an RSA key the test generates. Users' Django groups
are their ``groups`` claim.
"""
