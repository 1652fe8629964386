"""A researcher who is a coder of an open round sees neither its results nor the other coders' codes or links
(seed 000 §3.4: the analysts coded independently, without reconciliation); researchers who do not code, and the
coder once the round is closed, see everything."""
from __future__ import annotations

import pytest
from django.test import Client
from rest_framework.test import APIClient

from coding.coding_services import coding_save
from coding.round_services import coder_add, round_close, round_create
from tests.coding.round_support import make_codebook, make_completed_audit
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db


@pytest.fixture
def coded_round(researcher):
    """A 6-excerpt round of one lens coded by the researcher ``bob`` (by account) and an outside coder."""
    codebook = make_codebook("Thematic")
    coding_round = round_create(audit=make_completed_audit(), codebooks=[codebook.id], sample_size=6, seed=3)
    lens = coding_round.lenses.get()
    bob, bob_token = make_researcher("bob")
    bob_coder = coder_add(coding_round=coding_round, lens_id=lens.id, user_id=bob.id)
    outside = coder_add(coding_round=coding_round, lens_id=lens.id, name="outside coder")
    wording = codebook.codes.get(name="WORDING")
    for excerpt in coding_round.excerpts.all():
        coding_save(coder=outside, excerpt_id=excerpt.id, code_ids=[wording.id], memo="the outside coder's memo",
                    confirm=True)
    session = Client()
    session.force_login(bob)
    token = APIClient()
    token.credentials(HTTP_AUTHORIZATION=f"Token {bob_token}")
    return {"round": coding_round, "bob": bob_coder, "outside": outside, "session": session, "token": token}


def exports(round_id: int) -> list[str]:
    return [f"/api/coding-rounds/{round_id}/codings/", f"/api/coding-rounds/{round_id}/codings/?format=csv",
            f"/api/coding-rounds/{round_id}/analysis/", f"/api/coding-rounds/{round_id}/analysis/?format=csv"]


def test_a_coder_of_the_open_round_is_refused_its_results_and_exports(coded_round):
    round_id = coded_round["round"].id
    page = coded_round["session"].get(f"/coding/rounds/{round_id}/results/")
    assert page.status_code == 403
    assert b"open to you when the round is closed" in page.content and b"outside coder" not in page.content
    for client in (coded_round["session"], coded_round["token"]):
        for path in exports(round_id):
            response = client.get(path)
            assert response.status_code == 403, path
            assert b"the round is closed" in response.content and b"outside coder's memo" not in response.content


def test_a_coder_of_the_open_round_sees_only_their_own_invite_link(coded_round):
    detail = coded_round["token"].get(f"/api/coding-rounds/{coded_round['round'].id}/").json()
    links = {coder["name"]: coder["invite_link"] for coder in detail["coders"]}
    assert links["outside coder"] is None
    assert links[coded_round["bob"].name].endswith(f"/c/{coded_round['bob'].invite_token}/")
    assert coded_round["outside"].invite_token not in str(detail)


def test_the_round_admin_page_hides_the_other_coders_links_from_a_coder(coded_round):
    page = coded_round["session"].get(f"/admin/coding/codinground/{coded_round['round'].id}/change/").content.decode()
    assert f"/c/{coded_round['bob'].invite_token}/" in page
    assert coded_round["outside"].invite_token not in page and "Hidden while you code in this open round." in page


def test_researchers_who_do_not_code_see_everything(coded_round, staff_client, api_client):
    round_id = coded_round["round"].id
    assert staff_client.get(f"/coding/rounds/{round_id}/results/").status_code == 200
    for path in exports(round_id):
        assert api_client.get(path).status_code == 200, path
    detail = api_client.get(f"/api/coding-rounds/{round_id}/").json()
    assert all(coder["invite_link"] for coder in detail["coders"])


def test_the_coder_sees_everything_once_the_round_is_closed(coded_round):
    round_close(coding_round=coded_round["round"])
    round_id = coded_round["round"].id
    assert coded_round["session"].get(f"/coding/rounds/{round_id}/results/").status_code == 200
    for path in exports(round_id):
        assert coded_round["token"].get(path).status_code == 200, path
    codings = coded_round["token"].get(f"/api/coding-rounds/{round_id}/codings/").json()["results"]
    assert {row["memo"] for row in codings if row["coder"] == "outside coder"} == {"the outside coder's memo"}
