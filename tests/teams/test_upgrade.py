"""teams.0002: a database from before teams, with a researcher, a study and an audit, comes out with one team that
holds both, the researcher its owner."""
from __future__ import annotations

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor

FIRST = [("annotation", "0010_study_team"), ("auditapp", "0021_audit_corpus_endpoint_teams"),
         ("coding", "0003_codebook_and_round_teams"), ("teams", "0001_teams_memberships_access_log")]


@pytest.mark.django_db(transaction=True)
def test_existing_researchers_own_the_team_of_every_existing_object():
    executor = MigrationExecutor(connection)
    graph = executor.loader.graph
    before = sorted({parent.key for node in FIRST[:3] for parent in graph.node_map[node].parents
                     if parent.key[0] != "teams"} | {FIRST[3]})
    leaves = graph.leaf_nodes()
    executor.migrate(before)
    try:
        old = MigrationExecutor(connection).loader.project_state(before).apps
        user = old.get_model("auth", "User").objects.create(username="old-hand", is_staff=True)
        old.get_model("auth", "User").objects.create(username="participant", is_staff=False)
        study = old.get_model("annotation", "Study").objects.create(name="Old", slug="old")
        audit = old.get_model("auditapp", "Audit").objects.create(name="Old audit", study_id=study.id)
        codebook = old.get_model("coding", "Codebook").objects.create(name="Ours")
        shipped = old.get_model("coding", "Codebook").objects.create(name="Shipped", shipped=True)
    finally:
        executor = MigrationExecutor(connection)
        executor.migrate(leaves)
    from annotation.models import Study
    from auditapp.models import Audit
    from coding.models import Codebook
    from teams.models import Membership, Team

    team = Team.objects.get(name="Everyone before teams")
    assert Study.objects.get(pk=study.id).team == team and Audit.objects.get(pk=audit.id).team == team
    assert Codebook.objects.get(pk=codebook.id).team == team and Codebook.objects.get(pk=shipped.id).team is None
    assert list(Membership.objects.values_list("user_id", "team_id", "role")) == [(user.id, team.id, "owner")]
