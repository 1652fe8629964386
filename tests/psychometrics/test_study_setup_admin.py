"""A study's setup on its admin page catches mistakes: instrument roles inferred and checked (and the same rules on
PUT /api/studies/{id}/instruments/), a warning when the weights will lack a score."""
from __future__ import annotations

from html.parser import HTMLParser

import pytest
from django.contrib.messages import get_messages

from annotation.models import StudyAnalysisSettings
from psychometrics.models import Instrument, StudyInstrument
from psychometrics.services import StudyInstrumentChoice, StudyInstrumentsInvalid, study_instruments_set
from tests.factories import make_study

pytestmark = pytest.mark.django_db


class _FormFields(HTMLParser):
    """The values a browser would submit from the page's form with id ``study_form`` (as shown, nothing changed)."""

    def __init__(self):
        super().__init__()
        self.data: dict[str, str] = {}
        self._in_form = False
        self._select: str | None = None
        self._textarea: str | None = None

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if tag == "form":
            self._in_form = attributes.get("id") == "study_form"
        if not self._in_form or "__prefix__" in (attributes.get("name") or ""):
            return
        name = attributes.get("name")
        if tag == "input" and name and attributes.get("type") not in ("submit", "button", "file"):
            if attributes.get("type") in ("checkbox", "radio"):
                if "checked" in attributes:
                    self.data[name] = attributes.get("value", "on")
            else:
                self.data[name] = attributes.get("value", "")
        elif tag == "select" and name:
            self._select = name
            self.data.setdefault(name, "")
        elif tag == "option" and self._select and "selected" in attributes:
            self.data[self._select] = attributes.get("value", "")
        elif tag == "textarea" and name:
            self._textarea = name
            self.data[name] = ""

    def handle_endtag(self, tag):
        if tag == "select":
            self._select = None
        elif tag == "textarea":
            self._textarea = None
        elif tag == "form":
            self._in_form = False

    def handle_data(self, data):
        if self._textarea:
            self.data[self._textarea] += data.removeprefix("\n") if not self.data[self._textarea] else data


def page_form(client, url: str) -> dict[str, str]:
    parser = _FormFields()
    parser.feed(client.get(url).content.decode())
    return parser.data


def with_instruments(form: dict[str, str], rows: list[dict]) -> dict[str, str]:
    """The study form with its instrument rows replaced by ``rows`` (new rows: instrument, role, position)."""
    form = {key: value for key, value in form.items() if not key.startswith("study_instruments-")}
    form.update({"study_instruments-TOTAL_FORMS": str(len(rows)), "study_instruments-INITIAL_FORMS": "0",
                 "study_instruments-MIN_NUM_FORMS": "0", "study_instruments-MAX_NUM_FORMS": "1000"})
    for index, row in enumerate(rows):
        form.update({f"study_instruments-{index}-{name}": str(value) for name, value in row.items()})
        form.setdefault(f"study_instruments-{index}-position", str(index))
    return form


@pytest.fixture
def study_page(staff_client, shipped_instruments):
    study = make_study(name="Setup")
    url = f"/admin/annotation/study/{study.pk}/change/"
    return study, url, page_form(staff_client, url)


def test_a_new_row_gets_the_role_of_its_instrument(staff_client, study_page, shipped_instruments):
    study, url, form = study_page
    aq, sata = shipped_instruments["aq50"], shipped_instruments["sata_partial"]
    response = staff_client.post(url, with_instruments(form, [{"instrument": aq.pk, "role": ""},
                                                              {"instrument": sata.pk, "role": ""}]))
    assert response.status_code == 302, response.context["inline_admin_formsets"][0].formset.errors
    assert dict(StudyInstrument.objects.filter(study=study).values_list("instrument__slug", "role")) == {
        "aq50": "aq", "sata_partial": "sata"}
    # The page offers "From the instrument" as a new row's role, and names every control of a row.
    page = staff_client.get(url).content.decode()
    assert '<option value="">From the instrument</option>' in page
    assert 'aria-label="Role of instrument row 1"' in page and 'aria-label="Delete instrument row 2"' in page


