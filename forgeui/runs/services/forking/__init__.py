"""Everything about forks: ``work`` makes one (with the changes ``edits`` checks),
``links`` reads which thread is a fork of which, ``wording`` says what a fork's first
checkpoint means."""
