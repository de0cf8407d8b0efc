"""``memtui export``: give the memory to agents (a prompt block, or a section of AGENTS.md / CLAUDE.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memtui.cli import COMMANDS
from memtui.cli.common import make_context
from memtui.domain.scope import tilde
from memtui.services.export import MarkerError, claude_files, loader_warnings, render_prompt
from memtui.services.export.cap import write_agents_md
from memtui.services.export.scope import (
    ExportTarget,
    TrackedTargetError,
    check_tracked,
    render_for,
    render_project_prompt,
    resolve_target,
    scope_label,
)


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("export", help=COMMANDS["export"])
    ex = p.add_subparsers(dest="export_command", metavar="WHAT", required=True)
    q = ex.add_parser("prompt", help="print the read-path instructions plus memory_summary.md (or one project's part)")
    q.add_argument("--project", type=Path, help="only this project's task groups and the user-level preferences")
    q.set_defaults(func=run_prompt)
    q = ex.add_parser("agents-md", help="write or refresh the memtui section of an AGENTS.md or CLAUDE.md")
    q.add_argument("path", type=Path, help="the AGENTS.md / CLAUDE.md to update (created if missing)")
    q.add_argument(
        "--scope",
        choices=["project", "global"],
        help="project: only the project's memory (default inside a git work tree or with --project); "
        "global: the whole block (default for ~/.codex/AGENTS.md and ~/.claude/CLAUDE.md)",
    )
    q.add_argument("--project", type=Path, help="the project whose memory to export (implies --scope project)")
    q.add_argument("--allow-tracked", action="store_true", help="write even though git tracks the file")
    q.add_argument(
        "--force",
        action="store_true",
        help="write even though Claude Code loads another file holding memtui's block with this one (the memory "
        "twice in one session)",
    )
    q.set_defaults(func=run_agents_md)
    q = ex.add_parser(
        "gemini-md",
        help="write or refresh the memtui section of Gemini CLI's context file (~/.gemini/GEMINI.md, or the "
        "name context.fileName in ~/.gemini/settings.json gives)",
    )
    q.add_argument(
        "path",
        type=Path,
        nargs="?",
        help="the context file to update (default: DIR/GEMINI.md with --project DIR, else ~/.gemini/GEMINI.md)",
    )
    q.add_argument(
        "--scope",
        choices=["project", "global"],
        help="project: only the project's memory (default inside a git work tree or with --project); "
        "global: the whole block (default for ~/.gemini/GEMINI.md)",
    )
    q.add_argument("--project", type=Path, help="the project whose memory to export (implies --scope project)")
    q.add_argument("--allow-tracked", action="store_true", help="write even though git tracks the file")
    q.set_defaults(func=run_gemini_md, force=False)


def _warn(root: Path, bytes_per_token: float) -> None:
    for warning in loader_warnings(root, bytes_per_token):
        print(f"memtui export: warning: {warning}", file=sys.stderr)


def run_prompt(args: argparse.Namespace) -> int:
    ctx = make_context()
    ctx.require_home()
    root, bpt = ctx.paths.memory_root, ctx.settings.bytes_per_token
    if args.project is not None:
        project = args.project.expanduser().resolve()
        block = render_project_prompt(root, project, bpt, include_untrusted=ctx.settings.export_tool_statements)
        if block is None:
            print(f"memtui export: the memory holds nothing for {tilde(project)}; nothing to export", file=sys.stderr)
            return 0
    else:
        block = render_prompt(root, bpt, include_untrusted=ctx.settings.export_tool_statements)
        if block is None:
            print(
                f"memtui export: no memory summary approved yet at {root / 'memory_summary.md'} (agents get the "
                "baseline commit only: approve the run awaiting review, or commit your edit); nothing to export",
                file=sys.stderr,
            )
            return 0
        _warn(root, bpt)
    sys.stdout.write(block if block.endswith("\n") else block + "\n")
    return 0


def target_problem(path: Path) -> str | None:
    """Why ``path`` cannot be the file to write (it is a folder), said before anything is read or written."""
    path = path.expanduser()
    if path.is_dir():
        return (
            f"{path} is a folder; give the file to write, e.g. {path / 'AGENTS.md'} (Codex) or "
            f"{path / 'CLAUDE.md'} (Claude Code)"
        )
    return None


def run_gemini_md(args: argparse.Namespace) -> int:
    """``agents-md`` with Gemini CLI's context file (the Gemini source's ``instructions``) as the default path."""
    if args.path is None:
        from memtui.adapters.sources.registry import source
        from memtui.core.paths import resolve_paths

        files = source("gemini").instructions(resolve_paths())
        args.path = args.project.expanduser() / files.project if args.project is not None else files.user
    return run_agents_md(args)


def run_agents_md(args: argparse.Namespace) -> int:
    if problem := target_problem(args.path):
        print(f"memtui export: {problem}", file=sys.stderr)
        return 2
    ctx = make_context()
    ctx.require_home()
    root, bpt = ctx.paths.memory_root, ctx.settings.bytes_per_token
    target = resolve_target(args.path, ctx.paths, args.scope, args.project)
    if target.problem:
        print(f"memtui export: {target.problem}; nothing was written", file=sys.stderr)
        return 2
    try:
        check_tracked(target, ctx.paths, args.allow_tracked)
    except TrackedTargetError as exc:
        print(f"memtui export: {exc}", file=sys.stderr)
        return 2
    if target.tracked:
        print(f"memtui export: warning: {target.path} is tracked by git (--allow-tracked)", file=sys.stderr)
    where = "everything" if target.scope == "global" else f"project {tilde(target.project or Path())}"
    print(f"memtui export: scope {target.scope} ({where}; {target.why})", file=sys.stderr)
    block = render_for(target, root, bpt, include_untrusted=ctx.settings.export_tool_statements)
    file = claude_files.topic_file(target.path) if target.auto_memory else target.path
    if block is None and not file.exists():
        print(
            f"memtui export: nothing to export for this scope, so {file} was not created{_hint(target, args)}",
            file=sys.stderr,
        )
        return 1
    if (
        block is None
        and target.auto_memory
        and (earlier := claude_files.recorded_scope(file))
        not in (
            None,
            scope_label(target),
        )
    ):
        print(
            f"memtui export: nothing to export for {scope_label(target)}; {file} holds an export with {earlier}, "
            "which is kept (export with that scope to refresh it)",
            file=sys.stderr,
        )
        return 1
    if block is None:
        print(
            "memtui export: nothing to export for this scope; an existing memtui section is emptied, nothing is added"
            + _hint(target, args),
            file=sys.stderr,
        )
    elif target.scope == "global":
        _warn(root, bpt)
    if block is not None and (twice := duplicate_problem(target, ctx.paths.claude_dir, args.force)) is not None:
        return twice
    from memtui.services.export.chain import measure_chain

    chain = measure_chain(target.path, ctx.paths.codex_home, target.work_tree)
    for message in chain.warnings if chain is not None and block is not None else []:
        print(f"memtui export: warning: {message}", file=sys.stderr)

    def warn(message: str) -> None:
        print(f"memtui export: warning: {message}", file=sys.stderr)

    try:
        if target.auto_memory:
            topic = None if block is None else claude_files.scoped_block(block, scope_label(target))
            outcome = write_agents_md(file, topic, warn=warn)
            pointer = None if block is None else claude_files.auto_memory_pointer()
            write_agents_md(target.path, pointer, warn=warn)
        else:
            outcome = write_agents_md(target.path, block, warn=warn, cap=chain.cap if chain is not None else None)
    except MarkerError as exc:
        print(f"memtui export: {target.path}: {exc}", file=sys.stderr)
        return 1
    created_local = outcome == "created" and target.path.name == claude_files.CLAUDE_LOCAL_MD
    if created_local and target.work_tree is not None:
        ignored = claude_files.ignore_local_file(target.path, target.work_tree)
        if ignored is not None:
            print(f"memtui export: {ignored}", file=sys.stderr)
    if target.auto_memory:
        print(f"{outcome} {file} (the auto memory index {args.path} points to it)")
    else:
        print(f"{outcome} {args.path}")
    return 0


def duplicate_problem(target: ExportTarget, claude_dir: Path, force: bool) -> int | None:
    """Refuse (exit 2) an export whose file Claude Code loads together with another holding memtui's block, unless
    ``force``: then warn. None when there is no such file."""
    others = claude_files.duplicates(target.path, claude_dir, cwd=Path.cwd(), project=target.project)
    if not others:
        return None
    listed = ", ".join(str(f) for f in others)
    said = (
        f"Claude Code loads {listed} together with {target.path}, and it already holds memtui's block: the memory "
        "would be in every session twice"
    )
    if force:
        print(f"memtui export: warning: {said} (--force)", file=sys.stderr)
        return None
    print(
        f"memtui export: {said}. Nothing was written: keep one of them (export there, or remove memtui's section "
        "from the other), or pass --force",
        file=sys.stderr,
    )
    return 2


def _hint(target: ExportTarget, args: argparse.Namespace) -> str:
    """What would export something when a scope memtui chose holds nothing (issue 33.7): the project default of a
    file outside any git work tree is that file's folder, which the approved memory rarely names."""
    if target.scope != "project" or args.scope is not None or args.project is not None:
        return ""
    return (
        f" (the approved memory holds nothing for project {tilde(target.project or Path())}; "
        "--scope global exports every project's memory, --project DIR one project's)"
    )
