"""The embedded Celery broker: kombu's file-system transport, made safe for a web process and workers that run
for days on one machine (``CELERY_BROKER_URL=filesystem://``, the default; settings ``CELERY_BROKER_TRANSPORT``).

kombu's own transport (5.7) killed the worker within minutes under ``bin/run``: a publisher creates the message
file and only then writes it, while a worker polling ten times a second may take the file in between, read it
empty and raise ``JSONDecodeError``, which Celery treats as an unrecoverable connection error. A message taken by a
worker was also deleted before the task ran, so a worker killed while running it lost it. Here:

- **Atomic publishing.** A message is written under a hidden name that no reader lists, then renamed into the
  queue folder (a rename within one folder is atomic): a reader sees a whole message or none. Nothing is fsynced:
  after a power loss a message may be lost, and the workers' recovery (tasks/recovery.py) sends stuck work again.
- **A reader that survives a bad file.** A message that still cannot be read (a disk fault, a file copied in by
  hand) is logged and moved to ``unreadable/`` beside the queue folder, kept for inspection; the worker goes on.
- **At least once.** A worker takes a message by renaming it into its own claims folder (``claimed/<token>/``),
  which it holds an exclusive ``flock`` on while it lives; the file is deleted when the task is acknowledged (with
  ``acks_late``, after the task ran) or put back when it is rejected or restored. A claims folder whose lock
  anybody can take belongs to a worker that died (``kill -9`` included): the next worker to look moves its
  messages back to the queue. A task may therefore run twice after a crash, never zero times; the app's tasks
  are idempotent. Messages consumed without acknowledgement (Celery's remote-control replies) are deleted on
  reading, as before.
- **Order.** Message names start with a zero-padded wall-clock time in nanoseconds (kombu used milliseconds of a
  monotonic clock without padding, which sorts 999 after 1000 and restarts with the machine).

Only the publishing and taking of messages change; exchange tables (fanout, topic) are kombu's, whose first write
has the same race: an empty table file is read again until its writer has written it.
"""
from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import time
import uuid
from json import JSONDecodeError

from kombu.transport import filesystem
from kombu.transport.virtual import Empty
from kombu.utils.json import dumps, loads

logger = logging.getLogger(__name__)

RECLAIM_EVERY_SECONDS = 10.0
# A hidden file or folder (a message being written, a claims folder being made) older than this was left by a
# process that died in between: it is removed.
STALE_HIDDEN_SECONDS = 600.0
EMPTY_TABLE_RETRIES = 50


