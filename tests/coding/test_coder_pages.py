"""Coders' pages with Django's client: who reaches what (a link reaches only its coder's pages, an account only its
own Coder row, another round's excerpt is 404, guessing shares the annotators' throttle), the intro, the excerpt
page and its show_* flags, the form path without scripts (save and go on, resume at the first unconfirmed excerpt,
done), the JSON save endpoint and its refusals, and a closed round."""
from __future__ import annotations

import json
import re

import pytest
from django.core.cache import cache
from django.test import Client
from django.utils import timezone

from annotation.access import BAD_TOKEN_LIMIT
from coding.models import ExcerptCoding
from tests.coding.coder_rounds import add_coder, code_ids, make_codebook, make_round
from tests.factories import make_participant_user, make_researcher
from tests.participant.helpers import flow_study, invite

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def clear_cache():
    cache.clear()
    yield
    cache.clear()


def _link(coder) -> str:
    return f"/c/{coder.invite_token}/"


def _excerpt_url(coder, excerpt) -> str:
    return f"{_link(coder)}excerpts/{excerpt.id}/"


def _save(client, coder, excerpt, **body):
    return client.post(f"{_excerpt_url(coder, excerpt)}save/", json.dumps(body), content_type="application/json")


def _stored(coder) -> dict[int, tuple[list[str], str, bool]]:
    return {coding.excerpt.position: (sorted(code.name for code in coding.codes.all()), coding.memo,
                                      coding.confirmed_at is not None)
            for coding in ExcerptCoding.objects.filter(coder=coder).select_related("excerpt")}


def test_the_link_opens_the_intro_then_resumes_at_the_first_unconfirmed_excerpt():
    round_ = make_round(3)
    coder = add_coder(round_, "Coder A")
    client = Client()
    assert client.get(_link(coder))["Location"] == f"{_link(coder)}intro/"
    intro = client.get(f"{_link(coder)}intro/").content.decode()
    first, second, third = round_.excerpts.order_by("position")
    for text in ("Thematic content and error type", "WORDING", "The explanation turns on stereotypes.",
                 "an example of tone", "<kbd>w</kbd>", "written for this app", "You will see 3 excerpts",
                 f'id="start-coding" href="{_excerpt_url(coder, first)}"', "<kbd>Enter</kbd>", "<kbd>Escape</kbd>"):
        assert text in intro
    # Without scripts: the form saves and goes on; Previous/Next save without confirming.
    wording, tone = code_ids(round_, "WORDING", "TONE")
    answer = client.post(_excerpt_url(coder, first), {"code": [wording, tone], "memo": "lexical", "go": "confirm"})
    assert answer.status_code == 302 and answer["Location"] == _excerpt_url(coder, second)
    answer = client.post(_excerpt_url(coder, second), {"code": [tone], "memo": "", "go": "next"})
    assert answer["Location"] == _excerpt_url(coder, third)
    assert _stored(coder) == {0: (["TONE", "WORDING"], "lexical", True), 1: (["TONE"], "", False)}
    # Another device opening the link resumes at the first excerpt not confirmed, with its codes ticked.
    elsewhere = Client()
    assert elsewhere.get(_link(coder))["Location"] == _excerpt_url(coder, second)
    page = elsewhere.get(_excerpt_url(coder, second)).content.decode()
    assert f'value="{tone}" id="code-{tone}" data-key="t" checked' in page
    assert f'value="{wording}" id="code-{wording}" data-key="w" aria-describedby' in page
    assert '<p class="progress" id="coded-count">1 of 3 coded</p>' in page and "Excerpt 2 of 3" in page
    answer = client.post(_excerpt_url(coder, second), {"code": [tone], "memo": "m", "go": "previous"})
    assert answer["Location"] == _excerpt_url(coder, first)
    client.post(_excerpt_url(coder, second), {"code": [tone], "go": "confirm"})
    # The last one confirmed: the done page, which links back to every excerpt.
    answer = client.post(_excerpt_url(coder, third), {"memo": "", "go": "confirm"})
    assert answer["Location"] == f"{_link(coder)}done/"
    done = client.get(f"{_link(coder)}done/").content.decode()
    assert "all 3 excerpts are coded" in done and _excerpt_url(coder, first) in done
    assert client.get(_link(coder))["Location"] == f"{_link(coder)}done/"
    coder.refresh_from_db()
    assert coder.completed_at is not None
    assert _stored(coder)[2] == ([], "", True)


