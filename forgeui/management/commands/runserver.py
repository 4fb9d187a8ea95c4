"""``manage.py runserver``: daphne's development server, which serves the ASGI
application (websockets included) as ``make run`` does.

Here rather than through the ``daphne`` app in ``INSTALLED_APPS``: that app imports
daphne's server, and with it Twisted, into every process that sets Django up (workers,
commands, shells), which then start slower for nothing.
"""

from daphne.management.commands.runserver import Command

__all__ = ["Command"]
