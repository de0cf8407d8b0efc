"""Redaction benchmark: throughput of redact() over ~100 MB of filtered-rollout text with planted secrets.

Prints MB/s, recall on the planted secrets, false positives (in the filler and on the negatives corpus), and for
comparison the naive approach (the rules as sequential `re` .subn() calls) and the same single-pass scanner compiled
with `re` instead of RE2, both on a small slice.

    .venv/bin/python benchmarks/redact.py            # 100 MB
    .venv/bin/python benchmarks/redact.py --mb 10    # quick run
"""

from __future__ import annotations

import argparse
import json
import random
import re
import string
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from memtui import redact as R
from tests.fixtures.secrets import NEGATIVES, POSITIVES, Secret

_WORDS = (
    "the a to of and in that is for it with as was on be by this are from or have an not but we can all which "
    "function returns value error test build commit diff config session model output file path module import class "
    "token tokens password secret auth key request response handler cache index query schema migration retry "
    "timeout async await deploy branch merge rebase lint format review fix bug feature refactor"
)
WORDS = _WORDS.split()
EMOJI = ["🎉", "✅", "🚀", "⚠️", "🐛", "💡", "📦", "🔥", "é", "ü", "→", "—", "日本語", "Привет"]


def _prose(rng: random.Random) -> str:
    sentences = []
    for _ in range(rng.randint(2, 8)):
        words = rng.choices(WORDS, k=rng.randint(6, 22))
        if rng.random() < 0.3:
            words.insert(rng.randrange(len(words)), rng.choice(EMOJI))
        sentences.append(" ".join(words).capitalize() + rng.choice(".!?:"))
    return " ".join(sentences)


def _shell(rng: random.Random) -> str:
    lines = [f"$ {rng.choice(['ls -la', 'git status', 'pytest -q', 'npm test', 'cargo build', 'rg token src'])}"]
    for _ in range(rng.randint(3, 15)):
        name = "".join(rng.choices(string.ascii_lowercase, k=rng.randint(3, 10)))
        lines.append(
            rng.choice(
                [
                    f"-rw-r--r--  1 ada staff  {rng.randint(10, 99999):>6} May  7 10:0{rng.randint(0, 9)} {name}.py",
                    f"src/{name}.py:{rng.randint(1, 400)}: def {name}(self, token_count: int) -> None:",
                    f"tests/test_{name}.py::test_{name} PASSED",
                    f"commit {rng.getrandbits(160):040x}",
                    f"   Compiling {name} v0.{rng.randint(1, 9)}.{rng.randint(0, 20)}",
                    f"modified:   src/{name}/auth.py",
                ]
            )
        )
    return "\n".join(lines)


def _code(rng: random.Random) -> str:
    name = "".join(rng.choices(string.ascii_lowercase, k=8))
    return (
        f"def {name}(session, token: str | None = None) -> dict:\n"
        f'    """Fetch {name} for the current session."""\n'
        f"    headers = {{'Authorization': f'Bearer {{token}}'}} if token else {{}}\n"
        f"    resp = session.get(f'https://api.example.com/v1/{name}', headers=headers, timeout=30)\n"
        f"    resp.raise_for_status()\n"
        f"    return resp.json()\n"
    )


def _json(rng: random.Random) -> str:
    return json.dumps(
        {
            "type": "function_call_output",
            "call_id": f"call_{rng.getrandbits(64):016x}",
            "output": _shell(rng),
            "usage": {"input_tokens": rng.randint(1, 99999), "output_tokens": rng.randint(1, 9999)},
        },
        ensure_ascii=False,
    )


def _variant(rng: random.Random, secret: Secret) -> Secret:
    """A fresh copy of a corpus secret (last chars re-drawn within their class) so every planted secret is distinct."""

    def redraw(c: str) -> str:
        for alphabet in (string.ascii_uppercase, string.ascii_lowercase, string.digits):
            if c in alphabet:
                return rng.choice(alphabet)
        return c

    new = secret.secret[:-6] + "".join(redraw(c) for c in secret.secret[-6:])
    return Secret(secret.name, secret.kind, new, secret.context.replace(secret.secret, new))


def build_corpus(mb: float, seed: int = 7) -> tuple[str, list[Secret]]:
    """~`mb` million characters of filtered-rollout-like text with one planted secret every ~400 KB."""
    rng = random.Random(seed)
    makers = [_prose, _prose, _prose, _shell, _code, _json]
    pool = [rng.choice(makers)(rng) for _ in range(3000)]
    pool += NEGATIVES
    target = int(mb * 1_000_000)
    parts: list[str] = []
    planted: list[Secret] = []
    size = next_plant = 0
    while size < target:
        if size >= next_plant:
            secret = _variant(rng, rng.choice(POSITIVES))
            planted.append(secret)
            block = secret.context if rng.random() < 0.7 else json.dumps({"text": secret.context})
            next_plant += 400_000
        else:
            block = rng.choice(pool)
        parts.append(block)
        size += len(block) + 1
    return "\n".join(parts), planted


def _naive_rules() -> list[tuple[re.Pattern[str], str]]:
    """The rule set as one `re` pattern per rule, applied with sequential .subn() (the 1.7 MB/s baseline)."""
    patterns = [p.decode() for kind, p in R.RULES if kind not in ("cli_flag", "assignment")]
    patterns.append(
        r"(?i)\b(\w*(?:api[_-]?key|token|secret|password|passwd|access[_-]?key|private[_-]?key|auth)\w*)"
        r"(\s*[:=]\s*)([\"']?)[^\s\"']{8,}"
    )
    patterns.append(r"(?i)--[\w-]*(?:password|token|secret)[\w-]*\s+\S+")
    patterns.append(r"AccountKey=[A-Za-z0-9+/=]{20,}")
    return [(re.compile(p), R.PLACEHOLDER) for p in patterns]


