"""The consolidation agent as an agent CLI (codex / claude), with memtui checking the tree rather than trusting it.

The CLI edits the memory root with its own tools, so memtui cannot confine each write as ``tools.py`` does. Instead:
snapshot the root (every file's bytes, and a digest of ``.git`` with a copy to restore from) before the run; after
it, compare. Any change outside the allowed files (``MEMORY.md``, ``memory_summary.md``, ``skills/``), to ``.git/``,
to the diff file, or any symlink the agent created, is refused: everything the agent did is undone and the run
fails. Allowed changes are redacted and go through the run's journal, so review, reject and crash recovery work
exactly as with the HTTP agent.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import string
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from memtui.context import Context
from memtui.phase2 import agent_rules
from memtui.phase2.tools import Journal, encode_content
from memtui.phase2.workspace import DIFF_FILENAME, write_if_changed
from memtui.redact import redact
from memtui.selfcalls import work_dir

ALLOWED_FILES = agent_rules.WRITABLE_FILES


class AgentRefused(RuntimeError):
    """The agent changed something it may not; all of its changes were undone."""


def allowed(rel: str) -> bool:
    """The HTTP agent's tools ask the same rule before each write (``agent_rules``)."""
    return agent_rules.write_refusal(rel) is None


@dataclass
class Tree:
    """Every entry of the memory root outside ``.git``: file bytes, symlink targets, and the ``.git`` digest."""

    files: dict[str, bytes] = field(default_factory=dict)
    links: dict[str, str] = field(default_factory=dict)
    dirs: set[str] = field(default_factory=set)
    git: str = ""


def _digest_dir(path: Path) -> str:
    h = hashlib.sha256()
    if not path.exists():
        return "absent"
    for dirpath, dirnames, filenames in os.walk(path):
        dirnames.sort()
        for name in sorted(filenames):
            full = Path(dirpath) / name
            h.update(str(full.relative_to(path)).encode() + b"\0")
            if full.is_symlink():
                h.update(b"link:" + os.readlink(full).encode())
            else:
                h.update(hashlib.sha256(full.read_bytes()).digest())
    return h.hexdigest()


def scan(root: Path) -> Tree:
    tree = Tree(git=_digest_dir(root / ".git"))
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        if base == root:
            dirnames[:] = [d for d in dirnames if d != ".git"]
        for d in list(dirnames):
            rel = (base / d).relative_to(root).as_posix()
            if (base / d).is_symlink():
                tree.links[rel] = os.readlink(base / d)
                dirnames.remove(d)
            else:
                tree.dirs.add(rel)
        for name in filenames:
            full = base / name
            rel = full.relative_to(root).as_posix()
            if full.is_symlink():
                tree.links[rel] = os.readlink(full)
            else:
                tree.files[rel] = full.read_bytes()
    return tree


def changed_paths(before: Tree, after: Tree) -> list[str]:
    names = set(before.files) | set(after.files) | set(before.links) | set(after.links)
    return sorted(
        n for n in names if before.files.get(n) != after.files.get(n) or before.links.get(n) != after.links.get(n)
    )


def restore_tree(root: Path, before: Tree, git_backup: Path | None) -> None:
    """Put the root back exactly as ``before`` (files, symlinks, folders, and ``.git`` from its copy)."""
    now = scan(root)
    for rel in set(now.links) - set(before.links):
        (root / rel).unlink()
    for rel in set(now.files) - set(before.files):
        (root / rel).unlink()
    for rel, data in before.files.items():
        path = root / rel
        if path.is_symlink():
            path.unlink()
        if now.files.get(rel) != data:
            write_if_changed(path, data)
    for rel, target in before.links.items():
        path = root / rel
        if not path.is_symlink() or os.readlink(path) != target:
            if path.exists() or path.is_symlink():
                path.unlink()
            path.symlink_to(target)
    for rel in sorted(set(now.dirs) - before.dirs, key=len, reverse=True):
        path = root / rel
        if path.is_dir() and not any(path.iterdir()):
            path.rmdir()
    if git_backup is not None and now.git != before.git:
        shutil.rmtree(root / ".git", ignore_errors=True)
        shutil.copytree(git_backup, root / ".git", symlinks=True)


def cli_prompt(prompt: str, agent: str) -> str:
    note = resources.files("memtui.prompts").joinpath("consolidation_cli.md").read_text(encoding="utf-8")
    return prompt + string.Template(note).safe_substitute(agent=agent, diff_file=DIFF_FILENAME)


def run_cli_agent(
    ctx: Context,
    journal: Journal,
    prompt: str,
    say: Callable[[str], None],
    run: Callable[[str], tuple[int, int, int]],
) -> tuple[int, int, int]:
    """Run the consolidation through the configured CLI (``run``: the agent run with its heartbeat, from
    ``consolidate``); returns (turns, prompt_tokens, completion_tokens).

    Raises ``AgentRefused`` (everything undone) or the backend's error (everything undone too).
    """
    s, root = ctx.settings, ctx.paths.memory_root
    agent = s.resolved_provider
    scratch = work_dir(ctx.paths) / f"phase2-{uuid.uuid4().hex[:12]}"
    scratch.mkdir(parents=True)
    git_backup = scratch / "git"
    try:
        if (root / ".git").is_dir():
            shutil.copytree(root / ".git", git_backup, symlinks=True)
        before = scan(root)
        # Journal the allowed files first, so a process killed mid-run is undone by the next run's recovery.
        for rel in sorted({*ALLOWED_FILES, *(r for r in before.files if allowed(r))}):
            journal.pre.setdefault(rel, encode_content(before.files.get(rel)))
        if journal.on_change:
            journal.on_change(journal)
        try:
            turns, ptok, ctok = run(cli_prompt(prompt, agent))
        except BaseException:
            restore_tree(root, before, git_backup if git_backup.exists() else None)
            raise
        after = scan(root)
        changed = changed_paths(before, after)
        refused = [r for r in changed if not allowed(r) or r in after.links]
        if after.git != before.git:
            refused.insert(0, ".git/")
        written = sum(len(after.files.get(r, b"")) for r in changed)
        if refused or written > s.agent_max_write_bytes:
            restore_tree(root, before, git_backup if git_backup.exists() else None)
            named = [f"{r} ({agent_rules.write_refusal(r) or 'a symlink'})" for r in refused[:8]]
            why = (
                f"changed what it may not touch: {', '.join(named)}{' …' if len(refused) > 8 else ''}"
                if refused
                else f"wrote {written} bytes, more than agent_max_write_bytes ({s.agent_max_write_bytes})"
            )
            raise AgentRefused(f"the {agent} agent {why}; all of its changes were undone")
        secrets = 0
        for rel in changed:
            journal.pre.setdefault(rel, encode_content(before.files.get(rel)))
            new = after.files.get(rel)
            if new is None:
                journal.post[rel] = None
                if journal.on_change:
                    journal.on_change(journal)
                continue
            red = redact(new.decode("utf-8", errors="replace"))
            secrets += sum(red.counts.values())
            journal.write(rel, red.text.encode("utf-8"))
        say(
            f"{agent} agent: {turns} turn(s), changed {', '.join(changed) or 'nothing'}"
            + (f"; {secrets} secret(s) redacted" if secrets else "")
        )
        return turns, ptok, ctok
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
