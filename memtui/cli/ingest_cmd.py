"""``memtui ingest``: being built in this session."""

from __future__ import annotations

import argparse


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("ingest", help="(in progress)")
    p.set_defaults(func=lambda args: print("memtui ingest: not built yet") or 1)
