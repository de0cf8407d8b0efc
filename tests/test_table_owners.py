"""Every table has one owner in ``memtui/state`` (``memtui.state.owners.OWNERS``), the only module that writes SQL
against it: this scans the string literals of ``memtui/`` (f-strings with their table-name constants resolved, and
sqlite-utils' ``db[table]``) and names every statement found elsewhere."""

from __future__ import annotations

import ast
import re
import sqlite3
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from memtui.state.owners import META_KEYS, OWNERS

PACKAGE = Path(__file__).resolve().parent.parent / "memtui"
# the migrations create every table and carry old rows forward: the schema module is everyone's
EXEMPT = {
    "memtui.state.schema",
    # its SQL reads another program's database (Codex's own state_*.sqlite, read-only), not memtui's tables
    "memtui.adapters.rollouts.codex_state",
}
# what a person may sanction while owners are being introduced; must stay empty
ALLOWED: set[tuple[str, str]] = set()

_STATEMENT = re.compile(r"\b(?:SELECT|INSERT|UPDATE|DELETE|REPLACE)\b")
# a table named at run time (an f-string placeholder no constant resolves): generic code over every table, which
# only memtui/state may hold (the store registry's row counts and carry-over)
_DYNAMIC = re.compile(r"\b(?:FROM|INTO|UPDATE|JOIN)\s+[\"`]?\?(?![\w?])")
_REF = re.compile(
    r"\b(?P<how>(?:INSERT|REPLACE)(?:\s+OR\s+\w+)?\s+INTO|UPDATE|DELETE\s+FROM|FROM|JOIN)\s+[\"`]?(?P<table>\w+)"
)


@dataclass(frozen=True)
class Stray:
    module: str
    line: int
    table: str
    owner: str
    sql: str
    joined: bool = False  # read alongside (a join, a subquery), which only memtui/state may do

    def __str__(self) -> str:
        where = "is joined outside memtui/state; its owner is" if self.joined else "belongs to"
        if self.table == "?":
            return f"{self.module.replace('.', '/')}.py:{self.line}: a table named at run time outside memtui/state: {self.sql}"
        return f"{self.module.replace('.', '/')}.py:{self.line}: table {self.table} {where} {self.owner}: {self.sql}"


def _constants(trees: dict[str, ast.Module]) -> dict[str, str]:
    """Module-level ``NAME = "table"`` across the package, so ``f"... FROM {DOCS}"`` names its table."""
    out: dict[str, str] = {}
    for tree in trees.values():
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and node.value.value in OWNERS
                and all(isinstance(t, ast.Name) for t in node.targets)
            ):
                for t in node.targets:
                    out[t.id] = node.value.value  # type: ignore[attr-defined]
    return out


def _name(node: ast.AST, constants: dict[str, str]) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    key = node.id if isinstance(node, ast.Name) else node.attr if isinstance(node, ast.Attribute) else None
    return constants.get(key) if key else None


def _concat(node: ast.AST, constants: dict[str, str], inner: set[int]) -> str | None:
    """The text of a ``+`` chain of string literals (names spliced in stand as ``?``); None if not all strings."""
    parts: list[str] = []
    pending: list[ast.AST] = [node]
    seen: list[ast.AST] = []
    while pending:
        n = pending.pop()
        if isinstance(n, ast.BinOp) and isinstance(n.op, ast.Add):
            pending += [n.right, n.left]
            seen.append(n)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str):
            parts.append(n.value)
            seen.append(n)
        elif isinstance(n, ast.JoinedStr):
            parts.append("".join(str(v.value) if isinstance(v, ast.Constant) else "?" for v in n.values))
            seen.append(n)
        elif isinstance(n, ast.Name | ast.Attribute):
            parts.append(_name(n, constants) or "?")
        else:
            return None
    inner.update(id(n) for n in seen)
    for n in seen:
        if isinstance(n, ast.JoinedStr):
            inner.update(id(v) for v in n.values)
    return "".join(parts)


