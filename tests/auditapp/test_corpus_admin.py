"""The corpus admin: "Add" generates the paper's BITS corpus or uploads one in the public shape, showing every
problem; the list and the read-only page show hash, provenance, counts and recorded scorers."""
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from auditapp.models import Corpus
from tests.auditapp.bits_upload_files import PERTURBED_ROWS, public_shape_files

pytestmark = pytest.mark.django_db
ADD = "/admin/auditapp/corpus/add/"


def upload_data(perturbed_rows=None) -> dict:
    (p_name, p_bytes), (c_name, c_bytes) = public_shape_files(perturbed_rows=perturbed_rows)
    return {"upload": "1", "upload-name": "uploaded", "upload-unmatched": "report",
            "upload-perturbed_file": SimpleUploadedFile(p_name, p_bytes),
            "upload-control_file": SimpleUploadedFile(c_name, c_bytes)}


def test_add_generates_the_paper_corpus_and_shows_it(staff_client):
    page = staff_client.get(ADD)
    assert page.status_code == 200 and b"Generate a BITS corpus" in page.content
    response = staff_client.post(ADD, {"generate": "1", "generate-name": "BITS paper", "generate-spec": ""})
    corpus = Corpus.objects.get()
    assert response.status_code == 302 and response.url == f"/admin/auditapp/corpus/{corpus.pk}/change/"
    assert (corpus.name, corpus.n_units, corpus.created_by.username) == ("BITS paper", 2310, "alice")

    again = staff_client.post(ADD, {"generate": "1", "generate-name": "twice", "generate-spec": ""}, follow=True)
    assert b"An identical corpus was already stored" in again.content and Corpus.objects.count() == 1

    listing = staff_client.get("/admin/auditapp/corpus/").content.decode()
    assert corpus.content_hash[:12] in listing and "BITS paper" in listing
    detail = staff_client.get(f"/admin/auditapp/corpus/{corpus.pk}/change/").content.decode()
    assert corpus.content_hash in detail and "PWD:SD: 550" in detail and "&quot;paper_tables&quot;: true" in detail
    assert 'name="_save"' not in detail  # read-only


def test_add_with_a_bad_spec_lists_every_problem_and_stores_nothing(staff_client):
    spec = '{"templates": [{"id": "T1", "text": "No slot."}], "groups": [{"group": "control", "terms": ["x"]}]}'
    response = staff_client.post(ADD, {"generate": "1", "generate-name": "bad", "generate-spec": spec})
    assert response.status_code == 200
    text = response.content.decode()
    assert "2 problems found; nothing was stored." in text
    assert "spec: templates[0] (T1): needs exactly one &lt;group&gt; slot, has 0" in text
    assert "spec: groups[0] (control): &#x27;control&#x27; is reserved" in text
    assert not Corpus.objects.exists()


def test_add_uploads_the_public_shape_with_its_recorded_scorers(staff_client):
    response = staff_client.post(ADD, upload_data())
    corpus = Corpus.objects.get()
    assert response.status_code == 302 and corpus.n_units == 6
    detail = staff_client.get(f"/admin/auditapp/corpus/{corpus.pk}/change/").content.decode()
    for scorer in ("Google", "TextBlob", "VADER"):
        assert f"<td>{scorer}</td>" in detail
    assert "Disability_Corpus.csv" in detail


def test_an_upload_with_a_bad_row_names_file_row_and_column(staff_client):
    rows = [*PERTURBED_ROWS, ["4", "T1", "They are parents of a Short child.", "Neutral", "Normal", "Short", "0",
                              "high", ""]]
    response = staff_client.post(ADD, upload_data(rows))
    assert response.status_code == 200
    assert ("<td>Disability_Corpus.csv</td><td>6</td><td>VADER</td><td>a score must be a finite number, not "
            "&#x27;high&#x27;</td>") in response.content.decode()
    assert not Corpus.objects.exists()


def test_the_add_page_needs_the_add_permission(client, db):
    from tests.factories import make_participant_user

    user = make_participant_user()
    user.is_staff = True
    user.save()
    client.force_login(user)
    assert client.get(ADD).status_code == 403
