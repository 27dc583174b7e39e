from __future__ import annotations

from pebrel.collab.app import main

main()
