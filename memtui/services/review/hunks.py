"""A run's unified diff as hunks a person can take or leave one by one.

Each hunk has a stable id (a hash of its file and its text, so ``review show`` and ``review approve --except`` agree
for as long as the diff does), its old and new line ranges, a content hash and the lines of both sides. Applying a
set of decisions to the baseline gives the exact bytes to commit: rejected hunks keep the baseline's lines, amended
hunks put the reviewer's text in place of the run's new lines, everything else takes the run's version.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass, field

from pydantic import BaseModel

_HEADER = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
NO_NEWLINE = "\\ No newline at end of file"


class HunkError(ValueError):
    """Decisions that cannot be applied (the baseline moved under the diff, an unknown hunk id...)."""


@dataclass
class Hunk:
    """One ``@@`` hunk (or, for a file without text hunks, the whole file change: ``whole_file``)."""

    file: str
    status: str  # A | M | D of its file
    header: str
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    text: str  # the hunk's lines as in the diff, header included
    old_lines: list[str] = field(default_factory=list)  # with their line endings
    new_lines: list[str] = field(default_factory=list)
    whole_file: bool = False

    @property
    def id(self) -> str:
        return hashlib.sha256(f"{self.file}\0{self.text}".encode("utf-8", "replace")).hexdigest()[:10]

    @property
    def content_hash(self) -> str:
        return hashlib.sha256(self.text.encode("utf-8", "replace")).hexdigest()

    @property
    def path(self) -> str:  # the diff widget's name for it
        return self.file

    @property
    def added(self) -> list[str]:
        """The lines this hunk adds (without their '+')."""
        return [line[1:] for line in self.text.split("\n")[1:] if line.startswith("+")]

    @property
    def removed(self) -> list[str]:
        return [line[1:] for line in self.text.split("\n")[1:] if line.startswith("-")]

    def new_text(self) -> str:
        """The hunk's new side as plain text (what ``e`` lets a reviewer amend)."""
        return "".join(self.new_lines)


@dataclass
class FileDiff:
    path: str
    status: str  # A | M | D
    hunks: list[Hunk] = field(default_factory=list)
    binary: bool = False


class HunkInfo(BaseModel):
    """A hunk at the CLI / JSON boundary."""

    id: str
    file: str
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    content_hash: str
    text: str
    evidence: list[dict[str, object]] = []
    trust: dict[str, object] = {}  # classes of the lines it adds and their flags (``trust.review``)

    @classmethod
    def of(
        cls, hunk: Hunk, evidence: list[dict[str, object]] | None = None, hidden: dict[str, int] | None = None
    ) -> HunkInfo:
        from memtui.domain.trust.review import hunk_trust

        return cls(
            id=hunk.id,
            file=hunk.file,
            old_start=hunk.old_start,
            old_count=hunk.old_count,
            new_start=hunk.new_start,
            new_count=hunk.new_count,
            content_hash=hunk.content_hash,
            text=hunk.text,
            evidence=evidence or [],
            trust=hunk_trust(hunk.text, hunk.new_start, hidden).as_json(),
        )


def _unquote(path: str) -> str:
    """git quotes unusual paths C-style; decode the common escapes."""
    if len(path) >= 2 and path[0] == '"' and path[-1] == '"':
        raw = path[1:-1].encode("latin-1", "backslashreplace").decode("unicode_escape")
        return raw.encode("latin-1", "replace").decode("utf-8", "replace")
    return path


def _strip_prefix(path: str) -> str:
    path = _unquote(path)
    return path[2:] if path[:2] in ("a/", "b/") else path


def split_lines(text: str) -> list[str]:
    """Lines with their ``\\n`` (only ``\\n`` ends a line, as for git; ``\\r`` stays part of the line)."""
    parts = text.split("\n")
    lines = [p + "\n" for p in parts[:-1]]
    if parts[-1]:
        lines.append(parts[-1])
    return lines


def parse_diff(diff: str) -> list[FileDiff]:
    """Split ``git diff`` output into files and hunks; a file with no text hunk gets one whole-file hunk."""
    files: list[FileDiff] = []
    current: FileDiff | None = None
    hunk: Hunk | None = None
    file_header: list[str] = []
    last_side = ""

    def finish_file() -> None:
        if current is not None and not current.hunks:
            text = "\n".join(file_header)
            current.hunks.append(Hunk(current.path, current.status, "", 0, 0, 0, 0, text, whole_file=True))

    for line in diff.split("\n"):
        if line.startswith("diff --git "):
            finish_file()
            parts = line[11:].split(" b/", 1)
            current = FileDiff(path=_strip_prefix(parts[1] if len(parts) == 2 else line[11:]), status="M")
            files.append(current)
            hunk, file_header = None, [line]
            continue
        if current is None:
            continue
        m = _HEADER.match(line) if line.startswith("@@") else None
        if m:
            hunk = Hunk(
                current.path,
                current.status,
                line,
                int(m.group(1)),
                int(m.group(2) if m.group(2) is not None else 1),
                int(m.group(3)),
                int(m.group(4) if m.group(4) is not None else 1),
                line,
            )
            current.hunks.append(hunk)
            continue
        if hunk is None:
            file_header.append(line)
            if line.startswith("new file mode") or line.startswith("--- /dev/null"):
                current.status = "A"
            elif line.startswith("deleted file mode") or line.startswith("+++ /dev/null"):
                current.status = "D"
            elif (line.startswith("+++ ") and not line.startswith("+++ /dev/null")) or (
                line.startswith("--- ") and current.status == "D"
            ):
                current.path = _strip_prefix(line[4:])
            elif line.startswith("Binary files"):
                current.binary = True
            continue
        if line == NO_NEWLINE or line.startswith("\\ "):
            hunk.text += "\n" + line
            target = {" ": (hunk.old_lines, hunk.new_lines), "-": (hunk.old_lines,), "+": (hunk.new_lines,)}
            for side in target.get(last_side, ()):
                if side and side[-1].endswith("\n"):
                    side[-1] = side[-1][:-1]
            continue
        tag = line[:1]
        if tag not in (" ", "-", "+"):
            if line == "":  # the split's last piece, or the blank line git never emits inside a hunk
                continue
            hunk = None  # anything else ends the hunk
            continue
        hunk.text += "\n" + line
        body = line[1:] + "\n"
        if tag in (" ", "-"):
            hunk.old_lines.append(body)
        if tag in (" ", "+"):
            hunk.new_lines.append(body)
        last_side = tag
    finish_file()
    for f in files:
        for h in f.hunks:
            h.status = f.status
    return files


