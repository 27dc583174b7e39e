"""pyzmq constants as plain ints, for the actor sockets' hot paths.

pyzmq's constants are enum members: every ``flags=zmq.NOBLOCK`` or ``events & zmq.POLLIN`` runs
an enum operation (a few microseconds per request over the router, adapter and workers).
"""

from __future__ import annotations

import zmq

EVENTS = int(zmq.EVENTS)
POLLIN = int(zmq.POLLIN)
NOBLOCK = int(zmq.NOBLOCK)
