"""Hunks from real ``git diff`` output: stable ids, ranges, and decisions applied back to the exact bytes."""

from __future__ import annotations

import random

import pytest

from memtui.adapters.memroot import baseline
from memtui.services.review.hunks import HunkError, apply_decisions, hunks_of, parse_diff, resolve_ids

OLD = "".join(f"line {i}\n" for i in range(1, 41))


def _diff(tmp_path, files_old: dict[str, str | None], files_new: dict[str, str | None]) -> str:
    root = tmp_path / "root"
    root.mkdir(parents=True, exist_ok=True)
    for rel, text in files_old.items():
        if text is not None:
            (root / rel).write_text(text)
    baseline.reset_baseline(root)
    for rel, text in files_new.items():
        path = root / rel
        if text is None:
            path.unlink(missing_ok=True)
        else:
            path.write_text(text)
    return baseline.stat_and_diff(root)[1]


def test_hunks_have_stable_ids_ranges_and_both_sides(tmp_path):
    new = OLD.replace("line 3\n", "line three\n").replace("line 30\n", "line 30\nadded after 30\n")
    diff = _diff(tmp_path, {"MEMORY.md": OLD}, {"MEMORY.md": new})
    hunks = hunks_of(diff)
    assert len(hunks) == 2
    first, second = hunks
    assert (first.file, first.old_start, first.old_count, first.new_start, first.new_count) == ("MEMORY.md", 1, 6, 1, 6)
    assert first.added == ["line three"] and first.removed == ["line 3"]
    assert second.added == ["added after 30"] and second.removed == []
    assert len({first.id, second.id}) == 2 and len(first.content_hash) == 64
    assert [h.id for h in hunks_of(diff)] == [first.id, second.id]  # stable across parses
    assert first.text.startswith("@@ -1,6 +1,6 @@") and "-line 3" in first.text and "+line three" in first.text


@pytest.mark.slow
def test_apply_decisions_reproduces_both_versions_and_each_mix(tmp_path):
    rng = random.Random(11)
    for trial in range(25):
        lines = OLD.splitlines(keepends=True)
        new_lines = list(lines)
        for _ in range(rng.randint(1, 6)):
            i = rng.randrange(len(new_lines))
            op = rng.choice(["edit", "insert", "delete"])
            if op == "edit":
                new_lines[i] = f"edited {trial}-{i}\n"
            elif op == "insert":
                new_lines.insert(i, f"inserted {trial}-{i}\n")
            elif len(new_lines) > 1:
                del new_lines[i]
        if rng.random() < 0.3:
            new_lines[-1] = new_lines[-1].rstrip("\n")  # no newline at the end
        new = "".join(new_lines)
        diff = _diff(tmp_path / f"t{trial}", {"MEMORY.md": OLD}, {"MEMORY.md": new})
        hunks = hunks_of(diff)
        assert hunks, new
        ids = {h.id for h in hunks}
        assert apply_decisions(OLD, new, hunks, set()) == new
        assert apply_decisions(OLD, new, hunks, ids) == OLD
        # rejecting a subset: re-diffing the result against the baseline yields exactly the kept hunks
        keep = {h.id for h in hunks if rng.random() < 0.5}
        mixed = apply_decisions(OLD, new, hunks, ids - keep)
        assert mixed is not None
        again = hunks_of(_diff(tmp_path / f"m{trial}", {"MEMORY.md": OLD}, {"MEMORY.md": mixed}))
        assert sorted(h.added for h in again) == sorted(h.added for h in hunks if h.id in keep)


def test_added_and_deleted_files_and_amendments(tmp_path):
    diff = _diff(
        tmp_path,
        {"MEMORY.md": OLD, "gone.md": "old note\n"},
        {"MEMORY.md": OLD.replace("line 20\n", "line twenty\n"), "gone.md": None, "new.md": "brand new\n"},
    )
    files = {f.path: f for f in parse_diff(diff)}
    assert {p: f.status for p, f in files.items()} == {"MEMORY.md": "M", "gone.md": "D", "new.md": "A"}
    added = files["new.md"].hunks
    assert apply_decisions(None, "brand new\n", added, {added[0].id}) is None
    assert apply_decisions(None, "brand new\n", added, set()) == "brand new\n"
    gone = files["gone.md"].hunks
    assert apply_decisions("old note\n", None, gone, set()) is None
    assert apply_decisions("old note\n", None, gone, {gone[0].id}) == "old note\n"
    edit = files["MEMORY.md"].hunks[0]
    amended = edit.new_text().replace("line twenty", "line 20, amended by a person")
    out = apply_decisions(OLD, OLD.replace("line 20\n", "line twenty\n"), [edit], set(), {edit.id: amended})
    assert out == OLD.replace("line 20\n", "line 20, amended by a person\n")


def test_resolve_ids_accepts_prefixes_and_names_unknown_ids(tmp_path):
    diff = _diff(tmp_path, {"MEMORY.md": OLD}, {"MEMORY.md": OLD.replace("line 1\n", "one\n")})
    (hunk,) = hunks_of(diff)
    assert resolve_ids([hunk], [hunk.id[:6]]) == {hunk.id}
    with pytest.raises(HunkError, match="matches no hunk"):
        resolve_ids([hunk], ["zzzz"])


def test_baseline_that_moved_is_refused(tmp_path):
    new = OLD.replace("line 5\n", "five\n")
    hunks = hunks_of(_diff(tmp_path, {"MEMORY.md": OLD}, {"MEMORY.md": new}))
    with pytest.raises(HunkError, match="no longer matches"):
        apply_decisions(OLD.replace("line 4\n", "four\n"), new, hunks, {hunks[0].id})


def test_python_unified_diff_round_trips_through_the_parser():
    from memtui.services.review.hunks import unified_diff

    old, new = OLD, OLD.replace("line 7\n", "seven\n") + "tail without newline"
    (hunk_a, hunk_b) = hunks_of(unified_diff("MEMORY.md", old, new))
    assert apply_decisions(old, new, [hunk_a, hunk_b], set()) == new
    assert apply_decisions(old, new, [hunk_a, hunk_b], {hunk_b.id}) == OLD.replace("line 7\n", "seven\n")
    (created,) = parse_diff(unified_diff("x.md", None, "a\nb\n"))
    assert created.status == "A" and created.hunks[0].added == ["a", "b"]
    assert unified_diff("x.md", "same\n", "same\n") == ""


def test_a_left_out_hunk_bans_only_what_it_really_added_not_renumbered_lines(tmp_path):
    from memtui.services.review.decide import plan
    from memtui.state.person_lines import normalize_line

    old = "# Group\n\n## Task 1: alpha\n- use uv [Task 1]\n"
    new = "# Group\n\n## Task 1: beta\n- pin TZ=UTC [Task 1]\n\n## Task 2: alpha\n- use uv [Task 2]\n"
    diff = _diff(tmp_path, {"MEMORY.md": old}, {"MEMORY.md": new})
    root = tmp_path / "root"
    hunks = hunks_of(diff)
    p = plan(root, diff, [h.id for h in hunks])
    assert p.files["MEMORY.md"] == old
    added = [line for h in hunks for line in p.new_lines(h)]
    keys = {normalize_line(line) for line in added}
    assert keys == {"pin tz=utc"}  # a task heading is structure, never remembered (issue 33.2)
    assert "use uv" not in keys and "task: alpha" not in keys
