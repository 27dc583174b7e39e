"""The collab service: groups, sessions, tasks, messages and the event journal (FEATURES I1-I4).

Installed as ``pebrel.collab``; see docs/collab.md.
"""
