"""Researchers run a round from the admin: drawn from the audit dashboard's link with the shipped lenses
preselected, coders added (account or outside, each with an invite link), mappings, close and reopen; every
problem a service names is shown, and nothing is stored."""
from __future__ import annotations

import re

import pytest
from django.contrib.auth import get_user_model
from django.test import Client

from auditapp.models import Audit
from coding.codebook_selectors import codebook_defaults_latest
from coding.models import CodeMapping, Coder, CodingRound
from tests.auditapp.test_audit_dashboard_view import COMPLETED_PLAN, build_audit
from tests.factories import make_researcher

pytestmark = pytest.mark.django_db

ADD = "/admin/coding/codinground/add/"


def draw(staff_client, audit, **fields):
    defaults = {"name": "Pilot", "sample_size": "12", "allocation": "proportional", "eligible": "parsed",
                "seed": "7", **{f"lens_{n + 1}": str(codebook.id) for n, codebook in
                                enumerate(codebook_defaults_latest()[:2])}}
    return staff_client.post(f"{ADD}?audit={audit.id}", {**defaults, **fields})


def test_the_dashboard_of_a_completed_audit_links_to_a_new_round(staff_client, audit):
    page = staff_client.get(f"/audits/{audit.id}/dashboard/").content.decode()
    assert f'href="{ADD}?audit={audit.id}"' in page
    Audit.objects.filter(pk=audit.pk).update(status=Audit.Status.PAUSED)
    assert "New error-analysis round" not in staff_client.get(f"/audits/{audit.id}/dashboard/").content.decode()


def test_the_add_form_preselects_the_shipped_lenses_and_lists_completed_audits_only(staff_client, audit):
    paused = build_audit(COMPLETED_PLAN, status=Audit.Status.PAUSED)
    picker = staff_client.get(ADD).content.decode()
    assert f'value="{audit.id}"' in picker and f'value="{paused.id}"' not in picker
    form = staff_client.get(f"{ADD}?audit={audit.id}").content.decode()
    shipped = codebook_defaults_latest()
    assert [codebook.name for codebook in shipped] == [
        "Thematic content and error type", "Disability-studies linguistic features", "Reasoning structure"]
    for slot, codebook in enumerate(shipped, start=1):
        select = re.search(rf'<select name="lens_{slot}".*?</select>', form, re.S).group(0)
        assert f'<option value="{codebook.id}" selected>' in select
    assert 'name="sample_size" value="99"' in form
    assert staff_client.get(f"{ADD}?audit={paused.id}").status_code == 400


def test_the_error_browsers_selection_starts_the_form(staff_client, audit):
    model = audit.models.get(model="model-b")
    form = staff_client.get(f"{ADD}?audit={audit.id}&eligible=disagree&models_included={model.id}"
                            "&conditions_included=cot").content.decode()
    assert re.search(r'<option value="disagree" selected>', form)
    assert re.search(rf'<input type="checkbox" name="models_included" value="{model.id}"[^>]* checked', form)
    assert re.search(r'<input type="checkbox" name="conditions_included" value="cot"[^>]* checked', form)
    other = audit.models.get(model="model-a")
    assert not re.search(rf'<input type="checkbox" name="models_included" value="{other.id}"[^>]* checked', form)
    # A value a round cannot take is not carried over; the form checks everything again when it is sent.
    form = staff_client.get(f"{ADD}?audit={audit.id}&eligible=everything").content.decode()
    assert re.search(r'<option value="parsed" selected>', form)


def test_a_round_is_drawn_from_the_form(staff_client, audit):
    response = draw(staff_client, audit, show_condition="on")
    coding_round = CodingRound.objects.get()
    assert response.status_code == 302 and response.url == f"/admin/coding/codinground/{coding_round.id}/change/"
    assert (coding_round.excerpts.count(), coding_round.seed, coding_round.show_condition) == (12, 7, True)
    assert [lens.codebook for lens in coding_round.lenses.order_by("position")] == codebook_defaults_latest()[:2]
    page = staff_client.get(response.url).content.decode()
    assert "12 of " in page and "seed 7" in page and "No coders yet." in page


