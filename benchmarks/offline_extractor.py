"""Precision and recall of the offline extractor on held-out labelled sets, and its false redactions on code.

    python benchmarks/offline_extractor.py [--json]

First, the statements of ``tests/fixtures/offline_eval.py`` (70, half durable; never used to tune the rules, which
were tuned on ``tests/fixtures/offline_tuning.py``) are typed, five to a session, into Codex-shaped sessions with a
command and an answer between them, and run through the real offline extractor. Every "the user said" line of
each raw memory is matched back to its labelled statement. Then the real-shaped sessions of
``tests/fixtures/extractor_eval/heldout`` (Codex and Claude transcripts with tool calls, failures and fixes; tuned
on ``tune/``): precision of every kept line, recall of durable statements and fixes, user names stored; and the
false redactions per 100 ordinary-code transcripts of the current held-out code round. Exit status 1 when a
target of the first two is missed (the code round's target, <= 1 per 100, is printed, and is missed today).
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

from figures import Figure, code_root, emit

code_root()

from memtui.adapters.rollouts.model import Transcript  # noqa: E402
from memtui.services.phase1.offline import build_offline_output  # noqa: E402
from memtui.services.phase1.statements import normalized  # noqa: E402
from tests.fixtures.offline_eval import EVAL_SET  # noqa: E402

PRECISION_TARGET, RECALL_TARGET = 0.9, 0.6
PER_SESSION = 5
_SAID = re.compile(r'^- the user said: "(.*)" \[item \d+\] -> ', re.MULTILINE)


def _session(statements: list[str]) -> list[dict]:
    items: list[dict] = []
    for i, text in enumerate(statements):
        items.append({"type": "message", "role": "user", "content": [{"type": "input_text", "text": text}]})
        items.append(
            {"type": "function_call", "name": "exec_command", "arguments": '{"cmd":"make test"}', "call_id": f"c{i}"}
        )
        items.append({"type": "function_call_output", "call_id": f"c{i}", "output": "ok\nProcess exited with code 0"})
        items.append({"type": "message", "role": "assistant", "content": [{"type": "output_text", "text": "Done."}]})
    return items


def measure() -> dict[str, float | int]:
    label = {normalized(s): d for s, d in EVAL_SET}
    extracted: list[str] = []
    for start in range(0, len(EVAL_SET), PER_SESSION):
        batch = [s for s, _ in EVAL_SET[start : start + PER_SESSION]]
        raw = build_offline_output(Transcript(_session(batch)), "/home/ana/src/shop-api").raw_memory
        extracted += _SAID.findall(raw)
    unknown = [e for e in extracted if normalized(e) not in label]
    if unknown:
        raise SystemExit(f"extracted lines that are not statements of the set: {unknown}")
    true_pos = sum(label[normalized(e)] for e in extracted)
    durable = sum(d for _, d in EVAL_SET)
    return {
        "statements": len(EVAL_SET),
        "durable": durable,
        "extracted": len(extracted),
        "true_positives": true_pos,
        "false_positives": len(extracted) - true_pos,
        "precision": round(true_pos / len(extracted), 3) if extracted else 0.0,
        "recall": round(true_pos / durable, 3),
    }


SESSIONS_PRECISION, SESSIONS_RECALL, FALSE_REDACTIONS_PER_100 = 0.8, 0.7, 1.0


def measure_sessions() -> dict[str, float | int]:
    """The real-shaped held-out sessions and the current held-out code round, through the real extractor."""
    import tempfile

    from tests.fixtures.extractor_eval.heldout import code_r11, sessions
    from tests.fixtures.extractor_eval.model import extract, score

    with tempfile.TemporaryDirectory() as tmp:
        result = score(sessions.SESSIONS, Path(tmp))
        code = code_r11.sessions()
        redactions = [extract(s, Path(tmp), i).redactions for i, s in enumerate(code)]
    return {
        "sessions": result.sessions,
        "kept": result.kept,
        "precision": round(result.precision, 3),
        "recall": round(result.recall, 3),
        "statements": result.statements,
        "fixes_found": result.fixes_found,
        "fixes": result.fixes,
        "user_names_stored": len(result.leaks),
        "code_transcripts": len(code),
        "false_redactions": sum(redactions),
        "false_redactions_per_100": round(100 * sum(redactions) / len(code), 1),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    m = measure()
    r = measure_sessions()
    ok = m["precision"] >= PRECISION_TARGET and m["recall"] >= RECALL_TARGET
    ok = ok and r["precision"] >= SESSIONS_PRECISION and r["recall"] >= SESSIONS_RECALL
    if args.json:
        print(json.dumps({**m, "real_shaped": r, "ok": ok}))
    else:
        print(
            f"offline extractor, held-out set: {m['statements']} statements ({m['durable']} durable); "
            f"{m['extracted']} preference lines, {m['true_positives']} durable, {m['false_positives']} not"
        )
        print(
            f"precision {m['precision']:.3f} (target >= {PRECISION_TARGET}), "
            f"recall {m['recall']:.3f} (target >= {RECALL_TARGET})"
        )
        print(
            f"real-shaped held-out sessions: {r['sessions']}; {r['kept']} lines kept, precision {r['precision']:.3f} "
            f"(target >= {SESSIONS_PRECISION}), recall of durable statements {r['recall']:.3f} of {r['statements']} "
            f"(target >= {SESSIONS_RECALL}), fixes {r['fixes_found']}/{r['fixes']}, "
            f"user names stored {r['user_names_stored']}"
        )
        print(
            f"held-out code round 11: {r['false_redactions']} false redactions in {r['code_transcripts']} transcripts, "
            f"{r['false_redactions_per_100']} per 100 (target <= {FALSE_REDACTIONS_PER_100}: "
            f"{'met' if r['false_redactions_per_100'] <= FALSE_REDACTIONS_PER_100 else 'missed'})"
        )
        print("ok" if ok else "MISSED")
    emit(
        "offline_extractor",
        {
            "precision": Figure(m["precision"], "", "higher"),
            "recall": Figure(m["recall"], "", "higher"),
            "sessions_precision": Figure(r["precision"], "", "higher"),
            "sessions_recall": Figure(r["recall"], "", "higher"),
            "false_redactions_per_100": Figure(r["false_redactions_per_100"], "per 100"),
        },
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
