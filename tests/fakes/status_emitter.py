"""A stand-in program that reports its own status with OSC 7501 and OSC 9;4 (tests only; #20).

Usage: ``python3 status_emitter.py [--gated] [--fifo PATH]``. With ``--gated`` it first asks
the terminal whether it reads the Program Status Protocol, as Claude Code and Pi do: it sends
the query (``ESC ] 7501 ; ? ESC \\``) and then primary device attributes (``ESC [ c``), which
every terminal answers; the protocol counts as supported only if the query's answer comes first.
It prints ``gate: yes`` or ``gate: no`` (and the bytes it got back, as ``reply: ...``); when
the gate says no, it reports nothing at all.

Then it reads commands, one per line, from PATH (a named pipe the test writes to: nothing is
typed into the pane, so no submitted line moves its state) or else stdin, and prints ``ok N``
after the Nth:

- ``7501 BODY``: writes ``ESC ] 7501 ; BODY ESC \\``
- ``bel BODY``: the same ended by BEL
- ``split BODY``: the same written in two parts, 50 ms apart (split across reads)
- ``94 ST [PR]``: writes ``ESC ] 9 ; 4 ; ST ; PR ESC \\``
- ``many N``: N working reports with progress 0..N-1 % 101, as fast as it can
- ``exit N``: exits with status N
"""

from __future__ import annotations

import sys
import termios
import time
import tty

import status_gate  # beside this file (a script's own directory is on sys.path)

ST = "\x1b\\"


def out(text: str) -> None:
    sys.stdout.write(text)
    sys.stdout.flush()


def gate() -> bool:
    """The query, then DA1; True if the query's answer came back before DA1's."""
    saved = termios.tcgetattr(0)
    tty.setraw(0)
    supported: bool
    got: bytes
    try:
        supported, got = status_gate.query()
    finally:
        termios.tcsetattr(0, termios.TCSANOW, saved)
    out(f"reply: {got!r}\ngate: {'yes' if supported else 'no'}\n")
    return supported


def main() -> int:
    args = sys.argv[1:]
    reporting = gate() if "--gated" in args else True
    source = open(args[args.index("--fifo") + 1]) if "--fifo" in args else sys.stdin  # noqa: SIM115
    for count, line in enumerate(source, 1):
        verb, _, rest = line.strip().partition(" ")
        if verb == "exit":
            return int(rest or "0")
        if reporting:
            if verb == "7501":
                out(f"\x1b]7501;{rest}{ST}")
            elif verb == "bel":
                out(f"\x1b]7501;{rest}\x07")
            elif verb == "split":
                half = len(rest) // 2
                out(f"\x1b]7501;{rest[:half]}")
                time.sleep(0.05)
                out(f"{rest[half:]}{ST}")
            elif verb == "94":
                out(f"\x1b]9;4;{';'.join(rest.split())}{ST}")
            elif verb == "many":
                out(
                    "".join(
                        f"\x1b]7501;state=working:progress={i % 101}{ST}" for i in range(int(rest))
                    )
                )
        out(f"ok {count}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