def test_the_excerpt_page_shows_the_model_answer_and_hides_what_the_round_hides():
    round_ = make_round(2)
    coder = add_coder(round_, "Coder A")
    second = round_.excerpts.get(position=1)  # model-b, zero_shot, label 1, reference 0
    page = Client().get(_excerpt_url(coder, second)).content.decode()
    for text in ("Before 1.", "<strong>Target sentence 1.</strong>", "After 1.", "1 (positive: ableist)",
                 "Explanation 1: the words decide.", '<fieldset id="codes" tabindex="-1">', "<legend>Codes",
                 '<label for="memo">'):
        assert text in page
    for hidden in ("model-b", "zero_shot", "Weighted ground truth", "0 (negative: not ableist)"):
        assert hidden not in page
    round_.show_model = round_.show_condition = round_.show_reference = True
    round_.save()
    page = Client().get(_excerpt_url(coder, second)).content.decode()
    assert ('<dd id="model-name">model-b</dd>' in page and '<dd id="condition">zero_shot</dd>' in page
            and '<dd id="reference-label">0 (negative: not ableist)</dd>' in page)


def test_the_form_path_refuses_a_code_of_another_codebook_and_keeps_what_was_sent():
    round_ = make_round(1)
    coder = add_coder(round_, "Coder A")
    excerpt = round_.excerpts.get()
    foreign = make_codebook("Other lens", codes=(("PATHOLOGIZATION", "x"),)).codes.get().id
    (tone,) = code_ids(round_, "TONE")
    page = Client().post(_excerpt_url(coder, excerpt), {"code": [tone, foreign], "memo": "kept", "go": "confirm"})
    html = page.content.decode()
    assert page.status_code == 400 and f"code {foreign} is not in this coder&#x27;s codebook" in html
    assert f'id="code-{tone}" data-key="t" checked' in html and ">kept</textarea>" in html
    assert Client().post(_excerpt_url(coder, excerpt), {"code": ["1.5"], "go": "confirm"}).status_code == 400
    assert Client().post(_excerpt_url(coder, excerpt), {"go": "elsewhere"}).status_code == 400
    assert not ExcerptCoding.objects.exists()


def test_the_save_endpoint_saves_confirms_and_names_what_it_refuses():
    round_ = make_round(2)
    coder = add_coder(round_, "Coder A")
    first, second = round_.excerpts.order_by("position")
    wording, stereotypes = code_ids(round_, "WORDING", "STEREOTYPES")
    client = Client()
    answer = _save(client, coder, first, codes=[wording], memo="a")
    assert answer.status_code == 200
    assert answer.json() == {"confirmed": False, "revision": 1, "progress": {"confirmed": 0, "total": 2},
                             "next_url": _excerpt_url(coder, second), "superseded": False}
    answer = _save(client, coder, first, codes=[wording, stereotypes], memo="ab", confirm=True)
    assert answer.json()["confirmed"] is True and answer.json()["progress"] == {"confirmed": 1, "total": 2}
    answer = _save(client, coder, second, codes=[], memo="", confirm=True)
    assert answer.json()["next_url"] == f"{_link(coder)}done/"  # after the last one: done
    assert _stored(coder) == {0: (["STEREOTYPES", "WORDING"], "ab", True), 1: ([], "", True)}
    for body, problem in (({"codes": "1"}, "codes: must be a list of at most 35 code ids"),
                          ({"codes": list(range(1, 37))}, "codes: must be a list of at most 35 code ids"),
                          ({"codes": [], "writer": "\ud800"}, "writer: contains an invalid character"),
                          ({"codes": [], "writer": "a\u0000"}, "writer: contains a NUL character"),
                          ({"codes": [], "writer": "a" * 65}, "writer: must be at most 64 letters"),
                          ({"codes": [True]}, "codes[0]: must be a whole number"),
                          ({"codes": [], "memo": 3}, "memo: must be a text"),
                          ({"codes": [], "confirm": "yes"}, "confirm: must be true or false"),
                          ({"codes": [], "memo": "x" * 10_001}, "The memo has 10,001 characters")):
        refused = _save(client, coder, first, **body)
        assert refused.status_code == 400 and problem in refused.json()["error"], body
    not_json = client.post(f"{_excerpt_url(coder, first)}save/", "{", content_type="application/json")
    assert not_json.status_code == 400 and "body: not valid JSON" in not_json.json()["error"]
    assert _stored(coder)[0] == (["STEREOTYPES", "WORDING"], "ab", True)
    assert client.get(f"{_excerpt_url(coder, first)}save/").status_code == 405


