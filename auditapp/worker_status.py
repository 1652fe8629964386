"""Whether a Celery worker is alive, for every page a researcher watches.

Each worker's main process writes its heartbeat (``WorkerHeartbeat``) when it is ready and then every
WORK_RECOVERY_SECONDS, from the thread that sends the workers' recovery (tasks/recovery.py), on ``bin/run`` and in
production alike. A page reads the newest heartbeat: older than WORKER_SILENT_SECONDS (or none at all) means no
worker is alive as far as the app can tell, and queued work waits; the pages say so, with how long, rather than show
an audit "waiting" with no reason.
"""
from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.conf import settings
from django.db import DatabaseError
from django.utils import timezone

from auditapp.models import WorkerHeartbeat


@dataclass(frozen=True)
class WorkerStatus:
    alive: bool
    last_seen: datetime | None
    silent_for_s: float | None

    @property
    def message(self) -> str:
        """What a researcher's page says; "" while a worker is alive."""
        if self.alive:
            return ""
        if self.last_seen is None:
            return ("No worker has been seen: queued imports, analyses and audits wait until one runs "
                    "(bin/run starts one; in production, start the Celery workers).")
        assert self.silent_for_s is not None  # worker_status sets it with last_seen
        return (f"No worker has been seen for {_duration(self.silent_for_s)} (last at "
                f"{timezone.localtime(self.last_seen):%Y-%m-%d %H:%M:%S %Z}): queued imports, analyses and audits "
                "wait until a worker runs again.")

    def as_json(self) -> dict:
        return {"alive": self.alive, "last_seen": self.last_seen.isoformat() if self.last_seen else None,
                "silent_for_s": None if self.silent_for_s is None else round(self.silent_for_s, 1),
                "message": self.message}


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    if seconds < 120:
        return f"{seconds} s"
    if seconds < 2 * 3600:
        return f"{seconds // 60} min"
    if seconds < 2 * 86400:
        return f"{seconds // 3600} h"
    return f"{seconds // 86400} days"


def worker_status() -> WorkerStatus:
    """The newest heartbeat of any worker, and whether it is recent enough to count as alive."""
    last_seen = WorkerHeartbeat.objects.order_by("-seen_at").values_list("seen_at", flat=True).first()
    if last_seen is None:
        return WorkerStatus(alive=False, last_seen=None, silent_for_s=None)
    silent_for = max(0.0, (timezone.now() - last_seen).total_seconds())
    return WorkerStatus(alive=silent_for <= settings.WORKER_SILENT_SECONDS, last_seen=last_seen,
                        silent_for_s=silent_for)


def worker_heartbeat(*, hostname: str, starting: bool = False) -> None:
    """Record that the worker ``hostname`` is alive now (``starting``: it has just become ready)."""
    now = timezone.now()
    defaults = {"seen_at": now, **({"started_at": now} if starting else {})}
    WorkerHeartbeat.objects.update_or_create(hostname=hostname[:255], defaults=defaults,
                                             create_defaults={"seen_at": now, "started_at": now})


def researcher_worker_status(request) -> dict:
    """Context processor: ``worker_status`` on researchers' pages (staff users), read only if a page shows it; a
    database that cannot be read leaves it out (the page has its own outage handling)."""
    user = getattr(request, "user", None)
    if not (user is not None and user.is_authenticated and user.is_staff):
        return {}

    def status():
        try:
            return worker_status()
        except DatabaseError:
            return None

    return {"worker_status": status}
