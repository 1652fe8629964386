"""Benchmark: where the time of a label page goes, part by part, in one process (no HTTP server, no other load).

Builds the same throwaway study as ``annotator_load.py`` (production settings, so no debug query log), takes a few
annotators through consent and the instructions, then has them label every sentence as the page does without
scripts: GET the label page, POST the label (CSRF checks on). Every request goes through Django's handler and
the full middleware stack. Per kind of request it prints the mean wall and CPU time, the SQL statements sent and
their time (BEGIN and COMMIT are not statements Django sends, so they are not counted), and the mean time spent in
each part: the token lookup, the flow step check, the view, the services it calls (storing the label, the next
sentence and the progress), the template, and what the middleware and the handler cost around the view; and how
many requests read the session. An annotator who finishes asks for no analysis here (no worker would compute it).
``--profile`` adds cProfile's 25 costliest functions of the POSTs.

    .venv/bin/python benchmarks/label_breakdown.py --database-url postgres://postgres@127.0.0.1:55432/auditapp

The database must exist (it is migrated); the study is deleted at the end. Without ``--database-url`` (and no
$DATABASE_URL) an SQLite file in a temporary folder is used.
"""
from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import re
import sys
import tempfile
import time
from collections import defaultdict
from contextlib import contextmanager
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

CSRF = re.compile(r'name="csrfmiddlewaretoken" value="([^"]+)"')
ITEM = re.compile(r'name="item" value="(\d+)"')

# (label, module, attribute): what is timed inside a request. A function imported by name into the module that
# calls it is timed where it is called from.
PARTS = [
    ("token lookup", "annotation.access", "participant_by_token"),
    ("flow step check", "annotation.participation", "next_step"),
    ("store the label", "annotation.views", "label_submit"),
    ("next sentence and progress", "annotation.views", "labelling_progress"),
    ("step of the study", "annotation.views", "step_position"),
    ("template", "django.template.backends.django", "Template.render"),
]


class Recorder:
    """What the current request spent, by part (wall and CPU milliseconds), and the totals by kind of request."""

    def __init__(self):
        self.current: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
        self.totals: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(lambda: [0.0, 0.0]))
        self.counts: dict[str, int] = defaultdict(int)

    def add(self, part: str, wall_ms: float, cpu_ms: float) -> None:
        self.current[part][0] += wall_ms
        self.current[part][1] += cpu_ms

    @contextmanager
    def part(self, name: str):
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            yield
        finally:
            self.add(name, (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000)

    def timed(self, part: str, function):
        def wrapper(*args, **kwargs):
            with self.part(part):
                return function(*args, **kwargs)
        return wrapper

    def sql(self, execute, sql, params, many, context):
        self.add("SQL statements", 1, 1)
        with self.part("SQL"):
            return execute(sql, params, many, context)

    def start(self) -> None:
        self.current = defaultdict(lambda: [0.0, 0.0])  # not what the unmeasured pages before spent

    def close(self, kind: str) -> None:
        total, view = self.current["request"], self.current.pop("view (in all)", [0.0, 0.0])
        self.current["middleware and handler"] = [total[0] - view[0], total[1] - view[1]]
        for part, (wall, cpu) in self.current.items():
            self.totals[kind][part][0] += wall
            self.totals[kind][part][1] += cpu
        self.counts[kind] += 1


RECORDER = Recorder()


class ViewTimer:
    """The innermost middleware: runs the view itself, timed, and counts the requests that read the session."""

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request):
        response = self.get_response(request)
        if getattr(request, "session", None) is not None and request.session.accessed:
            RECORDER.add("session read (count)", 1, 1)
        return response

    def process_view(self, request, view, args, kwargs):
        with RECORDER.part("view (in all)"):
            return view(request, *args, **kwargs)


def install_timers() -> None:
    import importlib

    for part, module_name, attribute in PARTS:
        owner = importlib.import_module(module_name)
        *path, name = attribute.split(".")
        for step in path:
            owner = getattr(owner, step)
        setattr(owner, name, RECORDER.timed(part, getattr(owner, name)))


@contextmanager
def measured(kind: str):
    RECORDER.start()
    with RECORDER.part("request"):
        yield
    RECORDER.close(kind)