def _literals(tree: ast.Module, constants: dict[str, str]) -> list[tuple[int, str]]:
    found: list[tuple[int, str]] = []
    inner: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add) and id(node) not in inner:
            text = _concat(node, constants, inner)  # "SELECT ..." + FRAGMENT + "... FROM t": one statement
            if text is not None:
                found.append((node.lineno, text))
        elif isinstance(node, ast.JoinedStr) and id(node) not in inner:
            parts = []
            for v in node.values:
                inner.add(id(v))
                if isinstance(v, ast.FormattedValue):
                    inner.add(id(v.value))
                    parts.append(_name(v.value, constants) or "?")
                else:
                    parts.append(str(v.value))  # type: ignore[attr-defined]
            found.append((node.lineno, "".join(parts)))
        elif isinstance(node, ast.Subscript):  # sqlite-utils: db["table"].insert(...), _db(conn)[DOCS].enable_fts()
            table = _name(node.slice, constants)
            holder = node.value
            named = (
                holder.id if isinstance(holder, ast.Name) else holder.attr if isinstance(holder, ast.Attribute) else ""
            )
            if table in OWNERS and (isinstance(holder, ast.Call) or "db" in named.lower()):
                found.append((node.lineno, f"UPDATE {table} SET /* sqlite-utils table */"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in inner:
            found.append((node.lineno, node.value))
    return found


def _depths(sql: str) -> list[int]:
    depth, out = 0, []
    for ch in sql:
        depth += ch == "("
        out.append(depth)
        depth -= ch == ")"
    return out


def classify(sql: str, module: str = "") -> tuple[set[str], set[str]]:
    """The tables a statement is against (what it writes, else the outermost table it reads) and the tables it only
    reads alongside (joins, subqueries). Several outermost tables read side by side (``SELECT (SELECT .. FROM a),
    (SELECT .. FROM b)``): the statement is against one of them, ``module``'s own if it owns one."""
    refs = [(m.group("how").split()[0], m.group("table"), m.start()) for m in _REF.finditer(sql)]
    refs = [r for r in refs if r[1] in OWNERS]
    if not refs:
        return set(), set()
    depth = _depths(sql)
    subjects = {t for how, t, at in refs if how in ("INSERT", "REPLACE", "UPDATE", "DELETE")}
    subjects = subjects or {t for how, t, at in refs if how == "FROM" and depth[at] == 0}
    if not subjects and any(depth[m.start()] == 0 for m in _STATEMENT.finditer(sql)):
        # SELECT ... FROM (SELECT ... FROM t) JOIN u: the shallowest table read FROM, else the shallowest at all
        outer = [r for r in refs if r[0] == "FROM"] or refs
        top = min(depth[at] for _, _, at in outer)
        subjects = {t for _, t, at in outer if depth[at] == top}
        own = {t for t in subjects if OWNERS[t] == module}
        subjects = {min(own)} if own else subjects
    # else a fragment (a subquery or CASE spliced into statements elsewhere): it only reads alongside
    return subjects, {t for _, t, _ in refs} - subjects


def strays(sources: dict[str, str]) -> list[Stray]:
    """Statements in ``sources`` (module name -> source) that are not in their table's owner."""
    trees = {m: ast.parse(src) for m, src in sources.items()}
    constants = _constants(trees)
    out: list[Stray] = []
    for module, tree in sorted(trees.items()):
        if module in EXEMPT:
            continue
        for line, sql in _literals(tree, constants):
            subjects, alongside = classify(sql, module)
            short = " ".join(sql.split())[:120]
            for table in sorted(subjects):
                if OWNERS[table] != module and (module, table) not in ALLOWED:
                    out.append(Stray(module, line, table, OWNERS[table], short))
            if not module.startswith("memtui.state."):
                if _DYNAMIC.search(sql) and _STATEMENT.search(sql):
                    out.append(Stray(module, line, "?", "memtui.state", short))
                for table in sorted(alongside):
                    if (module, table) not in ALLOWED:
                        out.append(Stray(module, line, table, OWNERS[table], short, joined=True))
    return sorted(out, key=lambda s: (s.module, s.line, s.table))


def package_sources() -> dict[str, str]:
    out = {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE.parent).with_suffix("")
        out[".".join(rel.parts).removesuffix(".__init__")] = path.read_text(encoding="utf-8")
    return out


_META_CALLS = {"get", "has", "put", "delete", "raise_flag"}  # memtui.state.meta's functions that take a key


def _meta_keys_used(tree: ast.Module) -> list[tuple[int, str | None]]:
    """(line, constant name) of the key of each ``meta.<fn>(conn, key)``; None when it is not a named constant
    (``POST_KEY.format(run_id)`` counts as ``POST_KEY``)."""
    out: list[tuple[int, str | None]] = []
    imports_meta = any(
        isinstance(n, ast.ImportFrom) and n.module == "memtui.state" and any(a.name == "meta" for a in n.names)
        for n in ast.walk(tree)
    )
    for node in ast.walk(tree) if imports_meta else ():
        f = node.func if isinstance(node, ast.Call) else None
        if not (isinstance(f, ast.Attribute) and f.attr in _META_CALLS and len(node.args) >= 2):  # type: ignore[union-attr]
            continue
        holder = f.value
        if (holder.id if isinstance(holder, ast.Name) else getattr(holder, "attr", None)) != "meta":
            continue
        key = node.args[1]  # type: ignore[union-attr]
        if isinstance(key, ast.Call) and isinstance(key.func, ast.Attribute) and key.func.attr == "format":
            key = key.func.value
        name = key.id if isinstance(key, ast.Name) else key.attr if isinstance(key, ast.Attribute) else None
        out.append((node.lineno, name))
    return out


def meta_key_strays(sources: dict[str, str]) -> list[str]:
    """A ``meta`` key defined outside its owner (``META_KEYS``), a ``meta.<fn>(conn, key)`` whose key is not a
    named constant, or a constant used as a key that ``META_KEYS`` does not list."""
    out: list[str] = []
    key_names: set[str] = set()
    used: set[str] = set()
    for module, src in sorted(sources.items()):
        tree = ast.parse(src)
        for node in tree.body:
            if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
                value = node.value.value
                if isinstance(value, str) and value in META_KEYS:
                    key_names |= {t.id for t in node.targets if isinstance(t, ast.Name)}
                    if META_KEYS[value] != module:
                        out.append(f"{module}:{node.lineno}: meta key {value!r} belongs to {META_KEYS[value]}")
        if module in EXEMPT or module == "memtui.state.meta":
            continue
        for line, name in _meta_keys_used(tree):
            if name is None:
                out.append(f"{module}:{line}: meta key is not a named constant of its owner (META_KEYS)")
            else:
                used.add(name)
    return out + [f"meta key constant {n} is not listed in META_KEYS" for n in sorted(used - key_names)]


def test_every_meta_key_is_named_by_its_owner():
    assert meta_key_strays(package_sources()) == []


def test_a_meta_key_outside_its_owner_or_inline_is_named():
    sources = {
        "memtui.fake": (
            "from memtui.state import meta\n"
            "SNEAKY = 'search.purge'\n"
            "OWN = 'fake.flag'\n"
            "def f(conn):\n"
            "    meta.put(conn, 'phase2.approving.1', '{}')\n"
            "    meta.get(conn, OWN)\n"
        ),
        "memtui.state.search_index": "PURGE_KEY = 'search.purge'\n",
    }
    assert meta_key_strays(sources) == [
        "memtui.fake:2: meta key 'search.purge' belongs to memtui.state.search_index",
        "memtui.fake:5: meta key is not a named constant of its owner (META_KEYS)",
        "meta key constant OWN is not listed in META_KEYS",
    ]


def test_every_statement_is_in_its_tables_owner():
    found = strays(package_sources())
    assert not found, "SQL outside the table's owner (call a function of the owner instead):\n" + "\n".join(
        map(str, found)
    )


def test_every_owner_is_a_state_module_that_exists():
    sources = package_sources()
    for table, owner in OWNERS.items():
        assert owner.startswith("memtui.state."), (table, owner)
        assert owner in sources, f"table {table}: owner {owner} does not exist"


def test_every_table_of_the_schema_and_the_search_index_has_an_owner():
    from memtui.state.db import migrate
    from memtui.state.search_index import ensure_index

    conn = sqlite3.connect(":memory:", isolation_level=None)
    migrate(conn)
    ensure_index(conn)
    tables = [
        r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table' AND name NOT LIKE 'sqlite_%'")
    ]
    assert "search_docs_fts" in tables
    assert [t for t in tables if t not in OWNERS] == []
    assert set() == ALLOWED


def test_a_stray_statement_is_named_with_file_line_table_and_owner():
    """The scan can fail: a fabricated module writing another owner's table, reading one through an f-string
    constant or a ``+`` chain, naming one at run time, joining one outside state/, or touching one through
    sqlite-utils."""
    sources = {
        "memtui.fake": (
            "T = 'threads'\n"
            "def f(conn):\n"
            "    conn.execute('UPDATE stage1_outputs SET usage_count = 1')\n"
            "    conn.execute(f'SELECT id FROM {T} WHERE id = ?')\n"
            "    db['tombstones'].insert({})\n"
            "    conn.execute('SELECT id ' + CLAUSE + ' FROM jobs')\n"
            "    conn.execute(f'SELECT * FROM {table}')\n"
        ),
        "memtui.state.jobs": (
            "def g(conn):\n"
            "    conn.execute('SELECT j.kind FROM jobs j JOIN threads t ON t.id = j.job_key')\n"  # a join: fine
            "    conn.execute('DELETE FROM meta WHERE key = ?')\n"
        ),
        "memtui.state.meta": "def h(conn):\n    conn.execute('SELECT value FROM meta WHERE key = ?')\n",
        "memtui.services.views": (
            "Q = ('SELECT t.id FROM threads t'\n"
            "     ' LEFT JOIN stage1_outputs o ON o.thread_id = t.id')\n"
            "WORDS = 'Select the rows from threads of the past week'\n"  # prose is not SQL
        ),
    }
    found = [str(s) for s in strays(sources)]
    assert found == [
        "memtui/fake.py:3: table stage1_outputs belongs to memtui.state.outputs: UPDATE stage1_outputs SET usage_count = 1",
        "memtui/fake.py:4: table threads belongs to memtui.state.threads: SELECT id FROM threads WHERE id = ?",
        "memtui/fake.py:5: table tombstones belongs to memtui.state.tombstones: "
        "UPDATE tombstones SET /* sqlite-utils table */",
        "memtui/fake.py:6: table jobs belongs to memtui.state.jobs: SELECT id ? FROM jobs",
        "memtui/fake.py:7: a table named at run time outside memtui/state: SELECT * FROM ?",
        "memtui/services/views.py:1: table stage1_outputs is joined outside memtui/state; its owner is memtui.state.outputs: "
        "SELECT t.id FROM threads t LEFT JOIN stage1_outputs o ON o.thread_id = t.id",
        "memtui/services/views.py:1: table threads belongs to memtui.state.threads: "
        "SELECT t.id FROM threads t LEFT JOIN stage1_outputs o ON o.thread_id = t.id",
        "memtui/state/jobs.py:3: table meta belongs to memtui.state.meta: DELETE FROM meta WHERE key = ?",
    ]


def test_classify_tells_the_statements_table_from_the_ones_it_reads_alongside():
    assert classify("SELECT COUNT(*) FROM (SELECT 1 FROM search_docs_fts WHERE search_docs_fts MATCH ?)") == (
        {"search_docs_fts"},
        set(),
    )
    assert classify(
        "INSERT INTO threads (id) SELECT ? WHERE NOT EXISTS (SELECT 1 FROM forgotten_threads WHERE thread_id = ?)"
    ) == ({"threads"}, {"forgotten_threads"})
    assert classify("EXISTS (SELECT 1 FROM forgotten_threads f WHERE f.thread_id = excluded.id)") == (
        set(),
        {"forgotten_threads"},
    )
    assert classify("FROM threads t LEFT JOIN jobs j ON j.job_key = t.id") == ({"threads"}, {"jobs"})
    assert classify("the threads from threads") == (set(), set())


def _statements(conn: sqlite3.Connection, call: Callable[[], object]) -> int:
    seen: list[str] = []
    conn.set_trace_callback(seen.append)
    try:
        call()
    finally:
        conn.set_trace_callback(None)
    return len(seen)


def test_calling_owners_costs_the_same_statements_for_ten_threads_as_for_two_hundred():
    """The list screens, the status counts and the no-change health fingerprint ask the owners a fixed number of
    statements, whatever the number of rows: no owner call sits in a per-row loop."""
    from memtui.adapters.rollouts.model import Thread
    from memtui.services.health import watermark
    from memtui.services.views import count_rollouts, job_rows, rollout_rows
    from memtui.state import jobs, outputs
    from memtui.state import threads as thread_rows
    from memtui.state.db import migrate
    from memtui.state.status import collect_status

    def costs(n: int) -> list[int]:
        conn = sqlite3.connect(":memory:", isolation_level=None)
        conn.row_factory = sqlite3.Row
        migrate(conn)
        thread_rows.upsert_threads(
            conn,
            [
                Thread(id=f"t{i:04d}", source_kind="codex", path=f"/r/{i}.jsonl", session_source="cli", updated_at=i)
                for i in range(n)
            ],
        )
        for i in range(0, n, 2):
            outputs.upsert_stage1_output(conn, f"t{i:04d}", i, f"raw {i}", f"summary {i}", None)
            conn.execute(
                "INSERT INTO jobs (kind, job_key, status, retry_remaining) VALUES (?, ?, 'done', 3)",
                (jobs.STAGE1, f"t{i:04d}"),
            )
        jobs.enqueue_global_consolidation(conn, n)
        return [
            _statements(conn, lambda: rollout_rows(conn, limit=500)),
            _statements(conn, lambda: rollout_rows(conn, filter_text="status:done", limit=500)),
            _statements(conn, lambda: count_rollouts(conn, "status:pending")),
            _statements(conn, lambda: job_rows(conn, limit=500)),
            _statements(conn, lambda: collect_status(conn)),
            _statements(conn, lambda: watermark.fingerprint(conn, "base")),
        ]

    small, large = costs(10), costs(200)
    assert small == large
    assert small == [2, 2, 1, 2, 19, 6]  # as many as the queries written inline before the owners took them
