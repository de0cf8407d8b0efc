"""Line endings kept byte for byte through an editor that knows one newline.

A text editor widget splits a file on every line separator Python knows (``\\r\\n``, ``\\n``, ``\\r``, form feed,
U+2028, U+0085, ...) and joins it back with one newline, so a file holding any other separator would show as changed
on open and a save would rewrite lines nobody touched. ``rebuild`` maps the editor's lines back onto the file's: a line
the person did not touch keeps its own ending, a line edited in place keeps it too, and only new lines get the
file's usual newline.
"""

from __future__ import annotations

from difflib import SequenceMatcher

EDITOR_NEWLINES = ("\r\n", "\n", "\r")  # after a last one of these, an editor shows one more (empty) line


def split_lines(text: str) -> tuple[list[str], list[str]]:
    """(line bodies as an editor shows them, each line's original ending); a final empty line when the text ends
    with a newline, as editors show it."""
    bodies, endings = [], []
    for part in text.splitlines(keepends=True):
        body = part.splitlines()[0] if part.splitlines() else ""
        bodies.append(body)
        endings.append(part[len(body) :])
    if not text or text.endswith(EDITOR_NEWLINES):
        bodies.append("")
        endings.append("")
    return bodies, endings


def usual_newline(text: str) -> str:
    return "\r\n" if "\r\n" in text else "\n" if "\n" in text else "\r" if "\r" in text else "\n"


def rebuild(original: str, lines: list[str]) -> str:
    """The file text for the editor's ``lines``: untouched lines keep their original ending byte for byte."""
    bodies, endings = split_lines(original)
    if lines == bodies:
        return original
    newline = usual_newline(original)
    source: dict[int, int] = {}  # edited line -> the original line whose ending it keeps
    for tag, i1, i2, j1, j2 in SequenceMatcher(None, bodies, lines, autojunk=False).get_opcodes():
        if tag in ("equal", "replace"):  # a line edited in place keeps its ending too: the person changed its text
            source.update((j1 + k, i1 + k) for k in range(min(i2 - i1, j2 - j1)))
    last, out = len(lines) - 1, []
    for j, body in enumerate(lines):
        i = source.get(j)
        if j == last:  # the editor's last line has no ending of its own, unless it was the file's last line too
            out.append(body + (endings[i] if i == len(bodies) - 1 else ""))
        else:
            out.append(body + (endings[i] if i is not None and endings[i] else newline))
    return "".join(out)