def hunks_of(diff: str) -> list[Hunk]:
    return [h for f in parse_diff(diff) for h in f.hunks]


@dataclass(frozen=True)
class HunkDecisions:
    """A person's decisions on a run's hunks (ids or unique prefixes), one shape from the review screen or the CLI
    to the approve that applies them: hunks left out, hunks whose new text was amended, and hunks whose tool-only
    lines were let into what agents load."""

    except_ids: tuple[str, ...] = ()
    amendments: Mapping[str, str] = field(default_factory=dict)
    trusted_ids: tuple[str, ...] = ()

    @property
    def partial(self) -> bool:
        return bool(self.except_ids)


def resolve_ids(hunks: list[Hunk], wanted: list[str]) -> set[str]:
    """Full hunk ids for the given ids or unique prefixes; unknown or ambiguous ones are an error naming them."""
    ids = [h.id for h in hunks]
    out: set[str] = set()
    for raw in wanted:
        key = raw.strip().lower()
        if not key:
            continue
        matches = [i for i in ids if i.startswith(key)]
        if len(matches) != 1:
            known = ", ".join(ids) or "none"
            what = "matches no hunk" if not matches else "is ambiguous"
            raise HunkError(f"hunk id {raw!r} {what} of this run (hunks: {known})")
        out.add(matches[0])
    return out


def _amended_lines(text: str, template: list[str]) -> list[str]:
    lines = split_lines(text)
    if lines and not lines[-1].endswith("\n") and (not template or template[-1].endswith("\n")):
        lines[-1] += "\n"
    return lines


def apply_decisions(
    old: str | None,
    new: str | None,
    file_hunks: list[Hunk],
    rejected: set[str],
    amended: dict[str, str] | None = None,
) -> str | None:
    """The text to commit for one file: baseline ``old`` with each hunk taken, left out, or amended.

    ``None`` means the file does not exist (an added file whose hunks were all left out, or a deletion taken).
    """
    amended = amended or {}
    decided = [h for h in file_hunks if h.id in rejected or h.id in amended]
    if not decided:
        return new
    if any(h.whole_file for h in file_hunks):
        whole = file_hunks[0]
        if whole.id in rejected:
            return old
        raise HunkError(f"{whole.file}: a change without text lines cannot be amended")
    old_lines = split_lines(old or "")
    out: list[str] = []
    pos = 0
    for h in sorted(file_hunks, key=lambda x: x.old_start):
        start = h.old_start - 1 if h.old_count > 0 else h.old_start
        if start < pos or old_lines[start : start + h.old_count] != h.old_lines:
            raise HunkError(f"{h.file}: the baseline no longer matches hunk {h.id}; review the run again")
        out += old_lines[pos:start]
        if h.id in rejected:
            out += h.old_lines
        elif h.id in amended:
            out += _amended_lines(amended[h.id], h.new_lines)
        else:
            out += h.new_lines
        pos = start + h.old_count
    out += old_lines[pos:]
    taken_all = all(h.id not in rejected for h in file_hunks)
    if old is None and not taken_all and not any(h.id in amended for h in file_hunks):
        return None  # an added file left out
    if new is None and taken_all:
        return None  # a deletion taken
    return "".join(out)


def unified_diff(path: str, old: str | None, new: str | None, context: int = 3) -> str:
    """A git-style diff of one file made in Python (no git objects written), parseable by ``parse_diff``."""
    import difflib

    if old == new:
        return ""
    a, b = split_lines(old or ""), split_lines(new or "")
    head = [f"diff --git a/{path} b/{path}"]
    if old is None:
        head += ["new file mode 100644", "--- /dev/null", f"+++ b/{path}"]
    elif new is None:
        head += ["deleted file mode 100644", f"--- a/{path}", "+++ /dev/null"]
    else:
        head += [f"--- a/{path}", f"+++ b/{path}"]
    out = list(head)
    for line in list(difflib.unified_diff(a, b, n=context, lineterm=""))[2:]:
        if line.startswith("@@"):
            out.append(line.rstrip("\n"))
        elif line.endswith("\n"):
            out.append(line[:-1])
        else:
            out += [line, NO_NEWLINE]
    return "\n".join(out) + "\n"
