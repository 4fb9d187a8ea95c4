"""Approvals in Slack: a message per interrupt, answered under the inbox's rules.

A Slack message is a view over forge's durable interrupt, never the source of truth:
``delivery`` posts and updates it from the event rows the inbox reads, ``interactions``
verifies what Slack sends and hands each press to ``acting``, which answers through the
same service functions as the inbox, as the forge user ``linking`` found for the Slack
user. Off until ``FORGE_SLACK_BOT_TOKEN`` and ``FORGE_SLACK_SIGNING_SECRET`` are set.
"""
