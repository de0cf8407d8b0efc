"""Remove ``<oai-mem-citation>`` blocks from an agent's text, as Codex's stream parser does.

Tags match literally and do not nest: inside a block an open tag is plain body text and the first close tag
ends the block. A block still open at the end is closed automatically; a partial open tag left at the end
is ordinary visible text. Works chunk by chunk, so a tag may be split across chunks.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from memtui.domain.citation import CLOSE_TAG, OPEN_TAG


@dataclass
class StripChunk:
    visible: str = ""
    bodies: list[str] = field(default_factory=list)


def _partial_suffix(text: str, tag: str) -> int:
    """Length of the longest suffix of ``text`` that is a proper prefix of ``tag`` (to hold back)."""
    for n in range(min(len(tag) - 1, len(text)), 0, -1):
        if text.endswith(tag[:n]):
            return n
    return 0


class CitationStripper:
    """Streaming stripper: ``push`` chunks, then ``finish`` once; each call returns what became certain."""

    def __init__(self, open_tag: str = OPEN_TAG, close_tag: str = CLOSE_TAG) -> None:
        self.open_tag, self.close_tag = open_tag, close_tag
        self._buf = ""
        self._inside = False
        self._body: list[str] = []

    def push(self, chunk: str) -> StripChunk:
        out = StripChunk()
        visible: list[str] = []
        buf = self._buf + chunk
        while True:
            if not self._inside:
                i = buf.find(self.open_tag)
                if i < 0:
                    keep = _partial_suffix(buf, self.open_tag)
                    visible.append(buf[: len(buf) - keep])
                    buf = buf[len(buf) - keep :]
                    break
                visible.append(buf[:i])
                buf = buf[i + len(self.open_tag) :]
                self._inside = True
            else:
                i = buf.find(self.close_tag)
                if i < 0:
                    keep = _partial_suffix(buf, self.close_tag)
                    self._body.append(buf[: len(buf) - keep])
                    buf = buf[len(buf) - keep :]
                    break
                self._body.append(buf[:i])
                out.bodies.append("".join(self._body))
                self._body = []
                buf = buf[i + len(self.close_tag) :]
                self._inside = False
        self._buf = buf
        out.visible = "".join(visible)
        return out

    def finish(self) -> StripChunk:
        """Flush: a held-back partial open tag is visible text; an open block is closed with what it holds."""
        out = StripChunk()
        if self._inside:
            out.bodies.append("".join(self._body) + self._buf)
        else:
            out.visible = self._buf
        self._buf, self._inside, self._body = "", False, []
        return out


def strip_citations(text: str) -> tuple[str, list[str]]:
    """``(visible_text, bodies)`` of a complete text."""
    stripper = CitationStripper()
    first, last = stripper.push(text), stripper.finish()
    return first.visible + last.visible, first.bodies + last.bodies
