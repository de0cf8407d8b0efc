"""Phase 1: every statement of an extraction gets the class its cited items give it, before it is stored.

The model's own markers are discarded and memtui's written: the class of the best cited item, lowered to ``tool``
when the statement's words come from tool output rather than from what it cites; a possible-injection flag when
imperative text comes from tool output. A statement that attributes itself to the user without the user's words
behind it (an upgrade) is dropped, as a false quote is. Hidden characters are removed and counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from memtui.phase1 import render
from memtui.phase1.quotes import quote_is_faithful, user_quotes, user_words
from memtui.trust import markers
from memtui.trust.classes import Trust, cited_items, class_of, item_classes, item_origin
from memtui.trust.hidden import strip_hidden, with_payloads
from memtui.trust.injection import Sources


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(
            _text(c.get("text") or c.get("content") or "") if isinstance(c, dict) else str(c) for c in content
        )
    if isinstance(content, dict):
        return _text(content.get("content") or content.get("output") or json.dumps(content))
    return "" if content is None else str(content)


def item_text(item: dict[str, Any]) -> str:
    """The words of one memory item, whatever its shape (message, call, output, agent message)."""
    kind = item.get("type")
    if kind in ("message", "agent_message"):
        return _text(item.get("content"))
    if kind == "local_shell_call":
        return json.dumps((item.get("action") or {}).get("command"))
    if "arguments" in item or "input" in item:
        args = item.get("arguments", item.get("input"))
        return f"{item.get('name') or ''} {args if isinstance(args, str) else json.dumps(args)}"
    if "output" in item:
        return _text(item.get("output"))
    return json.dumps({k: v for k, v in item.items() if k not in ("type", "id")})


_EXTERNAL = (render.ORIGIN_TOOL_OUTPUT, render.ORIGIN_AGENT, render.ORIGIN_CONTEXT)


def sources_of(items: list[dict[str, Any]]) -> tuple[Sources, list[Trust]]:
    classes = item_classes(items)
    external = [item_origin(i) in _EXTERNAL for i in items]
    sources = Sources([with_payloads(item_text(i)) for i in items], classes, external)
    sources.said = user_words(items)
    return sources, classes


@dataclass
class Annotated:
    text: str
    hidden_removed: int = 0
    dropped: list[str] = field(default_factory=list)  # statements claiming the user's authority without it
    flagged: int = 0


def derive(line: str, sources: Sources, classes: list[Trust]) -> markers.Marker:
    """The marker a statement line earns from the rollout's items (any marker already on it ignored)."""
    body = markers.strip(line)
    trust = class_of(cited_items(body), classes)
    quotes = user_quotes(body)
    if quotes and all(quote_is_faithful(q, sources.said) for q in quotes):
        trust = Trust.USER  # it quotes words the user typed: that is the user's evidence, cited or not
    if trust in (Trust.USER, Trust.AGENT) and sources.from_tool(body) is not None:
        trust = Trust.TOOL
    flag = sources.flag(body)
    return markers.Marker(trust, flag.kind if flag else None, flag.item if flag else None)


def annotate(text: str, sources: Sources, classes: list[Trust]) -> Annotated:
    """``text`` (a raw memory or rollout summary) with a derived marker on every statement."""
    if not text:
        return Annotated(text)
    clean = strip_hidden(text)
    out = Annotated(clean.text, hidden_removed=clean.removed)
    lines = clean.text.split("\n")
    drop: set[int] = set()
    statements = markers.statement_lines(clean.text)
    for i in sorted(set(range(len(lines))) - set(statements)):
        # Headings, labels and metadata are not statements, but imperative text from tool output there is flagged too.
        if lines[i].strip() and (flag := sources.flag(markers.strip(lines[i]))) is not None:
            lines[i] = markers.set_marker(lines[i], markers.Marker(Trust.TOOL, flag.kind, flag.item))
            out.flagged += 1
    for i in statements:
        marker = derive(lines[i], sources, classes)
        if marker.trust != Trust.USER and markers.presents_as_user(markers.strip(lines[i])):
            out.dropped.append(lines[i])
            drop.add(i)
            continue
        out.flagged += marker.flag is not None
        lines[i] = markers.set_marker(lines[i], marker)
    out.text = "\n".join(line for i, line in enumerate(lines) if i not in drop)
    return out
