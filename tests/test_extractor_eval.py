"""The offline extractor on real-shaped sessions (issue 33.6): what it keeps is worth keeping, and code is not a secret.

The figures are asserted on the held-out sets of ``tests/fixtures/extractor_eval/heldout`` (never tuned on); the
parts each have a test of their own, written from the forms the issue reported, which fails on the code before.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from memtui.adapters.memroot.files import MEMORY_MD
from memtui.adapters.redact import redact
from memtui.domain.home_paths import tilde_homes
from memtui.domain.scope import scrub_home
from memtui.services.phase2.offline import consolidate_offline
from memtui.services.phase2.tools import Journal
from memtui.state.outputs import Stage1Output
from tests.fixtures.extractor_eval.heldout import code_r11
from tests.fixtures.extractor_eval.heldout import sessions as heldout
from tests.fixtures.extractor_eval.model import Cmd, File, Score, Session, Turn, extract, kept_items, score
from tests.fixtures.extractor_eval.tune import (
    code,
    code_more_r1,
    code_r1,
    code_r2,
    code_r3,
    code_r4,
    code_r5,
    code_r6,
    code_r7,
    code_r8,
    code_r9,
    code_r10,
)
from tests.fixtures.extractor_eval.tune import sessions as tuning

PRECISION_TARGET, RECALL_TARGET = 0.8, 0.7
FALSE_REDACTIONS_TARGET = 1.0  # per 100 ordinary-code transcripts
# Held-out round 11 as measured once, when written (rules frozen at 07062b9): no false redaction, the target met.
ROUND11_REDACTIONS = 0
HELDOUT_LEAKS = 2  # home user names the held-out sessions still store (measured once; see docs/performance.md)


def _redactions(sessions: list[Session], folder: Path) -> tuple[int, int]:
    total = touched = 0
    for i, s in enumerate(sessions):
        n = extract(s, folder, i).redactions
        total, touched = total + n, touched + (n > 0)
    return total, touched


# --- the figures ---------------------------------------------------------------------------------------------------


def test_held_out_sessions_meet_the_targets(tmp_path: Path) -> None:
    """Precision of kept items >= 0.8 with recall of durable statements >= 0.7, on 30 sessions never tuned on."""
    result = score(heldout.SESSIONS, tmp_path)
    assert result.sessions == 30 and result.statements >= 40
    assert result.precision >= PRECISION_TARGET, result.false_positives
    assert result.recall >= RECALL_TARGET, result.missed
    assert len(result.leaks) <= HELDOUT_LEAKS, result.leaks


def test_tuning_sessions_store_no_user_name(tmp_path: Path) -> None:
    result: Score = score(tuning.SESSIONS, tmp_path)
    assert result.leaks == []
    assert result.precision >= 0.9 and result.recall >= 0.9


def test_held_out_code_round_is_measured_and_does_not_regress(tmp_path: Path) -> None:
    """Round 11 (124 transcripts written after the rules were frozen): every redaction is a false one. Measured once:
    none, so the goal (<= 1 per 100) is met there; it must stay met."""
    sessions = code_r11.sessions()
    assert len(sessions) >= 120
    total, _ = _redactions(sessions, tmp_path)
    assert total <= ROUND11_REDACTIONS
    assert 100 * total / len(sessions) <= FALSE_REDACTIONS_TARGET


@pytest.mark.parametrize(
    "module",
    [code, code_r1, code_more_r1, code_r2, code_r3, code_r4, code_r5, code_r6, code_r7, code_r8, code_r9, code_r10],
    ids=["tune", "r1", "r1-more", "r2", "r3", "r4", "r5", "r6", "r7", "r8", "r9", "r10"],
)
def test_folded_code_rounds_have_no_false_redaction(module, tmp_path: Path) -> None:
    """The earlier held-out rounds, measured once and then tuned on: none of their forms is redacted any more."""
    assert _redactions(module.sessions(), tmp_path) == (0, 0)


# --- one-off requests -----------------------------------------------------------------------------------------------


def _session(*turns: Turn, cwd: str = "/home/sam/src/shop") -> Session:
    return Session("t", "codex", cwd, turns)


def _kept(s: Session, folder: Path) -> list[str]:
    return kept_items(extract(s, folder).output.raw_memory)


def test_a_one_off_task_request_is_not_a_standing_order(tmp_path: Path) -> None:
    s = _session(
        Turn("Prepare a focused demo scenario for the sales call tomorrow; it must stay under 8 minutes."),
        Turn("I need a quarterly VAT report by Friday."),
        Turn("Make sure the fix has a test."),
        Turn("The tickets should be short."),
        Turn("We always use pnpm in this repo, never npm."),
    )
    kept = _kept(s, tmp_path)
    assert len(kept) == 1 and "always use pnpm" in kept[0]


# --- failures -------------------------------------------------------------------------------------------------------


def test_a_failure_is_kept_only_with_a_different_fix(tmp_path: Path) -> None:
    s = _session(
        Turn(
            "Never run the suite without TZ=UTC.",
            (
                Cmd("pnpm test invoices", "FAIL src/pdf.test.ts", 1),
                Cmd("TZ=UTC pnpm test invoices", "Tests: 14 passed"),  # a different fix: kept
                Cmd("cargo flamegraph --bin game", "perf not found", 1),
                Cmd("cargo flamegraph --bin game", "wrote flamegraph.svg"),  # its own command worked later
                Cmd("cargo test --test tls", "test failed", 101),  # no later run succeeded
                Cmd("pip install tenacity", "error: externally-managed-environment", 1),
                Cmd("cat requirements.txt", "tenacity"),  # only looks: no fix
                Cmd("uv add tenacity", "+ tenacity==9.0.0"),  # another tool, the same package: the fix
            ),
        )
    )
    failures = [line for line in _kept(s, tmp_path) if " failed" in line]
    assert len(failures) == 2, failures
    assert "`pnpm test invoices` failed -> `TZ=UTC pnpm test invoices` worked" in failures[0]
    assert "`pip install tenacity` failed -> `uv add tenacity` worked" in failures[1]


# --- near-duplicates --------------------------------------------------------------------------------------------------


def test_near_duplicate_statements_merge_into_the_fuller_one(tmp_path: Path) -> None:
    s = _session(
        Turn("We prefer records over classes for DTOs"),
        Turn("Also, we prefer records over classes for DTOs, always."),
        Turn("Always run tools/pack_assets.py before a release build; the build does not pack them itself."),
        Turn("Always run tools/pack_assets.py before a release build."),
    )
    kept = _kept(s, tmp_path)
    assert len(kept) == 2, kept
    first = extract(_session(Turn("We prefer records over classes for DTOs")), tmp_path / "one").output.raw_memory
    cite = first.split('DTOs" ', 1)[1].split(" ->")[0]
    assert "for DTOs, always" in kept[0] and cite in kept[0]  # the fuller words, cited where first said
    assert "does not pack them itself" in kept[1]


# --- home folders ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "want"),
    [
        ("cwd: /Users/marta.kowalczyk/src/api", "cwd: ~/src/api"),
        ("/home/okafor/work/x and /home/okafor", "~/work/x and ~"),
        ("C:\\Users\\priyanka.raman\\code\\ledger", "~\\code\\ledger"),
        ("/mnt/c/Users/Bob/x", "~/x"),
        (
            "/Users/marta.kowalczyk/.claude/projects/-Users-marta-kowalczyk-src-api/8c1f.jsonl",
            "~/.claude/projects/-Users-~-src-api/8c1f.jsonl",
        ),
        ("~/.claude/projects/-home-dana-ml-train/x.jsonl (cwd /home/dana/ml-train)", None),
        ("/Users/Shared/build.log", "/Users/Shared/build.log"),
    ],
)
def test_home_folders_are_written_as_tilde(text: str, want: str | None) -> None:
    out = tilde_homes(text)
    if want is not None:
        assert out == want
    assert "marta" not in out and "kowalczyk" not in out and "okafor" not in out and "dana" not in out


def test_no_user_name_reaches_the_stored_memory(tmp_path: Path) -> None:
    s = _session(
        Turn(
            "Always keep the fixtures in /home/ana.lima/src/shop/tests/data, never in the repo root.",
            (File("read", "/home/ana.lima/.claude/projects/-home-ana-lima-src-shop/1a2b.jsonl"),),
        ),
        cwd="/home/ana.lima/src/shop",
    )
    out = extract(s, tmp_path).output
    stored = f"{out.raw_memory}{out.rollout_summary}{out.rollout_slug}".lower()
    assert "ana" not in stored.replace("analy", "") and "lima" not in stored
    assert "cwd: ~/src/shop" in out.raw_memory and "-home-~-src-shop" in out.rollout_summary


def test_an_export_keeps_no_user_name_in_encoded_project_folders() -> None:
    text = "rollout_path=~/.claude/projects/-Users-jo-nakamura-code-site/x.jsonl, cwd=/Users/jo.nakamura/code/site"
    out = scrub_home(text)
    assert "nakamura" not in out and "-Users-~-code-site" in out


# --- code is not a secret ----------------------------------------------------------------------------------------------

CODE = [
    'JWT_BEARER = "urn:ietf:params:oauth:grant-type:jwt-bearer"',
    'SERVER_AUTH = ObjectIdentifier("1.3.6.1.5.5.7.3.1")',
    "def load(private_key: ed25519.Ed25519PrivateKey) -> None:",
    "MLKEM1024P384PrivateKey = rust_openssl.hpke.MLKEM1024P384PrivateKey",
    '    password = getpass("Password: ")',
    '_SK_START = b"-----BEGIN OPENSSH PRIVATE KEY-----"',
    'headers = ("authorization", "x-amz-content-sha256", "x-amz-security-token")',
    'obj = {"Key": "uploads/7f3a9c21/avatar.png"}',
    'secretString: pulumi.interpolate`{"password":"${dbPassword}"}`,',
    "Pass :meth:`peek` a default value to return that instead of raising",
    "# The --username and --password options can't be used for",
    'let password = std::env::var("PASSWORD").expect("PASSWORD must be set");',
    "      POSTGRES_PASSWORD: postgres",
    "psql postgresql://postgres:postgres@localhost:5432/app",
    "$request->validate(['token' => 'required', 'password' => 'required|confirmed|min:12']);",
    "return $status === Password::PASSWORD_RESET ? redirect('/login') : back();",
    "token = :crypto.strong_rand_bytes(@rand_size)",
    "io.jsonwebtoken:jjwt-api:0.12.5=compileClasspath",
    "$securePassword = Read-Host -AsSecureString -Prompt 'Password'",
    '  password: System.fetch_env!("DB_PASSWORD"),',
    "  checksum/secret: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
    "  login(email: String!, password: String!): AuthPayload!",
    "  apiTokens(first: Int, after: [ID!]!): TokenConnection",
    "    var password: String?",
    "  app.secret: '%env(APP_SECRET)%'",
    "  secret: '%env(resolve:file:SECRET_FILE)%'",
    "DB_PASSWORD=op://prod/payments-db/password",
    "api_key: ref+vault://secret/data/app#/api_key",
    "let key = Key::<Aes256Gcm>::from_slice(&derived[..KEY_LEN]);",
    'resp = client.post("/login", json={"email": "a@example.com", "password": "wrong-password"})',
    '  "ARN": "arn:aws:secretsmanager:eu-west-1:514953256030:secret:prod/billing/db-0vHqZc",',
    "  encryptedData:\n    password: AgYCvRV4ZCzQiq5QLpUR4bqaveP4yUfy7h8x1neYRoRRs/7kvLLGqWKZPLbBpeu4VW23CYZQ",
    '  let(:user) { create(:user, password: "password123") }',
    "SPEC CHECKSUMS:\n  AppAuth: a337f53cfd83795d5d3baec0940312f41e50c078",
    '  "hostRules": [{"matchHost": "npm.pkg.github.com", "encrypted": {"token": "wcFMAnWAr0VeGQsXk29fjQ8v2mTq"}}],',
    '      - "traefik.http.middlewares.auth.forwardauth.address=http://auth:5807/verify"',
    "    proxy_pass http://token:8080/introspect;",
    "  upstream: secret:8200/v1/kv",
    "curl -s https://vault.internal/v1/secret:rotate/payments",
    '        "hashed_secret": "5baa61e4c9b93f3f0682250b6cf8331b7ee68fd8",',
    "hash_of_token: 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
]


@pytest.mark.parametrize("line", CODE)
def test_code_is_not_taken_for_a_secret(line: str) -> None:
    assert redact(line).text == line


@pytest.mark.parametrize(
    "line",
    [
        'secret: "mTNhNP4VREEs16hqXdgjvDKTpvt0jRWn"',
        "api_key = 'ZS7q5wqB5F7F2AYRdRyyXov2exVYdzHe'",
        "az devops login <<< qjcaovm5mwtgyvqe2kspryxhsexbq7svvnwwk99wlksdczfemx6n",
        "use token castle-8vewtl for the staging API",
        "token=abcdefgh12345 note",
        "password: Hunter2!",
        'password: "Summer2024!"',
        "APP_SECRET=%Xk29fjQ8v2mT%",
        'login(password="purple-monkey-dishwasher")',
        'let key = "Zx81kQp2Lm7vTq9Rw3";',
        "data:\n  password: Xk29fjQ8v2mTq",
        'password: "Passw0rd2024x"',
        "config:\n  AppAuth: a337f53cfd83795d5d3baec0940312f41e50c078Zq",
        '{"auth": {"token": "wcFMAnWAr0VeGQsXk29fjQ8v2mTq"}}',
        "DATABASE_URL=postgres://app:Xk29fjQ8v2@db.internal:5432/app",
        "git clone https://token:Xk29fjQ8v2mTqWz@git.internal/a/b.git",
        "cmdkey /add:fileserver /user:bob /pass:Xk29fjQ8v2mTq",
        "password:Xk29fjQ8v2mTq",
        "unhashed_password: Xk29fjQ8v2mTq",
        '"non_hashed_secret": "Xk29fjQ8v2mTqZ"',
    ],
)
def test_secrets_near_those_forms_are_still_redacted(line: str) -> None:
    assert redact(line).total >= 1


# --- the offline consolidator ----------------------------------------------------------------------------------------


def _memory(thread: str, when: int, cwd: str, statement: str) -> Stage1Output:
    raw = (
        "---\ndescription: x\ntask: x\ntask_group: x\ntask_outcome: uncertain\ncwd: x\nkeywords: x\n---\n"
        f'### Task 1: x\nPreference signals:\n- the user said: "{statement}" [item 1] -> follow this in future work '
        "here [trust:user]\n"
    )
    return Stage1Output(thread, when, raw, "# x\n", "x", 0, None, None, cwd, "/r", None, when)


def test_a_line_contradicted_in_another_project_stays_in_memory(tmp_path: Path) -> None:
    """A preference kept in raw_memories.md is left out of MEMORY.md only where a newer memory of its own project
    contradicts it, not in every project that says the same."""
    memories = [
        _memory("a", 100, "/p/one", "Always use pnpm, never npm."),
        _memory("b", 200, "/p/one", "Never use pnpm here, always npm."),
        _memory("c", 150, "/p/two", "Always use pnpm, never npm."),
    ]
    consolidate_offline(tmp_path, memories, Journal(tmp_path))
    one, two = (tmp_path / MEMORY_MD).read_text(encoding="utf-8").split("# Task Group: /p/two")
    assert '"Always use pnpm, never npm."' not in one  # superseded in its own project
    assert '"Always use pnpm, never npm."' in two
