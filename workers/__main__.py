from __future__ import annotations

from workers.app import main

main()
