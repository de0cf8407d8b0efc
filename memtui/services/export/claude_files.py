"""Claude Code's memory files, as an export to one of them must see them.

Claude Code loads, at the start of a session, the user's ``$CLAUDE_CONFIG_DIR/CLAUDE.md``, every ``CLAUDE.md``,
``.claude/CLAUDE.md`` and ``CLAUDE.local.md`` from the working directory up to (not including) ``/``, and the
project's auto memory index ``$CLAUDE_CONFIG_DIR/projects/<project>/memory/MEMORY.md`` (its first 200 lines / 25 KB;
an index of one-line pointers to topic files beside it, which are read on demand). Source: the Claude Code memory
docs ("How Claude looks up memories", "Auto memory").

So memtui's block in two of them is the memory twice in one session (``duplicates``); a ``CLAUDE.local.md`` memtui
creates in a git work tree is kept out of git through ``.git/info/exclude`` (``ignore_local_file``); and an export
into the auto memory index keeps its shape: the block goes to a topic file beside it (``TOPIC_FILE``), the index
gets one pointer line (``auto_memory_pointer``), and the topic file records its scope so that an export with another
scope never empties it.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import orjson

from memtui.services.export import BEGIN_MARKER, END_MARKER

CLAUDE_MD = "CLAUDE.md"
CLAUDE_LOCAL_MD = "CLAUDE.local.md"
AUTO_MEMORY_INDEX = "MEMORY.md"
AUTO_MEMORY_DIR = "memory"
TOPIC_FILE = "memtui.md"  # the topic file memtui writes beside an auto memory index
SCOPE_LINE = "<!-- memtui:scope {} -->"
_SCOPE_RE = re.compile(r"<!-- memtui:scope (.+?) -->")
_SLUG_RE = re.compile(r"[^A-Za-z0-9]")


def project_slug(project: Path) -> str:
    """The folder name Claude Code gives a project under ``projects/``: every character not a letter or a digit
    becomes ``-`` (``/home/ana/src/shop`` -> ``-home-ana-src-shop``)."""
    return _SLUG_RE.sub("-", str(project))


def auto_memory_index(claude_dir: Path, project: Path) -> Path:
    return claude_dir / "projects" / project_slug(project) / AUTO_MEMORY_DIR / AUTO_MEMORY_INDEX


def is_auto_memory_index(path: Path, claude_dir: Path) -> bool:
    """``$CLAUDE_CONFIG_DIR/projects/<project>/memory/MEMORY.md``."""
    path = path.expanduser().absolute()
    return (
        path.name == AUTO_MEMORY_INDEX
        and path.parent.name == AUTO_MEMORY_DIR
        and path.parent.parent.parent.resolve() == (claude_dir / "projects").resolve()
    )


def project_of_auto_memory(index: Path) -> Path | None:
    """The project an auto memory folder belongs to: the ``cwd`` of a session transcript beside it whose folder
    name is that cwd's slug (the slug alone is lossy: ``-`` stands for ``/``, ``.``, ``_`` and ``-``)."""
    folder = index.expanduser().absolute().parent.parent
    for transcript in sorted(folder.glob("*.jsonl")):
        try:
            with transcript.open("rb") as fh:
                head = fh.read(256 * 1024)
        except OSError:
            continue
        for line in head.splitlines():
            try:
                cwd = orjson.loads(line).get("cwd")
            except (orjson.JSONDecodeError, AttributeError):
                continue
            if isinstance(cwd, str) and cwd and project_slug(Path(cwd)) == folder.name:
                return Path(cwd)
    return None


def _chain(folder: Path) -> list[Path]:
    """The project files Claude Code loads for a session started in ``folder``."""
    out: list[Path] = []
    for d in [folder, *folder.parents]:
        if d == d.parent:
            break  # up to, not including, /
        out += [d / CLAUDE_MD, d / ".claude" / CLAUDE_MD, d / CLAUDE_LOCAL_MD]
    return out


