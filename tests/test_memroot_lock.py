"""The memory-root lock with real threads and processes, and git's index.lock handled only when provably stale."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memtui.adapters.memroot.lock import (
    MemoryRootBusy,
    clear_stale_index_lock,
    held,
    lock_path,
    memory_root_lock,
    read_holder,
)
from tests.support.waiting import HANG_GUARD, wait_until


def test_lock_lives_next_to_the_root_never_inside(tmp_path):
    root = tmp_path / "memories"
    assert lock_path(root) == tmp_path / ".memories.lock"


def test_threads_exclude_each_other_and_the_holder_may_reenter(tmp_path):
    root = tmp_path / "memories"
    got = threading.Event()
    release = threading.Event()

    def hold():
        with memory_root_lock(root, "Phase 2"):
            got.set()
            release.wait(HANG_GUARD)  # held until the test is done with it

    t = threading.Thread(target=hold)
    t.start()
    assert got.wait(HANG_GUARD)
    try:
        with pytest.raises(MemoryRootBusy) as busy, memory_root_lock(root, "approve", wait=0.1):
            pass
        assert "Phase 2 (pid" in str(busy.value) and "approve did not start" in str(busy.value)
        assert busy.value.holder is not None and busy.value.holder.pid == os.getpid()
        assert not held(root)
    finally:
        release.set()
        t.join()
    with memory_root_lock(root, "approve", wait=0.1):
        assert held(root)
        with memory_root_lock(root, "auto-approve", wait=0):  # re-entry by the holding thread
            assert held(root)
        assert held(root)
    assert not held(root) and read_holder(root) is None


def test_a_waiting_action_gets_the_lock_once_it_is_released(tmp_path):
    root = tmp_path / "memories"
    order = []

    def hold():
        with memory_root_lock(root, "save"):
            order.append("first")
            time.sleep(0.3)  # the waiter is (most likely) waiting meanwhile; the order holds either way

    t = threading.Thread(target=hold)
    t.start()
    wait_until(lambda: order, "the first holder")
    with memory_root_lock(root, "approve", wait=HANG_GUARD):  # waits however long the holder takes
        order.append("second")
    t.join()
    assert order == ["first", "second"]


def test_a_killed_holder_never_leaves_the_lock_held(tmp_path):
    root = tmp_path / "memories"
    code = (
        "import sys, time\nfrom pathlib import Path\nfrom memtui.adapters.memroot.lock import memory_root_lock\n"
        "with memory_root_lock(Path(sys.argv[1]), 'Phase 2'):\n    print('held', flush=True)\n    time.sleep(3600)\n"
    )
    proc = subprocess.Popen([sys.executable, "-c", code, str(root)], stdout=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "held"
        holder = read_holder(root)
        assert holder is not None and holder.pid == proc.pid and holder.purpose == "Phase 2"
        with (
            pytest.raises(MemoryRootBusy, match=rf"Phase 2 \(pid {proc.pid}"),
            memory_root_lock(root, "save", wait=0.1),
        ):
            pass
    finally:
        proc.kill()
        proc.wait()
    with memory_root_lock(root, "save", wait=1):  # the kernel dropped the dead holder's lock
        assert read_holder(root) is None or read_holder(root).pid == os.getpid()


def _hold_open(path: Path) -> subprocess.Popen:
    code = "import sys,time; f=open(sys.argv[1],'a'); print('ok',flush=True); time.sleep(3600)"  # until killed
    proc = subprocess.Popen([sys.executable, "-c", code, str(path)], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "ok"
    return proc


def test_index_lock_is_removed_only_when_provably_stale(tmp_path):
    root = tmp_path / "memories"
    (root / ".git").mkdir(parents=True)
    lock = root / ".git" / "index.lock"
    old = time.time() - 120
    with pytest.raises(RuntimeError, match="needs the memory-root lock"):
        clear_stale_index_lock(root, 60)
    with memory_root_lock(root, "test"):
        assert clear_stale_index_lock(root, 60) is False  # none there
        lock.write_bytes(b"")  # fresh and nobody has it open: still maybe a git between close and rename
        with pytest.raises(MemoryRootBusy, match=r"index\.lock in the memory root is 0 s old"):
            clear_stale_index_lock(root, 60, purpose="Phase 2")
        proc = _hold_open(lock)  # a live git process writing the index, for longer than the threshold
        try:
            os.utime(lock, (old, old))
            with pytest.raises(MemoryRootBusy, match=r"holds git's index\.lock"):
                clear_stale_index_lock(root, 60)
            assert lock.exists()
        finally:
            proc.kill()
            proc.wait()
        assert clear_stale_index_lock(root, 60) is True and not lock.exists()  # old, nobody holds it: stale
