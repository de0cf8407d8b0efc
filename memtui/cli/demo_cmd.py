"""``memtui demo``: being built in this session."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("demo", help="(in progress)")
    p.set_defaults(func=lambda args: print("memtui demo: not built yet") or 1)