def loaded_with(target: Path, claude_dir: Path, *, cwd: Path, project: Path | None) -> list[Path]:
    """The memory files Claude Code loads in a session that loads ``target`` (``target`` itself left out).

    A project file: the user file, its folder's chain and the project's auto memory. The user file: what a session
    in ``cwd`` loads besides it. An auto memory index: the user file and its project's chain."""
    target = target.expanduser().absolute()
    user = claude_dir / CLAUDE_MD
    if is_auto_memory_index(target, claude_dir):
        files = [user, *(_chain(project) if project is not None else [])]
    else:
        if target.resolve() == user.resolve():
            folder = cwd
        elif target.parent.name == ".claude" and target.name == CLAUDE_MD:
            folder = target.parent.parent
        else:
            folder = target.parent
        root = project or folder
        files = [user, *_chain(folder), auto_memory_index(claude_dir, root)]
    seen: set[Path] = set()
    out: list[Path] = []
    for f in files:
        key = f.resolve()
        if key != target.resolve() and key not in seen:
            seen.add(key)
            out.append(f)
    return out


def holds_block(path: Path) -> bool:
    """True when the file holds memtui's marked block with something in it (an emptied section does not count)."""
    try:
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return False
    begin = text.find(BEGIN_MARKER)
    end = text.find(END_MARKER, begin + 1) if begin >= 0 else -1
    return begin >= 0 and end > begin and bool(text[begin + len(BEGIN_MARKER) : end].strip())


def duplicates(target: Path, claude_dir: Path, *, cwd: Path, project: Path | None) -> list[Path]:
    """The files Claude Code loads together with ``target`` that already hold memtui's block (an auto memory index
    when the topic file its pointer names holds one: the session reads it there)."""
    if target.name not in (CLAUDE_MD, CLAUDE_LOCAL_MD, AUTO_MEMORY_INDEX):
        return []
    found = []
    for f in loaded_with(target, claude_dir, cwd=cwd, project=project):
        if holds_block(topic_file(f) if is_auto_memory_index(f, claude_dir) else f):
            found.append(f)
    return found


# --- CLAUDE.local.md out of git -----------------------------------------------------------------------------------


def _git(work_tree: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(work_tree), *args], capture_output=True, text=True, check=False)


def ignore_local_file(path: Path, work_tree: Path) -> str | None:
    """Keep a ``CLAUDE.local.md`` memtui created out of git: append it to the repository's ``info/exclude`` unless
    git already ignores it. ``info/exclude`` (not ``.gitignore``): it is this clone's own list, so nothing the team
    shares is edited and no tracked file changes. Returns what was done, for the person, or None."""
    rel = path.absolute().relative_to(work_tree.absolute()).as_posix()
    if _git(work_tree, "check-ignore", "-q", "--", rel).returncode == 0:
        return None  # already ignored (.gitignore, a global excludes file, info/exclude)
    found = _git(work_tree, "rev-parse", "--git-path", "info/exclude")
    if found.returncode != 0 or not found.stdout.strip():
        return None
    exclude = Path(found.stdout.strip())
    exclude = exclude if exclude.is_absolute() else work_tree / exclude
    exclude.parent.mkdir(parents=True, exist_ok=True)
    try:
        before = exclude.read_text(encoding="utf-8")
    except FileNotFoundError:
        before = ""
    sep = "" if not before or before.endswith("\n") else "\n"
    with exclude.open("a", encoding="utf-8") as fh:
        fh.write(f"{sep}# memtui export: a personal memory file Claude Code reads, never to be committed\n/{rel}\n")
    return f"added /{rel} to {exclude} (this clone's own ignore list; .gitignore is left alone)"


# --- the auto memory index ----------------------------------------------------------------------------------------


def topic_file(index: Path) -> Path:
    return index.parent / TOPIC_FILE


def auto_memory_pointer() -> str:
    """The one line memtui puts in an auto memory index: a pointer to its topic file, as the index's lines are."""
    return (
        f"- [memtui memory]({TOPIC_FILE}) — the long-term memory the user approved in memtui: read it before "
        "starting work here"
    )


def scoped_block(block: str, scope: str) -> str:
    """The topic file's block with its scope first, so a later export knows what wrote it."""
    return SCOPE_LINE.format(scope) + "\n" + block


def recorded_scope(topic: Path) -> str | None:
    """The scope the last export wrote the topic file with, if it holds a block."""
    if not holds_block(topic):
        return None
    match = _SCOPE_RE.search(topic.read_text(encoding="utf-8", errors="replace"))
    return match.group(1) if match else None
