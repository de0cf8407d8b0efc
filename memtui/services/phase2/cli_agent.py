"""The consolidation agent as an agent CLI (codex / claude), with memtui checking the tree rather than trusting it.

The CLI edits with its own tools, so memtui cannot confine each write as ``tools.py`` does. Instead the CLI works on
a copy of the memory root (without ``.git``) in memtui's own work folder, and the memory root itself changes only
through the run's journal, exactly like the HTTP agent's writes: each file's pre-run content and the hash of what the
run wrote are recorded before memtui writes it. So reject, a failed run's undo and the recovery of a killed run put
back only files the run wrote and that still hold what it wrote; a file a person changed since is left alone.

After the CLI finishes, memtui compares the copy with its state before the run. Any change outside the allowed files
(``MEMORY.md``, ``memory_summary.md``, ``skills/``), to the diff file, anything under ``.git``, or any symlink the
agent created, is refused: the copy is discarded and the run fails, the memory root untouched. The memory root is
also checked (an agent may escape its folder): its ``.git`` is put back from a copy if it changed, and any other
change there fails the run and is named, never overwritten (it may be a person's).
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

from memtui.adapters.llm.backends.choose import resolved_provider
from memtui.adapters.memroot.files import DIFF_FILENAME
from memtui.adapters.redact import redact
from memtui.adapters.selfcalls import work_dir
from memtui.services.context import Context
from memtui.services.phase2 import agent_rules
from memtui.services.phase2.tools import Journal

ALLOWED_FILES = agent_rules.WRITABLE_FILES
SCRATCH_PREFIX = "phase2-"  # the agent's copy of the memory root, in memtui's work folder


class AgentRefused(RuntimeError):
    """The agent changed something it may not; all of its changes were undone."""


def allowed(rel: str) -> bool:
    """The HTTP agent's tools ask the same rule before each write (``agent_rules``)."""
    return agent_rules.write_refusal(rel) is None


def _binary(data: bytes | None) -> bool:
    return data is not None and agent_rules.content_refusal(data) is not None


def _refusal(rel: str, data: bytes | None, link: bool) -> str:
    why = agent_rules.write_refusal(rel) or (agent_rules.content_refusal(data) if data is not None else None)
    return why or ("a symlink" if link else "refused")


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


def scan(root: Path, *, with_git: bool = False) -> Tree:
    """``with_git``: list ``.git`` like any folder (in the agent's copy, where there is none to begin with)."""
    tree = Tree(git=_digest_dir(root / ".git"))
    for dirpath, dirnames, filenames in os.walk(root):
        base = Path(dirpath)
        if base == root and not with_git:
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


def _copy_root(root: Path, dest: Path) -> None:
    """The agent's working copy: the memory root's files and symlinks as they are, without ``.git``."""
    if root.is_dir():
        shutil.copytree(root, dest, symlinks=True, ignore=lambda d, names: [".git"] if Path(d) == root else [])
    else:
        dest.mkdir(parents=True)


def cli_prompt(prompt: str, agent: str) -> str:
    note = resources.files("memtui.prompts").joinpath("consolidation_cli.md").read_text(encoding="utf-8")
    return prompt + string.Template(note).safe_substitute(agent=agent, diff_file=DIFF_FILENAME)


def run_cli_agent(
    ctx: Context,
    journal: Journal,
    prompt_for: Callable[[Path], str],
    say: Callable[[str], None],
    run: Callable[[str, Path], tuple[int, int, int]],
) -> tuple[int, int, int]:
    """Run the consolidation through the configured CLI on a copy of the memory root, then bring the allowed
    changes into the root through ``journal``; returns (turns, prompt_tokens, completion_tokens).

    ``prompt_for(folder)`` renders the prompt for the folder the agent works in; ``run(prompt, folder)`` is the agent
    run with its heartbeat, from ``consolidate``. Raises ``AgentRefused`` or the backend's error; either way the
    memory root holds nothing of the run.
    """
    s, root = ctx.settings, ctx.paths.memory_root
    agent = resolved_provider(s)
    scratch = work_dir(ctx.paths) / f"{SCRATCH_PREFIX}{uuid.uuid4().hex[:12]}"
    scratch.mkdir(parents=True)
    git_backup, folder = scratch / "git", scratch / "memories"
    try:
        if (root / ".git").is_dir():
            shutil.copytree(root / ".git", git_backup, symlinks=True)
        _copy_root(root, folder)
        root_before, before = scan(root), scan(folder, with_git=True)
        try:
            turns, ptok, ctok = run(cli_prompt(prompt_for(folder), agent), folder)
        finally:
            root_after = scan(root)
            if root_after.git != root_before.git and git_backup.exists():
                shutil.rmtree(root / ".git", ignore_errors=True)
                shutil.copytree(git_backup, root / ".git", symlinks=True)
        if outside := changed_paths(root_before, root_after):
            raise AgentRefused(
                f"the memory root changed during the {agent} run ({', '.join(outside[:8])}); the run's changes were "
                "discarded and those files left as they are: look at them in `memtui review show`"
            )
        after = scan(folder, with_git=True)
        changed = changed_paths(before, after)
        refused = [r for r in changed if not allowed(r) or r in after.links or _binary(after.files.get(r))]
        if root_after.git != root_before.git:
            refused.insert(0, ".git/")
        written = sum(len(after.files.get(r, b"")) for r in changed)
        if refused or written > s.agent_max_write_bytes:
            named = [f"{r} ({_refusal(r, after.files.get(r), r in after.links)})" for r in refused[:8]]
            why = (
                f"changed what it may not touch: {', '.join(named)}{' …' if len(refused) > 8 else ''}"
                if refused
                else f"wrote {written} bytes, more than agent_max_write_bytes ({s.agent_max_write_bytes})"
            )
            raise AgentRefused(f"the {agent} agent {why}; all of its changes were undone")
        secrets = 0
        for rel in changed:  # through the journal: pre-run content and the post-run hash recorded before each write
            new = after.files.get(rel)
            if new is None:
                if (root / rel).is_file():
                    journal.delete(rel)
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