class Channel(filesystem.Channel):
    """kombu's file-system channel with atomic publishing, claimed messages and a reader that survives bad files."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._claims: dict[str, str] = {}
        self._claims_folder: str | None = None
        self._claims_lock = None
        self._no_ack_queues: set[str] = set()
        self._next_reclaim = 0.0

    # -------------------------------------------------------------------------------------------- folders

    @property
    def _broker_folder(self) -> str:
        return os.path.dirname(os.path.abspath(self.data_folder_in))

    @property
    def _claimed_root(self) -> str:
        return os.path.join(self._broker_folder, "claimed")

    @property
    def _unreadable_folder(self) -> str:
        return os.path.join(self._broker_folder, "unreadable")

    def _own_claims_folder(self) -> str:
        """This channel's claims folder, made and locked on first use (a channel that only publishes has none)."""
        if self._claims_folder is None:
            # Made and locked under a hidden name, then renamed: a reclaimer never sees it unlocked.
            token = uuid.uuid4().hex
            making = os.path.join(self._claimed_root, f".{token}")
            os.makedirs(making)
            lock = open(os.path.join(making, "owner.lock"), "wb")  # noqa: SIM115 - held while the channel lives
            fcntl.flock(lock, fcntl.LOCK_EX)
            folder = os.path.join(self._claimed_root, token)
            os.rename(making, folder)
            self._claims_folder, self._claims_lock = folder, lock
        return self._claims_folder

    # --------------------------------------------------------------------------------------------- publish

    def _put(self, queue, payload, **kwargs):
        """Put a message on ``queue``: written under a hidden name, then renamed into the queue folder."""
        name = f"{time.time_ns():020d}_{uuid.uuid4().hex}.{queue}.msg"
        partial = os.path.join(self.data_folder_out, f".{uuid.uuid4().hex}.partial")
        try:
            with open(partial, "wb") as file:
                file.write(dumps(payload).encode())
            os.replace(partial, os.path.join(self.data_folder_out, name))
        except OSError as exc:
            with contextlib.suppress(FileNotFoundError):
                os.remove(partial)
            raise filesystem.ChannelError(f"Cannot add a message to {self.data_folder_out!r}: {exc}") from exc

    # ------------------------------------------------------------------------------------------------ take

    def basic_consume(self, queue, no_ack, *args, **kwargs):
        if no_ack:
            self._no_ack_queues.add(queue)
        return super().basic_consume(queue, no_ack, *args, **kwargs)

    def basic_get(self, queue, no_ack=False, **kwargs):
        if no_ack:
            self._no_ack_queues.add(queue)
        return super().basic_get(queue, no_ack=no_ack, **kwargs)

    def _get(self, queue):
        """The oldest readable message of ``queue``, claimed by this channel until it is acknowledged."""
        self._reclaim_orphans()
        wanted = f"{queue}.msg"
        for name in sorted(os.listdir(self.data_folder_in)):
            if name.startswith(".") or name.partition(".")[2] != wanted:
                continue
            claimed = os.path.join(self._own_claims_folder(), name)
            try:
                os.rename(os.path.join(self.data_folder_in, name), claimed)
            except FileNotFoundError:
                continue  # another worker took it first
            try:
                with open(claimed, "rb") as file:
                    payload = loads(file.read().decode())
                delivery_tag = payload["properties"]["delivery_tag"]
            except (OSError, UnicodeDecodeError, JSONDecodeError, ValueError, TypeError, KeyError) as error:
                self._set_aside(claimed, name, error)
                continue
            if queue in self._no_ack_queues:
                os.remove(claimed)
            else:
                self._claims[delivery_tag] = claimed
            return payload
        raise Empty()

    def _set_aside(self, path: str, name: str, error: Exception) -> None:
        os.makedirs(self._unreadable_folder, exist_ok=True)
        kept = os.path.join(self._unreadable_folder, name)
        os.replace(path, kept)
        logger.error("The embedded broker could not read message %s (%s: %s); it is kept in %s and the worker "
                     "goes on", name, type(error).__name__, error, kept)

    # --------------------------------------------------------------------------------- acknowledge, restore

    def basic_ack(self, delivery_tag, multiple=False):
        super().basic_ack(delivery_tag, multiple=multiple)
        self._drop_claim(delivery_tag)

    def basic_reject(self, delivery_tag, requeue=False):
        super().basic_reject(delivery_tag, requeue=requeue)
        self._drop_claim(delivery_tag)

    def _restore(self, message):
        super()._restore(message)
        self._drop_claim(message.delivery_tag)

    def _drop_claim(self, delivery_tag) -> None:
        path = self._claims.pop(delivery_tag, None)
        if path is not None:
            with contextlib.suppress(FileNotFoundError):
                os.remove(path)

    def _reclaim_orphans(self) -> None:
        """Put back on their queues the messages claimed by channels whose process has died (every few seconds)."""
        now = time.monotonic()
        if now < self._next_reclaim:
            return
        self._next_reclaim = now + RECLAIM_EVERY_SECONDS
        self._remove_stale_hidden()
        try:
            folders = os.listdir(self._claimed_root)
        except FileNotFoundError:
            return
        for token in folders:
            folder = os.path.join(self._claimed_root, token)
            if folder == self._claims_folder or token.startswith("."):
                continue
            try:
                lock = open(os.path.join(folder, "owner.lock"), "rb")  # noqa: SIM115 - closed below
            except (FileNotFoundError, NotADirectoryError):
                continue  # being made by its owner right now, or removed by another reclaimer
            with lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue  # its owner is alive
                self._requeue_claims_of(folder)

    def _requeue_claims_of(self, folder: str) -> None:
        """Put a dead channel's claims back. Another reclaimer may be doing the same: whatever it moved or removed
        first is skipped."""
        returned = 0
        try:
            names = os.listdir(folder)
        except FileNotFoundError:
            return
        for name in names:
            if name == "owner.lock":
                continue
            with contextlib.suppress(FileNotFoundError):
                os.rename(os.path.join(folder, name), os.path.join(self.data_folder_in, name))
                returned += 1
        with contextlib.suppress(FileNotFoundError):
            os.remove(os.path.join(folder, "owner.lock"))
        with contextlib.suppress(OSError):  # gone, or not empty: another reclaimer's, or the next look's
            os.rmdir(folder)
        if returned:
            logger.warning("The embedded broker put back %d message(s) taken by a worker that stopped before it "
                           "finished them", returned)

    def _remove_stale_hidden(self) -> None:
        """Remove what a process that died between two steps left hidden: a message it was writing (never
        published), a claims folder it was making (holding no message yet)."""
        older_than = time.time() - STALE_HIDDEN_SECONDS
        for folder in (self.data_folder_in, self._claimed_root):
            try:
                entries = [entry for entry in os.scandir(folder) if entry.name.startswith(".")]
            except FileNotFoundError:
                continue
            for entry in entries:
                with contextlib.suppress(OSError):  # gone meanwhile, or not empty: left for the next look
                    if entry.stat().st_mtime > older_than:
                        continue
                    if entry.is_dir():
                        with contextlib.suppress(FileNotFoundError):
                            os.remove(os.path.join(entry.path, "owner.lock"))
                        os.rmdir(entry.path)
                    else:
                        os.remove(entry.path)

    def close(self):
        """kombu's close restores the unacknowledged messages; the lock is then let go, so a claim left behind (a
        restore that failed) is put back by the next worker that looks."""
        super().close()
        if self._claims_lock is not None:
            self._claims_lock.close()
            self._claims_lock = None

    # ------------------------------------------------------------------------------------------ exchanges

    def get_table(self, exchange):
        """kombu's table, read again while it is an empty file its first writer has created but not yet written."""
        for _ in range(EMPTY_TABLE_RETRIES):
            try:
                return super().get_table(exchange)
            except JSONDecodeError:
                time.sleep(0.01)
        return super().get_table(exchange)


class Transport(filesystem.Transport):
    """kombu's file-system transport with :class:`Channel`."""

    Channel = Channel
    global_state = filesystem.virtual.BrokerState()