def test_every_problem_is_shown_and_nothing_is_stored(staff_client, audit):
    model = audit.models.order_by("position").first()
    response = draw(staff_client, audit, sample_size="100000", models_included=[str(model.id)])
    page = response.content.decode()
    assert response.status_code == 400 and 'id="round-problems"' in page
    assert "larger than the" in page and "eligible replies" in page
    assert not CodingRound.objects.exists()


def test_coders_mappings_and_closing_from_the_round_page(staff_client, audit):
    draw(staff_client, audit)
    coding_round = CodingRound.objects.get()
    base = f"/admin/coding/codinground/{coding_round.id}"
    lens_1, lens_2 = coding_round.lenses.order_by("position")
    bob, _ = make_researcher("bob")
    assert staff_client.post(f"{base}/coders/", {"lens": lens_1.id, "name": "Analyst 2"}).status_code == 302
    assert staff_client.post(f"{base}/coders/", {"lens": lens_2.id, "user": bob.id}).status_code == 302
    refused = staff_client.post(f"{base}/coders/", {"lens": lens_2.id, "name": "Analyst 2"})
    assert refused.status_code == 400 and "already has a coder named" in refused.content.decode()
    page = staff_client.get(f"{base}/change/").content.decode()
    for coder in Coder.objects.filter(round=coding_round):
        assert f'value="http://testserver/c/{coder.invite_token}/"' in page

    stereotypes = [lens.codebook.codes.get(name="STEREOTYPES").id for lens in (lens_1, lens_2)]
    assert staff_client.post(f"{base}/mappings/", {"name": "Stereotypes", "codes": stereotypes}).status_code == 302
    one_lens = staff_client.post(f"{base}/mappings/", {"name": "Wording only", "codes": [
        lens_1.codebook.codes.get(name="WORDING").id, lens_1.codebook.codes.get(name="TONE").id]})
    assert one_lens.status_code == 400 and "two" in one_lens.content.decode()
    mapping = CodeMapping.objects.get(round=coding_round)
    assert (mapping.name, sorted(mapping.codes.values_list("id", flat=True))) == ("Stereotypes", sorted(stereotypes))
    assert staff_client.post(f"{base}/mappings/{mapping.id}/remove/").status_code == 302
    assert not CodeMapping.objects.exists()

    outside = Coder.objects.get(round=coding_round, name="Analyst 2")
    assert staff_client.post(f"{base}/coders/{outside.id}/remove/").status_code == 302
    assert not Coder.objects.filter(pk=outside.pk).exists()
    assert staff_client.post(f"{base}/close/").status_code == 302
    coding_round.refresh_from_db()
    assert coding_round.closed_at is not None
    assert staff_client.post(f"{base}/reopen/").status_code == 302
    coding_round.refresh_from_db()
    assert coding_round.closed_at is None
    assert staff_client.get(f"{base}/close/").status_code == 403


def test_a_round_page_of_an_id_that_is_not_one_is_a_404(staff_client):
    for object_id in ("abc", "99999", str(2**70)):
        assert staff_client.get(f"/admin/coding/codinground/{object_id}/change/").status_code == 404, object_id


def test_the_round_admin_is_for_researchers_only(client, audit):
    assert client.get(ADD).status_code == 302
    assert client.get(f"{ADD}?audit={audit.id}").url.startswith("/admin/login/")


def test_staff_without_the_coding_permissions_cannot_change_a_round(staff_client, audit):
    draw(staff_client, audit)
    coding_round = CodingRound.objects.get()
    other = get_user_model().objects.create_user("staff-only", password="x-staff-only-1", is_staff=True)
    client = Client()
    client.force_login(other)
    lens = coding_round.lenses.order_by("position").first()
    assert client.post(f"/admin/coding/codinground/{coding_round.id}/coders/",
                       {"lens": lens.id, "name": "Intruder"}).status_code == 403
    assert client.post(f"/admin/coding/codinground/{coding_round.id}/close/").status_code == 403
    assert client.get(f"/admin/coding/codinground/{coding_round.id}/change/").status_code == 403
    assert not Coder.objects.exists() and CodingRound.objects.get().closed_at is None
