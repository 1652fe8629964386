"""The audit engine: one for every paradigm, and it never names one. What a paradigm's requests are, how their
replies are parsed into judgments, what the manifest says and how the results are analysed come from its entry
in :mod:`auditapp.engine.registry` (the protocol it serves is :mod:`auditapp.engine.protocol`).

Its modules, from the bottom up:

- ``protocol`` (pure: units, judgments, parsed replies, the request builder's protocol), ``registry`` (the one
  place that names the paradigms), ``launch_settings`` (pure: a paradigm's launch setting, declared once),
  ``request_keys`` and ``parse_quality`` (pure);
- ``errors``, ``endpoints`` (an endpoint's client configuration and models), ``planning`` (the request builder,
  planned requests and their keys), ``launch`` (what every paradigm's launch shares), ``sending`` (tasks sent by
  name);
- ``judgments`` (bulk writes), ``reply_cache``, ``conversations`` (multi-turn requests), ``recording`` (a worker's
  leases and the bulk writes of its results), ``control`` (pause, resume, cancel, retry failed),
  ``preparation``, ``recovery``, ``analysis`` (re-parsing and the paradigm's analysis);
- ``runner`` (a work task's loop: claim, send, record), ``selectors`` (reads for the API and dashboards).

A paradigm imports ``protocol``, ``registry``, ``launch_settings``, ``errors``, ``endpoints``, ``planning``,
``launch`` and ``sending`` (its public interface, checked by the import contracts in pyproject.toml); the rest is
the engine's own. Importing this package imports nothing, so a pure module may import ``auditapp.engine.protocol``.

The life of an audit (statuses of :class:`~auditapp.models.Audit`)::

    queued ──prepare──▶ running ──all requests answered or failed──▶ analysing ──▶ completed
              │            │  ▲
              │            ▼  │ resume
              │     paused / stopped (error budget) ──cancel──▶ cancelled
              └──▶ failed (an endpoint could not list its models, a model is not offered, an endpoint
                           refused structured output) ──resume──▶ queued

Structured output (``Audit.structured_output``, off by default): chat models are asked to answer in the JSON
schema the paradigm declares (its registry entry's ``answer_schema``), sent in each endpoint's form
(:mod:`auditapp.llm_clients`, "Structured output"); the form and schema are part of every request's key, the
manifest records them, and the preparation first sends one probe per model so that an endpoint refusing the
schema fails the audit with its reason instead of failing every request.

Every step is idempotent and guarded by a conditional status update, so tasks delivered twice, or run
by two workers, do the work once.
"""