def test_two_aq_roles_are_refused_naming_the_row_and_nothing_is_stored(staff_client, study_page, shipped_instruments):
    study, url, form = study_page
    lab_aq = Instrument.objects.create(slug="lab_scale", name="Our lab's autism scale", definition={},
                                       content_hash="lab")
    response = staff_client.post(url, with_instruments(form, [
        {"instrument": shipped_instruments["aq50"].pk, "role": "aq"}, {"instrument": lab_aq.pk, "role": "aq"}]))
    assert response.status_code == 200
    page = response.content.decode()
    assert ("Instrument row 2: Our lab&#x27;s autism scale: a second instrument with the role AQ "
            "(Autism-Spectrum Quotient (AQ-50) has it); the weights read one AQ score") in page
    assert "The instruments&#x27; roles must be changed: see instrument row 2." in page
    assert not StudyInstrument.objects.filter(study=study).exists()


def test_two_sata_roles_are_refused(staff_client, study_page, shipped_instruments):
    study, url, form = study_page
    full = Instrument.objects.create(slug="sata26", name="SATA (26 items)", definition={}, content_hash="sata26")
    response = staff_client.post(url, with_instruments(form, [
        {"instrument": shipped_instruments["sata_partial"].pk, "role": ""}, {"instrument": full.pk, "role": ""}]))
    assert response.status_code == 200
    assert "Instrument row 2: SATA (26 items): a second instrument with the role SATA" in response.content.decode()
    assert not StudyInstrument.objects.filter(study=study).exists()


def test_an_aq_given_the_sata_role_is_refused(staff_client, study_page, shipped_instruments):
    study, url, form = study_page
    response = staff_client.post(url, with_instruments(form, [
        {"instrument": shipped_instruments["aq50"].pk, "role": "sata"}]))
    assert response.status_code == 200
    assert ("Instrument row 1: Autism-Spectrum Quotient (AQ-50) is an AQ instrument (slug &#x27;aq50&#x27;): it "
            "cannot have the role SATA, the weights would read it as the SATA score") in response.content.decode()
    assert not StudyInstrument.objects.filter(study=study).exists()


def test_a_swap_of_roles_between_stored_rows_is_checked_as_a_whole(staff_client, study_page, shipped_instruments):
    """The stored rows are changed: AQ-50 made Other and the lab's scale made AQ at once is fine."""
    study, url, _ = study_page
    lab = Instrument.objects.create(slug="lab_scale", name="Our scale", definition={}, content_hash="lab")
    study_instruments_set(study=study, choices=[StudyInstrumentChoice(instrument=shipped_instruments["aq50"]),
                                                StudyInstrumentChoice(instrument=lab, position=1)])
    form = page_form(staff_client, url)
    assert form["study_instruments-0-role"] == "aq" and form["study_instruments-1-role"] == "other"
    form.update({"study_instruments-0-role": "other", "study_instruments-1-role": "aq"})
    response = staff_client.post(url, form)
    assert response.status_code == 302, response.content.decode()[:3000]
    assert dict(StudyInstrument.objects.filter(study=study).values_list("instrument__slug", "role")) == {
        "aq50": "other", "lab_scale": "aq"}


def test_a_study_without_a_sata_role_is_saved_with_a_warning_saying_what_the_weights_use(
        staff_client, study_page, shipped_instruments):
    study, url, form = study_page
    response = staff_client.post(url, with_instruments(form, [{"instrument": shipped_instruments["aq50"].pk,
                                                               "role": ""}]))
    assert response.status_code == 302
    warnings = [str(m) for m in get_messages(response.wsgi_request) if m.level_tag == "warning"]
    assert warnings == [
        "The trust weights will have no SATA score (no instrument has the role SATA): under this study's "
        "missing-instrument rule (give no weight to annotators missing an instrument) no annotator gets a weight, so "
        "the weighted ground truth has no label; with the rule 'average the instruments an annotator has' the "
        "weights would use the AQ score and IAT D score only."]
    StudyAnalysisSettings.objects.update_or_create(study=study, defaults={"missing_instrument": "average"})
    form = page_form(staff_client, url)
    form.update({"study_instruments-0-role": "other"})
    response = staff_client.post(url, form)
    assert response.status_code == 302
    assert [str(m) for m in get_messages(response.wsgi_request) if m.level_tag == "warning"] == [
        "The trust weights will have no AQ score and no SATA score (no instrument has the role AQ or SATA): the "
        "weights use the IAT D score only (missing-instrument rule: average the instruments an annotator has)."]


