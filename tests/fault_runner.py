"""Run the fsxlt CLI with a fault planted at one call: ``python -m tests.fault_runner``.

    python -m tests.fault_runner TARGET N ACTION -- fsxlt-args...

TARGET is a dotted callable (``os.replace``, ``torch.optim.Adam.step``);
on its N-th call (counting from 1) ACTION happens before the call runs:

- ``SIGKILL`` / ``SIGINT``: the process sends itself the signal (a kill -9
  or a Ctrl-C at exactly that point);
- ``wait:PATH``: it writes its pid to ``PATH.ready`` and waits until PATH
  exists (so a test can act while the command is mid-way, e.g. start a
  second sweep on the same runs directory).

Nothing in fsxlt knows about this: the fault is planted from outside, in
the process that runs the real command line.
"""

from __future__ import annotations

import importlib
import os
import signal
import sys
import time
from pathlib import Path


def _owner_and_name(target: str) -> tuple[object, str]:
    """The object holding ``target``'s last attribute, and that attribute's name."""
    parts = target.split(".")
    for split in range(len(parts) - 1, 0, -1):
        try:
            owner: object = importlib.import_module(".".join(parts[:split]))
        except ImportError:
            continue
        for name in parts[split:-1]:
            owner = getattr(owner, name)
        return owner, parts[-1]
    raise SystemExit(f"fault_runner: cannot resolve {target}")


def plant(target: str, nth: int, action: str) -> None:
    """Replace ``target`` by a wrapper that performs ``action`` on its ``nth`` call."""
    owner, name = _owner_and_name(target)
    original = getattr(owner, name)
    calls = {"n": 0}

    def faulty(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] == nth:
            if action.startswith("wait:"):
                gate = Path(action.removeprefix("wait:"))
                Path(f"{gate}.ready").write_text(str(os.getpid()))
                while not gate.exists():
                    time.sleep(0.05)
            else:
                os.kill(os.getpid(), getattr(signal, action))
                time.sleep(1)  # the signal lands here; SIGINT raises KeyboardInterrupt
        return original(*args, **kwargs)

    setattr(owner, name, faulty)


def main(argv: list[str]) -> int:
    split = argv.index("--")
    target, nth, action = argv[:split]
    plant(target, int(nth), action)
    from fsxlt.cli import run_app

    return run_app(argv[split + 1:])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
