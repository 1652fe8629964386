"""The embedded broker's transport (auditapp/embedded_broker.py) with real files: what kombu's own file-system
transport got wrong (a message read before it was written, from a thread of the reading process, as a worker's
heartbeat and recovery threads publish) and what at-least-once delivery needs (a claim kept until the ack, put back
when its owner is gone)."""
from __future__ import annotations

import threading
from pathlib import Path

import pytest
from kombu import Connection

TRANSPORT = "auditapp.embedded_broker:Transport"


@pytest.fixture(autouse=True)
def fresh_broker_state(monkeypatch):
    """kombu keeps the bindings it has declared in a state shared by a process's connections (one folder per
    process in the app); each test has its own folder, so its own state."""
    from kombu.transport import filesystem, virtual

    from auditapp import embedded_broker

    for transport in (embedded_broker.Transport, filesystem.Transport):
        monkeypatch.setattr(transport, "global_state", virtual.BrokerState())


def _options(folder: Path) -> dict:
    for name in ("queue", "control"):
        (folder / name).mkdir(parents=True, exist_ok=True)
    return {"data_folder_in": str(folder / "queue"), "data_folder_out": str(folder / "queue"),
            "control_folder": str(folder / "control"), "polling_interval": 0.0}


def _connection(folder: Path, transport: str = TRANSPORT) -> Connection:
    return Connection("filesystem://", transport=transport, transport_options=_options(folder))


def _consume_while_a_thread_publishes(folder: Path, transport: str, n: int) -> list[int]:
    def produce():
        with _connection(folder, transport) as connection:
            queue = connection.SimpleQueue("q")
            for number in range(n):
                queue.put({"n": number})

    received = []
    with _connection(folder, transport) as connection:
        queue = connection.SimpleQueue("q")
        producer = threading.Thread(target=produce)
        producer.start()
        try:
            while len(received) < n:
                message = queue.get(timeout=10)
                received.append(message.payload["n"])
                message.ack()
        finally:
            producer.join()
    return received


def test_a_reader_never_meets_a_half_written_message(tmp_path):
    received = _consume_while_a_thread_publishes(tmp_path, TRANSPORT, 2000)
    assert received == list(range(2000)), "every message once, in the order sent"
    assert not list((tmp_path / "queue").iterdir())


def test_kombus_own_transport_fails_on_a_message_file_not_yet_written(tmp_path):
    """The failure this transport exists for, shown on kombu's: its writer opens a message file under its final
    name and then writes it, so a reader polling in between meets an empty file and the worker dies on it. The
    race itself comes or not with the machine's load; the empty file it leaves is placed here, so the test is
    the same on every run (if kombu fixes it, this test says so)."""
    from json import JSONDecodeError

    with _connection(tmp_path, "filesystem") as connection:
        queue = connection.SimpleQueue("q")
        (tmp_path / "queue" / f"{0:020d}_{'0' * 32}.q.msg").write_bytes(b"")
        with pytest.raises(JSONDecodeError):
            queue.get(timeout=5)


def test_an_unacknowledged_message_is_kept_and_put_back_when_its_owner_is_gone(tmp_path):
    with _connection(tmp_path) as producer:
        producer.SimpleQueue("q").put({"n": 1})
    owner = _connection(tmp_path)
    message = owner.SimpleQueue("q").get(timeout=5)
    assert message.payload == {"n": 1}
    claimed = list((tmp_path / "claimed").rglob("*.msg"))
    assert len(claimed) == 1 and not list((tmp_path / "queue").iterdir())

    channel = message.channel
    channel._claims_lock.close()  # what the kernel does for a process killed with SIGKILL
    with _connection(tmp_path) as other:
        again = other.SimpleQueue("q").get(timeout=5)
        assert again.payload == {"n": 1}
        again.ack()
    assert not list((tmp_path / "claimed").rglob("*.msg"))
    channel.qos._delivered.clear()  # a dead process restores nothing when it goes
    owner.release()


def test_an_acknowledged_message_is_gone_and_a_rejected_one_is_queued_again(tmp_path):
    with _connection(tmp_path) as connection:
        queue = connection.SimpleQueue("q")
        queue.put({"n": 1})
        queue.put({"n": 2})
        first = queue.get(timeout=5)
        first.ack()
        second = queue.get(timeout=5)
        second.requeue()
        assert queue.get(timeout=5).payload == {"n": 2}
    assert not list((tmp_path / "claimed").rglob("*.msg")), "nothing left claimed"


def test_an_unreadable_message_is_set_aside_and_the_next_one_read(tmp_path, caplog):
    with _connection(tmp_path) as connection:
        queue = connection.SimpleQueue("q")
        (tmp_path / "queue" / f"{0:020d}_{'0' * 32}.q.msg").write_bytes(b"")
        queue.put({"n": 1})
        message = queue.get(timeout=5)
        assert message.payload == {"n": 1}
        message.ack()
    assert [p.name for p in (tmp_path / "unreadable").iterdir()] == [f"{0:020d}_{'0' * 32}.q.msg"]
    assert "could not read message" in caplog.text


def test_a_claims_folder_still_being_made_is_left_to_its_maker(tmp_path):
    """A worker makes its claims folder under a hidden name and locks it before renaming it: a reclaimer that meets
    the hidden folder, not yet locked, leaves it alone."""
    making = tmp_path / "claimed" / ".0123"
    making.mkdir(parents=True)
    (making / "owner.lock").write_bytes(b"")
    (making / f"{0:020d}_{'0' * 32}.q.msg").write_bytes(b"{}")
    with _connection(tmp_path) as connection:
        connection.SimpleQueue("q").put({"n": 1})
        message = connection.SimpleQueue("q").get(timeout=5)
        message.ack()
    assert (making / f"{0:020d}_{'0' * 32}.q.msg").exists(), "not put back"


def test_what_a_dead_process_left_hidden_is_removed_after_a_while(tmp_path):
    import os
    import time

    from auditapp.embedded_broker import STALE_HIDDEN_SECONDS

    (tmp_path / "queue").mkdir(parents=True)
    partial = tmp_path / "queue" / ".0123.partial"
    partial.write_bytes(b'{"half')
    making = tmp_path / "claimed" / ".4567"
    making.mkdir(parents=True)
    (making / "owner.lock").write_bytes(b"")
    fresh = tmp_path / "queue" / ".89ab.partial"
    fresh.write_bytes(b"{")
    old = time.time() - STALE_HIDDEN_SECONDS - 60
    for path in (partial, making):
        os.utime(path, (old, old))
    with _connection(tmp_path) as connection:
        connection.SimpleQueue("q").put({"n": 1})
        connection.SimpleQueue("q").get(timeout=5).ack()
    assert not partial.exists() and not making.exists()
    assert fresh.exists(), "one being written now is left alone"