def test_a_study_with_both_roles_and_the_iat_is_saved_without_a_warning(staff_client, study_page,
                                                                         shipped_instruments):
    _, url, form = study_page
    response = staff_client.post(url, with_instruments(form, [{"instrument": shipped_instruments["aq50"].pk},
                                                              {"instrument": shipped_instruments["sata_partial"].pk}]))
    assert response.status_code == 302
    assert not [m for m in get_messages(response.wsgi_request) if m.level_tag == "warning"]


def test_the_api_applies_the_same_rules_and_infers_a_missing_role(api_client, shipped_instruments):
    study = make_study(slug="api-roles")
    url = f"/api/studies/{study.pk}/instruments/"
    aq, sata = shipped_instruments["aq50"], shipped_instruments["sata_partial"]
    refused = api_client.put(url, {"instruments": [{"instrument": aq.pk, "role": "sata"}]}, format="json")
    assert refused.status_code == 400
    assert refused.json() == {"instruments": {"0": [
        "Autism-Spectrum Quotient (AQ-50) is an AQ instrument (slug 'aq50'): it cannot have the role SATA, the "
        "weights would read it as the SATA score"]}}
    lab = Instrument.objects.create(slug="lab_scale", name="Our scale", definition={}, content_hash="lab")
    twice = api_client.put(url, {"instruments": [{"instrument": aq.pk}, {"instrument": lab.pk, "role": "aq"}]},
                           format="json")
    assert twice.status_code == 400 and "a second instrument with the role AQ" in twice.json()["instruments"]["1"][0]
    assert not StudyInstrument.objects.filter(study=study).exists()

    stored = api_client.put(url, {"instruments": [{"instrument": aq.pk}]}, format="json")
    assert stored.status_code == 200
    assert [row["role"] for row in stored.json()["instruments"]] == ["aq"]
    assert stored.json()["warnings"][0].startswith("The trust weights will have no SATA score")
    both = api_client.put(url, {"instruments": [{"instrument": aq.pk}, {"instrument": sata.pk}]}, format="json")
    assert [row["role"] for row in both.json()["instruments"]] == ["aq", "sata"] and both.json()["warnings"] == []


def test_the_service_refuses_what_breaks_the_rules(shipped_instruments):
    study = make_study(slug="service-roles")
    with pytest.raises(StudyInstrumentsInvalid, match="entry 1: Autism-Spectrum Quotient"):
        study_instruments_set(study=study, choices=[StudyInstrumentChoice(instrument=shipped_instruments["aq50"],
                                                                          role="sata")])
    assert not StudyInstrument.objects.filter(study=study).exists()


OWN_STIMULI = {"target_a_label": "Autistic", "target_a_words": ["Autistic", "Autism", "ASD"],
               "target_b_label": "Neurotypical", "target_b_words": ["Neurotypical", "Allistic"],
               "attribute_pos_label": "Good", "attribute_pos_words": ["Joy", "Love"],
               "attribute_neg_label": "Bad", "attribute_neg_words": ["Agony", "Hurt"]}


def with_stimuli(form: dict[str, str], source: str, stimuli: dict | None = None) -> dict[str, str]:
    form = {**form, "iat_stimuli-source": source}
    for category in ("target_a", "target_b", "attribute_pos", "attribute_neg"):
        if stimuli is not None:
            form[f"iat_stimuli-{category}-label"] = stimuli[f"{category}_label"]
            form[f"iat_stimuli-{category}-words"] = "\n".join(stimuli[f"{category}_words"])
    return form


def test_the_iat_editor_stores_the_same_json_shape_the_iat_reads(staff_client, study_page):
    from psychometrics.iat import IATStimuli
    from psychometrics.services import iat_stimuli_for

    study, url, form = study_page
    assert form["iat_stimuli-source"] == "default" and form["iat_stimuli-target_a-label"] == "Autism Spectrum"
    assert staff_client.post(url, form).status_code == 302  # unchanged: still the defaults
    study.refresh_from_db()
    assert study.iat_stimuli == {}

    typed = {**OWN_STIMULI, "target_a_words": [" Autistic ", "", "Autism", "ASD", "  "]}  # blank lines and spaces
    response = staff_client.post(url, with_stimuli(page_form(staff_client, url), "custom", typed))
    assert response.status_code == 302
    study.refresh_from_db()
    assert study.iat_stimuli == OWN_STIMULI
    assert iat_stimuli_for(study) == IATStimuli(**OWN_STIMULI)

    # Shown again as this study's own; going back to the defaults without touching the words stores {}.
    form = page_form(staff_client, url)
    assert form["iat_stimuli-source"] == "custom" and form["iat_stimuli-target_b-words"] == "Neurotypical\nAllistic"
    assert staff_client.post(url, {**form, "iat_stimuli-source": "default"}).status_code == 302
    study.refresh_from_db()
    assert study.iat_stimuli == {}


