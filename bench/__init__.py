"""Side-by-side benchmarks of Pebrel against tmux and the physical floor (`python -m bench`)."""

from __future__ import annotations
