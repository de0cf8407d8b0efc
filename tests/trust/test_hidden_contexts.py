"""Issue 32.7: hidden characters, exactly. Joiners and selectors that are writing (Persian, emoji, Indic
conjuncts, variation sequences, subdivision flags) are kept and not flagged; the same characters where they hide
text are removed; and nothing is stripped from, or re-marked on, a line a person did not edit."""

from __future__ import annotations

import pytest

from memtui.adapters.memroot.edit import load_file, save_file
from memtui.core.hidden import has_hidden, reveal, strip_hidden
from memtui.domain.trust import markers
from memtui.services.phase2.enforce import enforce_text

ENGLAND = "\U0001f3f4" + "".join(chr(0xE0000 + ord(c)) for c in "gbeng") + "\U000e007f"

WRITING = {
    "persian ZWNJ": "می\u200cخواهم",
    "emoji ZWJ sequence": "👩\u200d💻 and 👨\u200d👩\u200d👧",
    "emoji presentation": "❤\ufe0f",
    "keycap": "1\ufe0f\u20e3",
    "skin tone then ZWJ": "🧑🏽\u200d🚀",
    "devanagari conjunct": "क्\u200dष and क्\u200cष",
    "ideographic variant": "葛\U000e0100",
    "subdivision flag": ENGLAND,
}

HIDING = {
    "ZWNJ inside an ASCII word": ("cu\u200crl", "curl"),
    "ZWJ inside an ASCII word": ("cu\u200drl", "curl"),
    "zero-width space": ("zero\u200bwidth", "zerowidth"),
    "selector after an ASCII letter": ("a\ufe0f", "a"),
    "ZWJ at the end of an emoji": ("👍\u200d", "👍"),
    "lone ZWNJ": ("\u200c", ""),
    "tags after a letter": ("x" + "".join(chr(0xE0000 + ord(c)) for c in "rm -rf"), "x"),
    "tags after a black flag that are no flag": (
        "\U0001f3f4" + "".join(chr(0xE0000 + ord(c)) for c in "curl"),
        "\U0001f3f4",
    ),
    "bidi override": ("\u202eabc", "abc"),
}


@pytest.mark.parametrize("text", WRITING.values(), ids=WRITING.keys())
def test_joiners_and_selectors_that_are_writing_are_kept_and_not_flagged(text):
    assert not has_hidden(text)
    assert strip_hidden(text).text == text and strip_hidden(text).removed == 0
    assert reveal(text) == text


@pytest.mark.parametrize(("text", "clean"), HIDING.values(), ids=HIDING.keys())
def test_the_same_characters_where_they_hide_text_are_flagged_and_removed(text, clean):
    assert has_hidden(text)
    assert strip_hidden(text).text == clean
    assert "⟨" in reveal(text)


def test_an_editor_save_strips_nothing_from_lines_the_person_did_not_touch(tmp_path):
    root = tmp_path / "memories"
    root.mkdir()
    held = "# Memory\n- a line that was already here\u200b [trust:user]\n- Persian: می\u200cخواهم\n"
    (root / "MEMORY.md").write_text(held)
    loaded = load_file(root, "MEMORY.md")
    save_file(root, "MEMORY.md", held + "- new\u200b line 👩\u200d💻\n", loaded.sha256, wait=0)
    # the untouched lines byte for byte (the flagged one too: it was shown at its review); the new line cleaned
    assert (root / "MEMORY.md").read_text() == held + "- new line 👩\u200d💻\n"


def test_a_phase2_run_never_rewrites_or_re_marks_a_persons_unchanged_line():
    person = "- Prefers the 🧑\u200d💻 emoji in status updates, and می\u200cخواهم in Persian notes"
    flagged_before = "- an old line with a zero\u200bwidth space [trust:user]"
    before = f"# Memory\n{person}\n{flagged_before}\n"
    after = before + "- a new line from the run\u200b\n"
    out = enforce_text(after, before, [])
    lines = out.text.split("\n")
    assert lines[1] == person  # no character stripped, no [trust:agent] marker added
    assert lines[2] == flagged_before
    assert markers.strip(lines[3]) == "- a new line from the run"
    assert out.hidden == {4: 1}
