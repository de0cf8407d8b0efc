"""``memtui cite``: parse, check and record the memory citations in an agent's answer."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from memtui.cli import COMMANDS
from memtui.cli.common import make_context, print_json
from memtui.services.citations.check import CheckReport, check_citation
from memtui.services.citations.parse import ParseResult, parse_citations
from memtui.services.citations.record import record_answer_citation


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("cite", help=COMMANDS["cite"])
    cite = p.add_subparsers(dest="cite_command", metavar="ACTION", required=True)
    for name, func, help_ in [
        ("parse", run_parse, "print the parsed citation as JSON"),
        ("check", run_check, "check every cited range against the memory root (exit 1 if any is invalid)"),
        ("record", run_record, "check, then count the citation as usage of the cited threads' memories"),
    ]:
        q = cite.add_parser(name, help=help_)
        q.add_argument("file", nargs="?", default="-", help="the answer text (default: - for stdin)")
        # parse always prints JSON; it accepts --json like the others, as the README documents for all three
        q.add_argument("--json", action="store_true", help="one JSON object instead of the table")
        if name != "parse":
            q.add_argument("--root", type=Path, help="memory root to resolve paths against (default: the home's)")
        q.set_defaults(func=func)


def _read(source: str) -> str:
    if source == "-":
        return sys.stdin.read()
    return Path(source).read_bytes().decode("utf-8", errors="replace")


def _parse_input(args: argparse.Namespace) -> ParseResult | None:
    try:
        text = _read(args.file)
    except OSError as exc:
        print(f"memtui cite: cannot read {args.file}: {exc.strerror or exc}", file=sys.stderr)
        return None
    return parse_citations(text)


def run_parse(args: argparse.Namespace) -> int:
    result = _parse_input(args)
    if result is None:
        return 2
    print_json(result.to_json())
    return 0 if result.citation else 1


def _print_report(report: CheckReport, result: ParseResult) -> None:
    from memtui.domain.labels import CITATION_STATUS, label

    rows = [
        (label(e.status, CITATION_STATUS), f"{e.entry.line_start}-{e.entry.line_end}", e.entry.path, e.entry.note)
        for e in report.entries
    ]
    widths = [max([len(h), *(len(r[i]) for r in rows)]) for i, h in enumerate(("STATUS", "LINES", "PATH"))]
    print(f"{'STATUS':<{widths[0]}}  {'LINES':<{widths[1]}}  {'PATH':<{widths[2]}}  NOTE")
    for row in rows:
        print(f"{row[0]:<{widths[0]}}  {row[1]:<{widths[1]}}  {row[2]:<{widths[2]}}  {row[3]}")
    for e in report.invalid_entries:
        print(f"  {e.entry.path}:{e.entry.line_start}-{e.entry.line_end}: {e.detail}")
    if report.ids:
        print("rollout ids:")
        for i in report.ids:
            what = {"ok": "indexed", "unknown": "not an indexed thread", "not_uuid": "not a UUID, not counted"}[
                i.status
            ]
            memory = ", has a stage-1 memory" if i.has_memory else ""
            print(f"  {i.rollout_id}  {what}{memory}")
    if result.dropped_lines:
        n = result.dropped_lines
        print(f"dropped {n} malformed entry {'line' if n == 1 else 'lines'}")


def run_check(args: argparse.Namespace) -> int:
    result = _parse_input(args)
    if result is None:
        return 2
    if result.citation is None:
        print("memtui cite: no citation found", file=sys.stderr)
        if args.json:
            print_json({"ok": False, "citation": None, "dropped_lines": result.dropped_lines})
        return 1
    ctx = make_context()
    report = check_citation(args.root or ctx.paths.memory_root, result.citation, ctx.conn)
    if args.json:
        print_json({**report.to_json(), "dropped_lines": result.dropped_lines})
    else:
        _print_report(report, result)
    return 0 if report.ok else 1


def run_record(args: argparse.Namespace) -> int:
    result = _parse_input(args)
    if result is None:
        return 2
    if result.citation is None:
        print("memtui cite: no citation found, nothing recorded", file=sys.stderr)
        return 1
    ctx = make_context()
    root = args.root or ctx.paths.memory_root
    outcome, report = record_answer_citation(ctx.conn, root, result.citation)
    key = outcome.key
    counted = [c.model_dump() for c in outcome.counted]
    not_counted = outcome.not_counted
    if args.json:
        print_json(
            {
                "key": key,
                "counted": counted,
                "not_counted": not_counted,
                "check": report.to_json(),
                "dropped_lines": result.dropped_lines,
            }
        )
        return 0
    _print_report(report, result)
    print(f"recorded {key}")
    for c in counted:
        print(f"counted   {c['thread_id']}  usage_count {c['usage_count']}")
    for n in not_counted:
        print(f"skipped   {n['id']}  ({'not a UUID' if n['status'] == 'not_uuid' else 'no stage-1 memory'})")
    if not counted:
        print("no usage counted: no cited rollout id has a stage-1 memory")
    return 0
