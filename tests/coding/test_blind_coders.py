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
            f"/api/coding-rounds/{round_id}/analysis/", f"/api/coding-rounds/{round_id}/analysis/?format=csv",
            f"/api/coding-rounds/{round_id}/excerpts/", f"/api/coding-rounds/{round_id}/excerpts/?format=csv"]


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
            assert b"explanation" not in response.content


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
    round_close(coding_round=coded_round["round"], by=None)
    round_id = coded_round["round"].id
    assert coded_round["session"].get(f"/coding/rounds/{round_id}/results/").status_code == 200
    for path in exports(round_id):
        assert coded_round["token"].get(path).status_code == 200, path
    codings = coded_round["token"].get(f"/api/coding-rounds/{round_id}/codings/").json()["results"]
    assert {row["memo"] for row in codings if row["coder"] == "outside coder"} == {"the outside coder's memo"}


def test_a_coder_cannot_close_the_open_round_before_every_coder_has_finished(coded_round):
    """Closing would open the other coders' codes to bob while he can still change his own (by reopening)."""
    coding_round = coded_round["round"]
    response = coded_round["token"].post(f"/api/coding-rounds/{coding_round.id}/close/")
    assert response.status_code == 403 and "once every coder has finished" in response.json()["detail"]
    admin = coded_round["session"].post(f"/admin/coding/codinground/{coding_round.id}/close/", follow=True)
    assert "once every coder has finished" in admin.content.decode()
    coding_round.refresh_from_db()
    assert coding_round.closed_at is None
    assert coded_round["token"].get(f"/api/coding-rounds/{coding_round.id}/codings/").status_code == 403


def test_a_coder_closes_the_round_once_every_coder_has_finished_and_cannot_reopen_it(coded_round):
    coding_round, bob = coded_round["round"], coded_round["bob"]
    for excerpt in coding_round.excerpts.all():
        coding_save(coder=bob, excerpt_id=excerpt.id, code_ids=[], memo="", confirm=True)
    assert coded_round["token"].post(f"/api/coding-rounds/{coding_round.id}/close/").status_code == 200
    assert coded_round["token"].get(f"/api/coding-rounds/{coding_round.id}/codings/").status_code == 200
    response = coded_round["token"].post(f"/api/coding-rounds/{coding_round.id}/reopen/")
    assert response.status_code == 403 and "another researcher" in response.json()["detail"]
    coded_round["session"].post(f"/admin/coding/codinground/{coding_round.id}/reopen/")
    coding_round.refresh_from_db()
    assert coding_round.closed_at is not None


def test_another_researcher_closes_and_reopens_the_round(coded_round, api_client):
    round_id = coded_round["round"].id
    assert api_client.post(f"/api/coding-rounds/{round_id}/close/").json()["closed_at"] is not None
    assert api_client.post(f"/api/coding-rounds/{round_id}/reopen/").json()["closed_at"] is None


def test_a_coder_adding_a_coder_to_the_open_round_is_not_given_the_new_link(coded_round, api_client):
    """The link would open the new coder's codes to bob once they code; a researcher who does not code sends it."""
    coding_round = coded_round["round"]
    lens = coding_round.lenses.get()
    added = coded_round["token"].post(f"/api/coding-rounds/{coding_round.id}/coders/",
                                      {"lens": lens.id, "name": "third coder"}, format="json")
    assert added.status_code == 201 and added.json()["invite_link"] is None
    third = coding_round.coders.get(name="third coder")
    assert third.invite_token not in added.content.decode()
    detail = api_client.get(f"/api/coding-rounds/{coding_round.id}/").json()
    assert next(c for c in detail["coders"] if c["name"] == "third coder")["invite_link"].endswith(
        f"/c/{third.invite_token}/")


def test_the_round_admin_page_leaves_out_results_and_exports_links_for_a_coder(coded_round, staff_client):
    path = f"/admin/coding/codinground/{coded_round['round'].id}/change/"
    page = coded_round["session"].get(path).content.decode()
    assert "codings (CSV)" not in page and 'id="blind-note"' in page
    assert "codings (CSV)" in staff_client.get(path).content.decode()


def test_a_coder_cannot_leave_the_open_round_to_read_it(coded_round, api_client):
    """Removing their own coder row (nothing coded yet) would make bob a researcher who does not code in the round,
    free to read the others' codes and be added back: refused in the API (403) and the admin; another researcher
    can remove him."""
    coding_round, bob = coded_round["round"], coded_round["bob"]
    response = coded_round["token"].delete(f"/api/coding-rounds/{coding_round.id}/coders/{bob.id}/")
    assert response.status_code == 403 and "another researcher can remove you" in response.json()["detail"]
    page = coded_round["session"].get(f"/admin/coding/codinground/{coding_round.id}/change/").content.decode()
    assert f"/coders/{bob.id}/remove/" not in page
    admin = coded_round["session"].post(f"/admin/coding/codinground/{coding_round.id}/coders/{bob.id}/remove/",
                                        follow=True)
    assert "another researcher can remove you" in admin.content.decode()
    assert coding_round.coders.filter(pk=bob.pk).exists()
    assert coded_round["token"].get(f"/api/coding-rounds/{coding_round.id}/codings/").status_code == 403
    assert api_client.delete(f"/api/coding-rounds/{coding_round.id}/coders/{bob.id}/").status_code == 204
