"""Export with a scope: a project's AGENTS.md / CLAUDE.md gets that project's memory only.

``--scope project`` (the default for a file inside a git work tree, or with ``--project``) renders the project's
task groups and the user-level preferences, with no absolute path under the user's home; ``--scope global`` (the
default for each agent's user-level file: ``$CODEX_HOME/AGENTS.md``, ``$CLAUDE_CONFIG_DIR/CLAUDE.md``,
``~/.gemini/GEMINI.md``) renders the whole read-path block.
A target that git tracks is refused unless the person allows it: the memory would be committed and pushed.
"""

from __future__ import annotations

import os
from importlib import resources
from pathlib import Path
from typing import Literal

import git
from pydantic import BaseModel

from memtui.core.paths import Paths
from memtui.domain.scope import tilde
from memtui.services.agent_view import AgentView, published
from memtui.services.export import (
    DEFAULT_BYTES_PER_TOKEN,
    SUMMARY_TOKEN_LIMIT,
    render_prompt,
    truncate_middle,
)
from memtui.services.export.claude_files import is_auto_memory_index, project_of_auto_memory

Scope = Literal["project", "global"]
LOCAL_ALTERNATIVE = "CLAUDE.local.md"


class ExportTarget(BaseModel):
    """Where an export goes and what it may contain; ``why`` says how the scope was chosen."""

    path: Path
    scope: Scope
    project: Path | None = None
    why: str
    tracked: bool = False
    work_tree: Path | None = None
    auto_memory: bool = False  # Claude Code's auto memory index: the block goes to a topic file beside it
    problem: str | None = None  # why nothing may be written (the scope cannot be told)


class TrackedTargetError(RuntimeError):
    """The target file is tracked by git and the person did not pass ``--allow-tracked``."""


def user_level_files(paths: Paths) -> list[Path]:
    """The agents' user-level instruction files (each source's ``instructions``: ``$CODEX_HOME/AGENTS.md``,
    ``$CLAUDE_CONFIG_DIR/CLAUDE.md``, ``~/.gemini/GEMINI.md``...), which nobody commits: global scope is their
    default."""
    from memtui.adapters.sources.registry import sources

    return [s.instructions(paths).user for s in sources()]


def _existing_ancestor(path: Path) -> Path:
    path = path.absolute()
    while not path.exists() and path != path.parent:
        path = path.parent
    return path if path.is_dir() else path.parent


def git_status(path: Path) -> tuple[Path | None, bool]:
    """(work tree root, whether ``path`` is tracked) for a file that may not exist yet; (None, False) outside git."""
    try:
        repo = git.Repo(_existing_ancestor(path), search_parent_directories=True)
    except (git.InvalidGitRepositoryError, git.NoSuchPathError):
        return None, False
    try:
        if repo.bare or repo.working_tree_dir is None:
            return None, False
        tree = Path(repo.working_tree_dir)
        try:
            repo.git.ls_files("--error-unmatch", "--", str(path.absolute()))
        except git.GitCommandError:
            return tree, False
        return tree, True
    finally:
        repo.close()


def resolve_target(path: Path, paths: Paths, scope: Scope | None = None, project: Path | None = None) -> ExportTarget:
    """Decide the scope of an export to ``path`` as the issue's defaults say, and whether git tracks the file."""
    target = path.expanduser()
    work_tree, tracked = git_status(target)
    resolved = target.resolve()
    if project is not None:
        proj = project.expanduser().resolve()
        return ExportTarget(
            path=target,
            scope=scope or "project",
            project=proj,
            why=f"--project {project}",
            tracked=tracked,
            work_tree=work_tree,
            auto_memory=is_auto_memory_index(target, paths.claude_dir),
        )
    if is_auto_memory_index(target, paths.claude_dir):
        return _auto_memory_target(target, scope)
    if scope is None and any(resolved == f.expanduser().resolve() for f in user_level_files(paths)):
        return ExportTarget(path=target, scope="global", why="a user-level file", tracked=tracked, work_tree=work_tree)
    if scope == "global":
        return ExportTarget(path=target, scope="global", why="--scope global", tracked=tracked, work_tree=work_tree)
    if work_tree is not None:
        return ExportTarget(
            path=target,
            scope="project",
            project=work_tree.resolve(),
            why="the file is inside a git work tree",
            tracked=tracked,
            work_tree=work_tree,
        )
    return ExportTarget(
        path=target,
        scope="project",
        project=resolved.parent,
        why="the file's folder (not in a git work tree; use --project DIR or --scope global to choose)",
        tracked=tracked,
        work_tree=None,
    )


