"""Home folders written as ``~``, so no user name reaches memory.

A path under a home folder names its owner: ``/Users/<name>``, ``/home/<name>``, ``C:\\Users\\<name>``,
``/mnt/c/Users/<name>``, and Claude Code's project folders, which encode the whole path with dashes
(``~/.claude/projects/-Users-marta-kowalczyk-src-api``). Every home path becomes ``~``; an encoded folder keeps
its shape without the name (``-Users-~-src-api``). Where a name ends in an encoded folder is known from the home
paths of the same text (and this machine's home), since a dash is also what a dot or a space in the name becomes;
an encoded name seen nowhere else loses its first part only.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

_NOT_A_PERSON = frozenset(["shared", "public", "default", "all users", "default user"])
_HOME = re.compile(
    r"(?P<root>(?<![\w.-])(?:/Users/|/home/|/mnt/[a-z]/Users/|[A-Za-z]:(?:\\{1,2}|/)Users(?:\\{1,2}|/)))"
    r"(?P<user>[A-Za-z0-9][A-Za-z0-9._-]*)(?=$|[\\/\s\"'`),;:\]])"
)
_ENCODED_ROOT = re.compile(r"(?<![A-Za-z0-9])-(?P<root>Users|home)-(?=[A-Za-z0-9])")


def _encoded(user: str) -> str:
    """A user name as Claude Code writes it in a project folder: every character but letters and digits a dash."""
    return re.sub(r"[^A-Za-z0-9]", "-", user)


def home_users(text: str) -> set[str]:
    """The user names of the home folders ``text`` names."""
    return {m.group("user") for m in _HOME.finditer(text) if m.group("user").lower() not in _NOT_A_PERSON}


def _machine_user() -> str:
    return Path.home().name


def tilde_homes(text: str, users: Iterable[str] = ()) -> str:
    """``text`` with every home folder written as ``~`` (see the module docstring); ``users``: names known besides
    the ones the text shows (a session's cwd)."""
    if not text:
        return text
    known = home_users(text) | {u for u in users if u} | {_machine_user()}
    out = _HOME.sub(lambda m: m.group(0) if m.group("user").lower() in _NOT_A_PERSON else "~", text)
    if "-Users-" not in out and "-home-" not in out:
        return out
    names = sorted({_encoded(u) for u in known if u and u.lower() not in _NOT_A_PERSON}, key=len, reverse=True)
    pieces: list[str] = []
    last = 0
    for m in _ENCODED_ROOT.finditer(out):
        if m.start() < last:
            continue
        rest = out[m.end() :]
        name = next((n for n in names if rest.startswith(n) and not rest[len(n) : len(n) + 1].isalnum()), None)
        if name is None:
            first = re.match(r"[A-Za-z0-9]+", rest)
            name = first.group(0) if first else ""
        pieces += [out[last : m.start()], f"-{m.group('root')}-~"]
        last = m.end() + len(name)
    return "".join([*pieces, out[last:]])
