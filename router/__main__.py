from __future__ import annotations

from router.app import main

main()
