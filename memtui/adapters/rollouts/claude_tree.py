"""The Claude Code conversation that stands, and tool output Claude Code spilled beside the transcript.

A transcript is a tree: every line names its ``parentUuid``. Rewinding (or editing an earlier prompt) starts a new
branch from an earlier line, and the abandoned branch stays in the file; Claude Code rebuilds the conversation as
the chain from the newest leaf back to the root (third-party source notes: claude-code-log-format
``JSONL_LOGGING.md``, "transcript reconstruction"). A compaction boundary starts a new root whose
``logicalParentUuid`` names the line before it: followed, so what was said before a compaction still stands.

Only a branch that a person started (a real prompt whose parent is on the standing chain, or a second root beside
it) is taken as abandoned; a line off the chain for any other reason (progress, a tool result parented elsewhere, a
chain broken by a missing line) is kept, since dropping the person's words is worse than keeping a stray line.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memtui.adapters.rollouts.user_words import CLAUDE_INJECTED_FLAGS

_NODE_TYPES = frozenset({"user", "assistant", "attachment", "system"})
_LEAF_TYPES = frozenset({"user", "assistant", "attachment"})


def parent_of(obj: dict[str, Any]) -> str | None:
    """A line's parent: ``parentUuid``, or across a compaction boundary its ``logicalParentUuid``."""
    parent = obj.get("parentUuid")
    if not isinstance(parent, str) or not parent:
        parent = obj.get("logicalParentUuid")  # a compaction boundary: the conversation goes on from there
    return parent if isinstance(parent, str) and parent else None


def is_prompt_line(obj: dict[str, Any]) -> bool:
    """A line that can start a branch: a person's prompt (a user line with text, not a tool result or one Claude
    Code wrote) or a queued prompt."""
    if obj.get("type") == "attachment":
        attachment = obj.get("attachment")
        return isinstance(attachment, dict) and attachment.get("type") == "queued_command"
    if obj.get("type") != "user" or any(obj.get(flag) for flag in CLAUDE_INJECTED_FLAGS):
        return False
    message = obj.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    if isinstance(content, str):
        return bool(content.strip())
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "text" for b in content)


@dataclass
class Standing:
    """The standing chain of one transcript and the memo of which lines hang off it on an abandoned branch."""

    parents: dict[str, str | None] = field(default_factory=dict)
    prompts: set[str] = field(default_factory=set)  # uuids of prompt lines
    chain: set[str] = field(default_factory=set)
    root_is_prompt: bool = False
    sub_agent_file: bool = False
    _memo: dict[str, bool] = field(default_factory=dict)

    def abandoned(self, obj: dict[str, Any]) -> bool:
        """True when the line lies on a branch a person abandoned (rewound past or replaced by an edit)."""
        uid = obj.get("uuid")
        if not self.chain or not isinstance(uid, str) or uid in self.chain:
            return False
        path: list[str] = []
        verdict = False
        node: str | None = uid
        seen: set[str] = set()
        while node is not None and node not in seen:
            if node in self._memo:
                verdict = self._memo[node]
                break
            if node in self.chain:
                break
            seen.add(node)
            path.append(node)
            if node not in self.parents:
                break  # a parent missing from the file: not provably abandoned
            parent = self.parents[node]
            if node in self.prompts and (
                (parent is not None and parent in self.chain) or (parent is None and self.root_is_prompt)
            ):
                verdict = True  # a prompt that starts a branch beside the standing one
                break
            node = parent
        for n in path:
            self._memo[n] = verdict
        return verdict


def standing(lines: list[dict[str, Any]]) -> Standing:
    """The chain from the newest leaf back through ``parentUuid`` (and ``logicalParentUuid``) to the root."""
    tree = Standing()
    user_lines = [o for o in lines if o.get("type") in ("user", "assistant")]
    tree.sub_agent_file = bool(user_lines) and all(o.get("isSidechain") for o in user_lines)
    leaf: str | None = None
    for obj in lines:
        uid, kind = obj.get("uuid"), obj.get("type")
        if not isinstance(kind, str) or kind not in _NODE_TYPES or not isinstance(uid, str):
            continue
        tree.parents[uid] = parent_of(obj)
        if is_prompt_line(obj):
            tree.prompts.add(uid)
        if kind in _LEAF_TYPES and (tree.sub_agent_file or not obj.get("isSidechain")):
            leaf = uid
    node = leaf
    while node is not None and node not in tree.chain:
        tree.chain.add(node)
        root = node
        node = tree.parents.get(node)
        if node is None:
            tree.root_is_prompt = root in tree.prompts and tree.parents.get(root, "") is None
    return tree


# --- tool output spilled beside the transcript -------------------------------------------------------------------

SPILL_DIR = "tool-results"
MAX_SPILL_BYTES = 256 * 1024  # read at most this much of a spilled output (Phase 1 caps each tool output anyway)
_SAFE_NAME = re.compile(r"^[A-Za-z0-9_.-]{1,200}$")
_SPILL_PATH = re.compile(r"[^\s\"'<>`]*/" + SPILL_DIR + r"/([A-Za-z0-9_.-]{1,200}\.txt)")


class SpillReader:
    """Claude Code saves a tool output too large for the transcript to ``<session>/tool-results/<name>.txt`` and
    leaves a short notice naming that file in the tool result. The notice is replaced by the file's text, read only
    from this session's own ``tool-results`` folder (a name elsewhere, or with a path in it, is not followed)."""

    def __init__(self, path: Path):
        session = path.parent.parent if path.parent.name == "subagents" else path.parent / path.name.split(".")[0]
        self.folder = session / SPILL_DIR

    def follow(self, call_id: str, output: str) -> str:
        if SPILL_DIR not in output:
            return output
        names = [m.group(1) for m in _SPILL_PATH.finditer(output)]
        if call_id and _SAFE_NAME.match(call_id):
            names.append(f"{call_id}.txt")
        for name in names:
            if not _SAFE_NAME.match(name) or name.startswith("."):
                continue
            text = self._read(self.folder / name)
            if text is not None:
                return text
        return output

    def _read(self, file: Path) -> str | None:
        try:
            with file.open("rb") as handle:
                data = handle.read(MAX_SPILL_BYTES + 1)
        except OSError:
            return None
        text = data[:MAX_SPILL_BYTES].decode("utf-8", errors="replace")
        if len(data) > MAX_SPILL_BYTES:
            text += f"\n[memtui: spilled output cut at {MAX_SPILL_BYTES} bytes]"
        return text
