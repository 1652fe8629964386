"""Teams: who may see and change which studies, audits, corpora, endpoints, codebooks and coding rounds.

Every top-level owned object (``annotation.Study``, ``auditapp.Audit``, ``auditapp.Corpus``,
``auditapp.LLMEndpoint``, ``coding.Codebook``, ``coding.CodingRound``) has a ``team``; every model that belongs to
one of them declares ``team_path``, the ORM path from it to its team (Study: ``"team"``, Item: ``"study__team"``,
AuditRequest: ``"audit__team"``...), so :mod:`teams.scoping` filters any queryset with one subquery.

Modules: :mod:`teams.models` (Team, Membership, AccessEvent), :mod:`teams.roles` (the ordered roles, pure),
:mod:`teams.scoping` (what a user sees, their role on an object, the team of a new object), :mod:`teams.api` (the
DRF mixin that scopes a view), :mod:`teams.signals` (the team a new object gets when its creator or parent names it,
and the ONE_LAB membership).

Models of the four apps without a ``team_path``, on purpose, because they belong to no team:

* ``psychometrics.Instrument``: the questionnaires (AQ, SATA...) every study may use, shipped or uploaded once.
* ``auditapp.PromptTemplate``: the paradigms' versioned prompt texts, shared by every audit.
* ``auditapp.ItemVariant``: rewordings of instruments' items for the masked self-report form, shared.
* ``auditapp.LLMReply``: the reply cache, keyed by the hash of a request (endpoint, model, prompt...), shared by
  every audit that sends an identical request; it is reached through an ``AuditRequest``, which is scoped.
* ``auditapp.UpgradeStep`` and ``auditapp.WorkerHeartbeat``: the installation's own bookkeeping.

``coding.Codebook.team`` may be null: a codebook shipped with the app (``codebooks_sync_shipped``), readable by
every researcher and editable by superusers only.
"""