def _timed(fn, *args):
    start = time.perf_counter()
    result = fn(*args)
    return result, time.perf_counter() - start


def _items(text: str, size: int) -> list[str]:
    """Split on record boundaries (newlines) into ~`size`-char items, like one serialized rollout per job."""
    items, start = [], 0
    while start < len(text):
        end = text.find("\n", start + size)
        end = len(text) if end < 0 else end + 1
        items.append(text[start:end])
        start = end
    return items


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mb", type=float, default=100.0, help="size of the generated text in MB (default 100)")
    parser.add_argument("--repeat", type=int, default=5, help="timed runs; the best is reported (default 5)")
    parser.add_argument("--item-mb", type=float, default=1.0, help="item size for the per-rollout run (default 1)")
    parser.add_argument("--slice-mb", type=float, default=2.0, help="slice for the slow comparisons (default 2)")
    args = parser.parse_args()

    (text, planted), gen_s = _timed(build_corpus, args.mb)
    mb = len(text) / 1e6
    ucs = "UCS-4" if any(ord(c) > 0xFFFF for c in text[:200_000]) else "narrow"
    print(f"corpus: {mb:.1f} M chars ({ucs} str), {len(planted)} planted secrets, generated in {gen_s:.1f} s")

    runs = []
    for _ in range(args.repeat):
        result, secs = _timed(R.redact, text)
        runs.append(secs)
    print(
        f"redact(), one {mb:.0f} MB str:   best {mb / min(runs):7.1f} MB/s  (runs: {', '.join(f'{s:.2f}s' for s in runs)})"
    )
    items = _items(text, int(args.item_mb * 1_000_000))
    item_runs = []
    for _ in range(args.repeat):
        # Each item's output is dropped once redacted, as in the pipeline (send, then store the counts).
        item_totals, secs = _timed(lambda: [R.redact(item).total for item in items])
        item_runs.append(secs)
    print(
        f"redact() per ~{args.item_mb:g} MB item ({len(items)} items): best {mb / min(item_runs):7.1f} MB/s"
        f"  (runs: {', '.join(f'{s:.2f}s' for s in item_runs)})"
    )
    data, enc_s = _timed(lambda: text.encode("utf-8", "surrogatepass"))
    spans, scan_s = _timed(R._scan, data)
    print(f"  phases: encode {mb / enc_s:.0f} MB/s, RE2 scan + validation {mb / scan_s:.0f} MB/s ({len(spans)} spans)")
    del data

    leaked = [s for s in planted if s.secret in result.text]
    found = len(planted) - len(leaked)
    print(f"recall on planted:   {found / len(planted):.4f} ({found}/{len(planted)})")
    for s in leaked[:5]:
        print(f"  leaked: {s.name} ({s.kind})")
    per_item_total = sum(item_totals)
    print(f"redactions in filler (false positives): {result.total - found}  (per-item run total: {per_item_total})")
    print(f"counts: {dict(sorted(result.counts.items()))}")
    flagged = [n for n in NEGATIVES if R.redact(n).total]
    rate = len(flagged) / len(NEGATIVES)
    print(f"negatives corpus:    {len(flagged)}/{len(NEGATIVES)} flagged (false-positive rate {rate:.3f})")
    hits = sum(
        1 for s in POSITIVES if s.secret not in R.redact_text(s.context) and R.redact(s.context).counts == {s.kind: 1}
    )
    print(
        f"positives corpus:    {hits}/{len(POSITIVES)} redacted with the right kind (recall {hits / len(POSITIVES):.3f})"
    )
    del result

    piece = text[: int(args.slice_mb * 1_000_000)]
    slice_mb = len(piece) / 1e6
    rules = _naive_rules()

    def naive(s: str) -> str:
        for pattern, repl in rules:
            s = pattern.sub(repl, s)
        return s

    print(f"comparisons on a {slice_mb:g} MB slice:")
    _, naive_s = _timed(naive, piece)
    print(f"  re, {len(rules)} patterns as sequential .sub():          {slice_mb / naive_s:8.1f} MB/s")
    sliced = piece.encode("utf-8", "surrogatepass")
    combined = re.compile(R._SCANNER.pattern)
    _, re_s = _timed(lambda: sum(1 for _ in combined.finditer(sliced)))
    print(f"  re, the same one-pass alternation (bytes), scan only: {slice_mb / re_s:8.1f} MB/s")
    _, re2_b = _timed(lambda: sum(1 for _ in R._SCANNER.finditer(sliced)))
    on_str = R.re2.compile(R._SCANNER.pattern.decode(), R._SCANNER.options)
    _, re2_s = _timed(lambda: sum(1 for _ in on_str.finditer(piece)))
    print(f"  re2, the alternation on bytes, scan only:             {slice_mb / re2_b:8.1f} MB/s")
    print(f"  re2, the alternation on str (UTF-8 + offsets per call): {slice_mb / re2_s:6.1f} MB/s")
    _, full_s = _timed(R.redact, piece)
    print(f"  redact() on the slice:                                {slice_mb / full_s:8.1f} MB/s")


if __name__ == "__main__":
    main()