@pytest.mark.parametrize(("change", "message"), [
    ({"attribute_neg_words": ["Agony"]}, "Unpleasant attribute (&#x27;Bad&#x27;): needs at least 2 different words, "
                                         "has 1"),
    ({"attribute_neg_words": ["Agony", "agony "]}, "Unpleasant attribute (&#x27;Bad&#x27;): &#x27;agony&#x27; is "
                                                   "listed twice"),
    ({"attribute_neg_words": ["Agony", "JOY"]}, "&#x27;JOY&#x27; is in both Pleasant attribute (&#x27;Good&#x27;) and "
                                                "Unpleasant attribute (&#x27;Bad&#x27;): a participant could not tell "
                                                "which side it belongs to"),
    ({"target_b_label": "  "}, "Target B: give the category a name"),
    ({"attribute_neg_label": "good"}, "Unpleasant attribute (&#x27;good&#x27;) has the name of Pleasant attribute"),
    ({"target_a_words": ["x" * 201, "Autism"]}, "is longer than 200 characters"),
])
def test_bad_iat_categories_are_refused_with_a_message_naming_the_category(staff_client, study_page, change, message):
    study, url, form = study_page
    response = staff_client.post(url, with_stimuli(form, "custom", {**OWN_STIMULI, **change}))
    assert response.status_code == 200
    assert message in response.content.decode()
    study.refresh_from_db()
    assert study.iat_stimuli == {}


def test_edited_words_with_the_defaults_chosen_are_not_dropped_silently(staff_client, study_page):
    """Without the page's script nothing switches to "own" as a word is typed: the save says so instead."""
    study, url, form = study_page
    form["iat_stimuli-attribute_pos-words"] += "\nSunshine"
    response = staff_client.post(url, form)
    assert response.status_code == 200
    assert "The categories or words were changed but the defaults are chosen" in response.content.decode()
    assert "Sunshine" in response.content.decode()  # the edit is still on the page
    study.refresh_from_db()
    assert study.iat_stimuli == {}


def test_a_post_without_the_editor_keeps_the_stored_stimuli(staff_client, study_page):
    study, url, form = study_page
    study.iat_stimuli = OWN_STIMULI
    study.save()
    form = {key: value for key, value in page_form(staff_client, url).items() if not key.startswith("iat_stimuli")}
    assert staff_client.post(url, form).status_code == 302
    study.refresh_from_db()
    assert study.iat_stimuli == OWN_STIMULI


def test_the_open_link_is_shown_absolute_with_a_copy_button(staff_client, study_page, settings):
    study, url, _ = study_page
    page = staff_client.get(url).content.decode()
    assert f"value='http://testserver/join/{study.open_link_token}/'" in page
    assert "id='copy-open-link' data-copy='open-link' hidden>Copy the link</button>" in page
    assert "/static/annotation/copy_link.js" in page
    assert "Open link (off until" in page
    study.open_link_enabled = True
    study.save()
    settings.ALLOWED_HOSTS = [*settings.ALLOWED_HOSTS, "studies.example.org"]
    page = staff_client.get(url, HTTP_HOST="studies.example.org").content.decode()
    assert f"value='http://studies.example.org/join/{study.open_link_token}/'" in page and "Open link (enabled;" in page


def test_admin_and_site_pages_name_an_icon_that_is_served(staff_client, study_page):
    _, url, _ = study_page
    for page_url in (url, "/admin/", "/"):
        page = staff_client.get(page_url).content.decode()
        assert '<link rel="icon" href="/static/site/favicon.svg" type="image/svg+xml">' in page, page_url
    redirect = staff_client.get("/favicon.ico")
    assert redirect.status_code == 302 and redirect["Location"] == "/static/site/favicon.svg"
    icon = staff_client.get("/static/site/favicon.svg")
    assert icon.status_code == 200 and b"<svg" in b"".join(icon.streaming_content)
