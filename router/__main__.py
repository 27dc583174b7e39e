from __future__ import annotations

from pebrel.router.app import main

main()