def _auto_memory_target(target: Path, scope: Scope | None) -> ExportTarget:
    """An auto memory index holds one project's memory: that project's, told from the sessions beside it."""
    if scope == "global":
        return ExportTarget(path=target, scope="global", why="--scope global", auto_memory=True)
    cwd = project_of_auto_memory(target)
    if cwd is None:
        return ExportTarget(
            path=target,
            scope="project",
            why="an auto memory index",
            auto_memory=True,
            problem=f"no session beside {target.parent} tells which project this auto memory belongs to; pass "
            "--project DIR (or --scope global)",
        )
    project = project_of_cwd(cwd) if cwd.is_dir() else cwd
    return ExportTarget(
        path=target, scope="project", project=project, why="the auto memory of this project", auto_memory=True
    )


def scope_label(target: ExportTarget) -> str:
    """``global`` or ``project ~/src/shop``: what an export's topic file records."""
    return "global" if target.scope == "global" else f"project {tilde(target.project or Path())}"


def tracked_message(target: ExportTarget, paths: Paths) -> str:
    local = target.path.parent / LOCAL_ALTERNATIVE
    user = " or ".join(tilde(f) for f in user_level_files(paths))
    return (
        f"{target.path} is tracked by git, so the memory would be committed and pushed with it. "
        f"Pass --allow-tracked to write it anyway, or export to {local} (Claude Code reads it; keep it untracked) "
        f"or to a user-level file ({user}) instead."
    )


def check_tracked(target: ExportTarget, paths: Paths, allow_tracked: bool) -> None:
    if target.tracked and not allow_tracked:
        raise TrackedTargetError(tracked_message(target, paths))


def project_template() -> str:
    return resources.files("memtui.prompts").joinpath("read_path_project.md").read_text(encoding="utf-8")


def render_project_prompt(
    memory_root: Path,
    project: Path,
    bytes_per_token: float = DEFAULT_BYTES_PER_TOKEN,
    *,
    include_untrusted: bool = False,
) -> str | None:
    """The read-path block for one project: its task groups and the user-level preferences, the memory root as
    ``~/...``; None when the memory holds nothing for this project. Untrusted statements stay out (``trust.export``)."""
    text = AgentView(memory_root, include_untrusted=include_untrusted).project_memory(project)
    if text is None:
        return None
    text = truncate_middle(text.strip(), SUMMARY_TOKEN_LIMIT, bytes_per_token)[0]
    link = published(memory_root.expanduser())  # agents open files here: the approved copy
    rendered = project_template().replace("{{ base_path }}", tilde(link.parent.resolve() / link.name))
    head, sep, tail = rendered.partition("{{ project_memory }}")
    return head + text + tail if sep else rendered + "\n" + text + "\n"


def render_for(
    target: ExportTarget, memory_root: Path, bytes_per_token: float, *, include_untrusted: bool = False
) -> str | None:
    if target.scope == "global" or target.project is None:
        return render_prompt(memory_root, bytes_per_token, include_untrusted=include_untrusted)
    return render_project_prompt(memory_root, target.project, bytes_per_token, include_untrusted=include_untrusted)


def project_of_cwd(cwd: str | os.PathLike[str] | None = None) -> Path:
    """The project a directory belongs to: its git work tree, else the directory itself."""
    here = Path(cwd or os.getcwd()).expanduser().resolve()
    tree, _ = git_status(here / ".memtui-probe")
    return (tree or here).resolve()
