"""Phase 1: every statement of an extraction gets the class its cited items give it, before it is stored.

The model's own markers are discarded and memtui's written: the class of the best cited item, lowered to ``tool``
when the statement's words come from tool output rather than from what it cites; a possible-injection flag when
imperative text comes from tool output. A statement that attributes itself to the user without the user's words
behind it (an upgrade) is dropped, as a false quote is. Hidden characters are removed and counted.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from memtui.adapters.rollouts.model import Origin, Transcript, TranscriptItem
from memtui.core.hidden import strip_hidden, with_payloads
from memtui.domain.trust import markers
from memtui.domain.trust.classes import Trust, cited_items, class_of, item_classes
from memtui.domain.trust.injection import Sources
from memtui.services.phase1.quotes import quote_is_faithful, user_quotes, user_words


def item_text(item: TranscriptItem) -> str:
    """The words of one memory item, whatever its shape: a call is its tool and arguments, other items their text."""
    if item.type == "local_shell_call":
        return json.dumps(item.arguments)
    if item.is_call:
        if "arguments" not in item.raw and "input" not in item.raw:
            return json.dumps({k: v for k, v in item.raw.items() if k not in ("type", "id")})
        args = item.raw.get("arguments", item.raw.get("input"))  # as the agent wrote them, not re-encoded
        return f"{item.name} {args if isinstance(args, str) else json.dumps(args)}"
    return item.text


_EXTERNAL = (Origin.TOOL_OUTPUT, Origin.AGENT, Origin.CONTEXT)


def sources_of(items: Transcript) -> tuple[Sources, list[Trust]]:
    classes = item_classes(items)
    external = [i.origin in _EXTERNAL for i in items]
    sources = Sources([with_payloads(item_text(i)) for i in items], classes, external, said=lambda: user_words(items))
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
    sources.index(markers.strip(line) for line in lines if line.strip())  # every line's words, in one pass
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