def label_everything(client, token: str, profiler: cProfile.Profile | None) -> int:
    """Take one annotator from the invite link to the end; returns the number of labels posted."""
    base = f"/p/{token}/"
    client.get(base)
    page = client.get(base + "consent/").content.decode()
    client.post(base + "consent/", {"csrfmiddlewaretoken": CSRF.search(page).group(1), "consent": "yes"})
    page = client.get(base + "instructions/").content.decode()
    client.post(base + "instructions/", {"csrfmiddlewaretoken": CSRF.search(page).group(1)})
    posted = 0
    while True:
        with measured("label GET"):
            response = client.get(base + "label/")
        if response.status_code != 200:
            return posted
        page = response.content.decode()
        form = {"csrfmiddlewaretoken": CSRF.search(page).group(1), "item": ITEM.search(page).group(1), "value": 1,
                "rationale": ""}
        if profiler:
            profiler.enable()
        with measured("label POST"):
            response = client.post(base + "label/", form)
        if profiler:
            profiler.disable()
        if response.status_code != 302:
            raise RuntimeError(f"label POST answered {response.status_code}")
        posted += 1


def report(annotators: int, labels: int) -> list[str]:
    order = ["request", "SQL statements", "SQL", "middleware and handler", *(part for part, _, _ in PARTS),
             "session read (count)"]
    kinds = list(RECORDER.totals)
    lines = [f"{annotators} annotators, {labels} labels; mean per request, ms of wall and CPU time (a count for the "
             "SQL statements and the session reads):", f"{'':<28}" + "".join(f"{kind:>24}" for kind in kinds),
             f"{'':<28}" + "".join(f"{'wall':>12}{'CPU':>12}" for _ in kinds)]
    for part in order:
        cells = []
        for kind in kinds:
            wall, cpu = (value / RECORDER.counts[kind] for value in RECORDER.totals[kind].get(part, [0.0, 0.0]))
            cells.append(f"{wall:>12.2f}{'':>12}" if part.endswith("(count)") or part == "SQL statements"
                         else f"{wall:>12.2f}{cpu:>12.2f}")
        lines.append(f"{part:<28}" + "".join(cells))
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--annotators", type=int, default=10)
    parser.add_argument("--items-per-annotator", type=int, default=20)
    parser.add_argument("--database-url", default=os.environ.get("DATABASE_URL"),
                        help="Default: $DATABASE_URL, else SQLite in a temporary folder.")
    parser.add_argument("--profile", action="store_true", help="Print cProfile's costliest functions of the POSTs.")
    args = parser.parse_args()

    var_dir = tempfile.mkdtemp(prefix="auditapp-label-breakdown-")
    Path(var_dir, "static").mkdir()
    os.environ.update({"DJANGO_SETTINGS_MODULE": "config.settings.production", "SECRET_KEY": "benchmark-only",
                       "SECURE_COOKIES": "0", "SECURE_SSL_REDIRECT": "0", "LOG_LEVEL": "WARNING",
                       "VAR_DIR": var_dir, "STATIC_ROOT": f"{var_dir}/static", "ALLOWED_HOSTS": "testserver"})
    if args.database_url:
        os.environ["DATABASE_URL"] = args.database_url
    from benchmarks.annotator_load import build_study

    study_id, tokens = build_study(annotators=args.annotators, items_per_annotator=args.items_per_annotator,
                                   annotators_per_item=1)
    from django.conf import settings
    from django.db import connection
    from django.test import Client

    settings.MIDDLEWARE = [*settings.MIDDLEWARE, f"{__name__}.ViewTimer"]
    # The manifest of collected static files is not there; the plain storage names the same files.
    settings.STORAGES = {**settings.STORAGES,
                         "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"}}
    # An annotator who finishes asks for the study's analysis; here no worker would compute it.
    settings.ANALYSIS_AUTO_RECOMPUTE = False
    install_timers()
    profiler = cProfile.Profile(time.process_time) if args.profile else None
    try:
        with connection.execute_wrapper(RECORDER.sql):
            labels = sum(label_everything(Client(enforce_csrf_checks=True), token, profiler) for token in tokens)
        print(f"database: {connection.vendor}")
        print("\n".join(report(args.annotators, labels)))
        if profiler:
            out = io.StringIO()
            pstats.Stats(profiler, stream=out).sort_stats("cumulative").print_stats(60)
            print(out.getvalue())
    finally:
        from annotation.models import Study

        Study.objects.filter(pk=study_id).delete()


if __name__ == "__main__":
    main()
