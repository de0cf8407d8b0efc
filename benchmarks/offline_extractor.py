"""Precision and recall of the offline extractor's preference lines on the held-out labelled set.

    python benchmarks/offline_extractor.py [--json]

The statements of ``tests/fixtures/offline_eval.py`` (70, half durable; never used to tune the rules, which were
tuned on ``tests/fixtures/offline_tuning.py``) are typed, five to a session, into Codex-shaped sessions with a
command and an answer between them, and run through the real offline extractor. Every "the user said" line of
each raw memory is matched back to its labelled statement. Exit status 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import json
import re

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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    m = measure()
    ok = m["precision"] >= PRECISION_TARGET and m["recall"] >= RECALL_TARGET
    if args.json:
        print(json.dumps({**m, "ok": ok}))
    else:
        print(
            f"offline extractor, held-out set: {m['statements']} statements ({m['durable']} durable); "
            f"{m['extracted']} preference lines, {m['true_positives']} durable, {m['false_positives']} not"
        )
        print(
            f"precision {m['precision']:.3f} (target >= {PRECISION_TARGET}), "
            f"recall {m['recall']:.3f} (target >= {RECALL_TARGET}): {'ok' if ok else 'MISSED'}"
        )
    emit(
        "offline_extractor",
        {"precision": Figure(m["precision"], "", "higher"), "recall": Figure(m["recall"], "", "higher")},
    )
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