def test_saves_need_the_csrf_token():
    round_ = make_round(1)
    coder = add_coder(round_, "Coder A")
    strict = Client(enforce_csrf_checks=True)
    excerpt = round_.excerpts.get()
    assert _save(strict, coder, excerpt, codes=[], memo="x").status_code == 403
    assert strict.post(_excerpt_url(coder, excerpt), {"go": "confirm"}).status_code == 403
    assert not ExcerptCoding.objects.exists()


def test_a_link_reaches_only_its_own_coders_pages():
    round_, other_round = make_round(2), make_round(2)
    coder, colleague = add_coder(round_, "Coder A"), add_coder(round_, "Coder B")
    stranger = add_coder(other_round, "Coder C")
    (tone,) = code_ids(round_, "TONE")
    first = round_.excerpts.get(position=0)
    _save(Client(), colleague, first, codes=[tone], memo="B's private memo", confirm=True)
    client = Client()
    page = client.get(_excerpt_url(coder, first)).content.decode()
    assert "B&#x27;s private memo" not in page and " checked" not in page and "Coder B" not in page
    assert "0 of 2 coded" in page  # the colleague's confirmation is not this coder's progress
    # Another round's excerpt through this link: 404, for pages and saves; nothing stored.
    foreign = other_round.excerpts.get(position=0)
    assert client.get(_excerpt_url(coder, foreign)).status_code == 404
    assert _save(client, coder, foreign, codes=[], memo="x").status_code == 404
    assert client.post(_excerpt_url(coder, foreign), {"go": "confirm"}).status_code == 404
    assert not ExcerptCoding.objects.filter(coder=coder).exists()
    assert not ExcerptCoding.objects.filter(excerpt__round=other_round).exists()
    assert client.get(_excerpt_url(stranger, foreign)).status_code == 200  # its own coder's link does
    # A coder's link reaches nothing of the researcher side, nor the account route of its round.
    assert client.get(f"/api/audits/{round_.audit_id}/").status_code == 401
    assert client.get("/admin/")["Location"].startswith("/admin/login/")
    assert client.get(f"/coding/rounds/{round_.id}/code/")["Location"].startswith("/admin/login/")


