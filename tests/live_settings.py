"""What the live test servers run (``tests.e2e.conftest.serve``): ``make run``'s settings,
``forgeui.settings`` read from the same environment, with a fast password hash.

Each login through the form hashes a password, a wrong or unknown one included; the real
hasher costs a large share of a browser test's CPU and proves nothing the tests check.
"""

from forgeui.settings import *  # noqa: F403

PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
