"""``memtui phase1``: being built in this session."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("phase1", help="(in progress)")
    p.set_defaults(func=lambda args: print("memtui phase1: not built yet") or 1)