def test_unknown_coder_links_share_the_annotators_throttle():
    round_ = make_round(1)
    coder = add_coder(round_, "Coder A")
    (participant,) = invite(flow_study())
    client = Client()
    for n in range(BAD_TOKEN_LIMIT // 2):
        assert client.get(f"/c/guess-{n}/").status_code == 404
        assert client.get(f"/p/guess-{n}/").status_code == 404
    for url in ("/c/guess-more/", "/p/guess-more/", "/c/guess-more/excerpts/1/save/"):
        refused = client.get(url) if not url.endswith("save/") else client.post(url)
        assert refused.status_code == 429 and int(refused["Retry-After"]) > 0, url
    # Valid links behind the same address are still served.
    assert client.get(_link(coder)).status_code == 302
    assert client.get(f"/p/{participant.invite_token}/").status_code == 302
    assert Client(REMOTE_ADDR="10.9.9.9").get("/c/guess-elsewhere/").status_code == 404


def test_an_account_reaches_the_round_only_through_its_own_coder_row():
    round_, other_round = make_round(2), make_round(1)
    researcher, _ = make_researcher("rita")
    colleague, _ = make_researcher("carl")
    coder = add_coder(round_, "Rita", user=researcher)
    add_coder(other_round, "Carl", user=colleague)
    base = f"/coding/rounds/{round_.id}/code/"
    client = Client()
    client.force_login(researcher)
    assert client.get(base)["Location"] == f"{base}intro/"
    first = round_.excerpts.get(position=0)
    (intent,) = code_ids(round_, "INTENT")
    assert client.post(f"{base}excerpts/{first.id}/", {"code": [intent], "go": "confirm"})["Location"] == \
        f"{base}excerpts/{round_.excerpts.get(position=1).id}/"
    answer = client.post(f"{base}excerpts/{first.id}/save/", json.dumps({"codes": [intent], "memo": "m"}),
                         content_type="application/json")
    assert answer.status_code == 200 and answer.json()["next_url"].startswith(base)
    assert _stored(coder) == {0: (["INTENT"], "m", True)}
    assert 'href="' + f"{base}intro/" + '"' in client.get(f"{base}excerpts/{first.id}/").content.decode()
    # Not a coder of the other round (even as staff), its excerpts not through this round: 404.
    assert client.get(f"/coding/rounds/{other_round.id}/code/").status_code == 404
    assert client.get(f"{base}excerpts/{other_round.excerpts.get().id}/").status_code == 404
    # Another staff account, a non-staff account and a visitor: 404, 404, the login page.
    carl = Client()
    carl.force_login(colleague)
    assert carl.get(base).status_code == 404 and carl.get(f"{base}excerpts/{first.id}/").status_code == 404
    outsider = Client()
    outsider.force_login(make_participant_user())
    assert outsider.get(base).status_code == 404
    assert Client().get(f"{base}excerpts/{first.id}/")["Location"].startswith("/admin/login/?next=")
    # A round id beyond any database column: 404, not an overflow.
    assert client.get(f"/coding/rounds/{2**70}/code/").status_code == 404


def test_a_save_after_the_session_ended_or_under_another_account_is_refused_in_json_the_page_can_read():
    """The page's script gets JSON it can act on (keep the change, send it after the coder logs in), not the
    login page followed as if it were a save's answer."""
    round_ = make_round(1)
    researcher, _ = make_researcher("rita")
    coder = add_coder(round_, "Rita", user=researcher)
    excerpt = round_.excerpts.get()
    answer = Client().post(f"/coding/rounds/{round_.id}/code/excerpts/{excerpt.id}/save/",
                           json.dumps({"codes": [], "memo": "kept on the page"}), content_type="application/json",
                           HTTP_ACCEPT="application/json")
    assert answer.status_code == 401 and answer.json()["logged_out"] is True
    assert "log in again" in answer.json()["error"]
    # Another account that is not a coder of the round logged in meanwhile: 403 the page can act on, not a 404.
    stranger = Client()
    stranger.force_login(make_researcher("sam")[0])
    refused = stranger.post(f"/coding/rounds/{round_.id}/code/excerpts/{excerpt.id}/save/",
                            json.dumps({"codes": [], "memo": "kept on the page", "coder": coder.id}),
                            content_type="application/json", HTTP_ACCEPT="application/json")
    assert refused.status_code == 403 and refused.json()["wrong_coder"] is True
    assert stranger.get(f"/coding/rounds/{round_.id}/code/excerpts/{excerpt.id}/").status_code == 404
    assert not ExcerptCoding.objects.filter(coder=coder).exists()


def test_a_save_from_a_page_of_another_coder_is_refused():
    """One browser, two researchers: Rita's page still saving after Carl logged in reaches Carl's coder row; the
    coder id the page sends tells them apart, and nothing is stored for Carl."""
    round_ = make_round(1)
    rita, _ = make_researcher("rita")
    carl, _ = make_researcher("carl")
    rita_coder, carl_coder = add_coder(round_, "Rita", user=rita), add_coder(round_, "Carl", user=carl)
    excerpt = round_.excerpts.get()
    client = Client()
    client.force_login(carl)
    url = f"/coding/rounds/{round_.id}/code/excerpts/{excerpt.id}/save/"
    page = client.get(f"/coding/rounds/{round_.id}/code/excerpts/{excerpt.id}/").content.decode()
    assert f'data-coder="{carl_coder.id}"' in page
    answer = client.post(url, json.dumps({"codes": [], "memo": "Rita's memo", "coder": rita_coder.id}),
                         content_type="application/json")
    assert answer.status_code == 403 and answer.json()["wrong_coder"] is True
    assert not ExcerptCoding.objects.exists()
    assert client.post(url, json.dumps({"codes": [], "memo": "Carl's", "coder": carl_coder.id}),
                       content_type="application/json").status_code == 200
    # The form without scripts too: Rita's page submitted under Carl's session stores nothing.
    form = client.post(f"/coding/rounds/{round_.id}/code/excerpts/{excerpt.id}/",
                       {"memo": "Rita's memo", "go": "confirm", "revision": "1", "coder": str(rita_coder.id)})
    assert form.status_code == 403 and "opened by another account" in form.content.decode()
    assert list(ExcerptCoding.objects.values_list("coder_id", "memo", "confirmed_at")) == [(carl_coder.id, "Carl's",
                                                                                             None)]
    assert f'name="coder" value="{carl_coder.id}"' in page


def test_a_save_overtaken_by_the_same_pages_later_save_answers_what_is_stored():
    """The page compares the stored state with what it shows and sends its own again if they differ."""
    round_ = make_round(1)
    coder = add_coder(round_, "Coder A")
    excerpt = round_.excerpts.get()
    wording, tone = code_ids(round_, "WORDING", "TONE")
    client = Client()
    later = _save(client, coder, excerpt, codes=[tone, wording], memo="later", writer="page-1", seq=2)
    assert later.json()["superseded"] is False and "stored" not in later.json()
    earlier = _save(client, coder, excerpt, codes=[wording], memo="earlier", writer="page-1", seq=1)
    assert earlier.status_code == 200 and earlier.json()["superseded"] is True
    assert earlier.json()["stored"] == {"codes": sorted([wording, tone]), "memo": "later"}
    assert _stored(coder) == {0: (["TONE", "WORDING"], "later", False)}


def test_a_closed_round_shows_the_closed_page_and_refuses_writes():
    round_ = make_round(2)
    coder = add_coder(round_, "Coder A")
    first = round_.excerpts.get(position=0)
    round_.closed_at = timezone.now()
    round_.save()
    client = Client()
    for url in (_link(coder), f"{_link(coder)}intro/", _excerpt_url(coder, first), f"{_link(coder)}done/"):
        page = client.get(url)
        assert page.status_code == 200 and "This coding round is closed" in page.content.decode(), url
    refused = _save(client, coder, first, codes=code_ids(round_, "TONE"), memo="late")
    assert refused.status_code == 409 and refused.json()["closed"] is True
    form = client.post(_excerpt_url(coder, first), {"go": "confirm"})
    assert form.status_code == 409 and "This coding round is closed" in form.content.decode()
    assert not ExcerptCoding.objects.exists()


def test_a_round_closed_while_a_save_waits_for_the_lock_is_answered_409(monkeypatch):
    """The service sees the round closed under the coder's lock (tested in test_coder_services); the pages turn
    its RoundClosed into 409 JSON for scripts and the closed page for the form."""
    from coding import views
    from coding.coding_services import RoundClosed

    def closed_meanwhile(**kwargs):
        raise RoundClosed("closed")

    monkeypatch.setattr(views, "coding_save", closed_meanwhile)
    round_ = make_round(1)
    coder = add_coder(round_, "Coder A")
    excerpt = round_.excerpts.get()
    refused = _save(Client(), coder, excerpt, codes=[], memo="")
    assert refused.status_code == 409 and refused.json()["closed"] is True
    form = Client().post(_excerpt_url(coder, excerpt), {"go": "confirm"})
    assert form.status_code == 409 and "This coding round is closed" in form.content.decode()


def test_a_save_based_on_an_older_revision_is_refused_and_answers_what_is_stored():
    """Device A loaded the excerpt at revision 0 and went offline; device B saved (revision 1); A's late save
    based on revision 0 must not overwrite B's codes."""
    round_ = make_round(1)
    coder = add_coder(round_, "Coder A")
    (only,) = round_.excerpts.all()
    wording, stereotypes = code_ids(round_, "WORDING", "STEREOTYPES")
    device_b = _save(Client(), coder, only, codes=[stereotypes], memo="B's memo", revision=0)
    assert device_b.status_code == 200 and device_b.json()["revision"] == 1
    device_a = _save(Client(), coder, only, codes=[wording], memo="A's memo", revision=0)
    assert device_a.status_code == 409 and device_a.json()["conflict"] is True
    assert device_a.json()["stored"] == {"codes": [stereotypes], "memo": "B's memo", "revision": 1,
                                         "confirmed": False}
    assert _stored(coder) == {0: (["STEREOTYPES"], "B's memo", False)}
    assert _save(Client(), coder, only, codes=[wording], memo="A again", revision=1).json()["revision"] == 2
    bad = _save(Client(), coder, only, codes=[], revision="1")
    assert bad.status_code == 400 and "revision" in bad.json()["error"]


def test_the_form_without_scripts_shows_the_stored_state_and_what_it_could_not_save():
    round_ = make_round(2)
    coder = add_coder(round_, "Coder A")
    first = round_.excerpts.get(position=0)
    wording, stereotypes = code_ids(round_, "WORDING", "STEREOTYPES")
    _save(Client(), coder, first, codes=[stereotypes], memo="saved elsewhere", revision=0)
    page = Client().post(_excerpt_url(coder, first), {"code": [str(wording)], "memo": "typed here",
                                                       "go": "confirm", "revision": "0"})
    html = page.content.decode()
    assert page.status_code == 409 and 'id="conflict-sent"' in html
    assert "Not saved: codes WORDING." in html and "typed here" in html
    ticked = set(re.findall(r'<input type="checkbox" name="code" value="(\d+)"[^>]* checked', html))
    assert ticked == {str(stereotypes)}
    assert ">saved elsewhere</textarea>" in html and 'name="revision" value="1"' in html
    assert _stored(coder) == {0: (["STEREOTYPES"], "saved elsewhere", False)}
