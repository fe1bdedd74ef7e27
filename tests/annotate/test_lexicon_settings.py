"""The opinion lexicon settings page: Hu & Liu's two word lists uploaded once, checked, stored under MEDIA_ROOT
and used by every human-vs-machine dashboard; bad files are refused with a sentence and store nothing."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile

from annotate.corpus import lexicon as site_lexicon
from annotate.dashboards import cache
from annotate.models import ChangeLog
from explain_engine.lexicon import load_opinion_lexicon
from tests.annotate.test_dashboards import answered, machine_run  # noqa: F401 (a fixture)
from tests.conftest import require_shared_data

pytestmark = pytest.mark.django_db

URL = "/settings/lexicon/"


@pytest.fixture(autouse=True)
def media(settings, tmp_path):
    settings.MEDIA_ROOT = tmp_path / "media"
    settings.HATLAB_LEXICON_DIR = ""
    return settings.MEDIA_ROOT


@pytest.fixture
def real_files():
    folder = require_shared_data("opinion-lexicon-hu-liu")
    return (folder / "positive-words.txt").read_bytes(), (folder / "negative-words.txt").read_bytes()


def upload(client, positive: bytes | None, negative: bytes | None, **extra):
    data = dict(extra)
    if positive is not None:
        data["positive"] = SimpleUploadedFile("positive-words.txt", positive, "text/plain")
    if negative is not None:
        data["negative"] = SimpleUploadedFile("negative-words.txt", negative, "text/plain")
    return client.post(URL, data, follow=True)


def test_the_real_lexicon_is_stored_counted_and_read_back_word_for_word(
    client, researcher, real_files, media
):
    client.force_login(researcher)
    page = client.get(URL)
    assert page.status_code == 200 and b'data-lexicon="none"' in page.content

    response = upload(client, *real_files)
    assert response.status_code == 200
    text = response.content.decode()
    # the distributed lists: 2006 positive and 4783 negative words (PROVENANCE.md beside them)
    assert "Stored your opinion lexicon: 2006 positive and 4783 negative words." in text
    assert 'data-lexicon-scope="own">2006 positive and 4783 negative words, your own.' in text

    own = media / "lexicon" / "researchers" / str(researcher.pk) / "hu-liu"
    assert site_lexicon.lexicon_dir(researcher.pk) == str(own)
    stored = load_opinion_lexicon(site_lexicon.lexicon_dir(researcher.pk))
    original = load_opinion_lexicon(require_shared_data("opinion-lexicon-hu-liu"))
    assert stored == original
    assert "naïve" in stored.negative  # the one ISO-8859-1 byte survives


def test_a_utf8_upload_is_stored_in_the_lexicon_encoding(client, researcher):
    client.force_login(researcher)
    upload(client, "; comment\n\ngood\nnaïve\n".encode(), b"bad\nawful\r\n")
    stored = load_opinion_lexicon(site_lexicon.lexicon_dir(researcher.pk))
    assert stored.positive == {"good", "naïve"} and stored.negative == {"bad", "awful"}


BAD = [
    ("positive", b"; only a header\n;\n\n", b"bad\n", "holds no word"),
    ("positive", b"word,polarity\ngood,1\n", b"bad\n", "Line 1 holds"),
    ("negative", b"good\n", b"; header\nbad\nnot good\n", "Line 3 holds “not good”"),
    ("negative", b"good\n", b"bad\x00\x01\x02", "not a text file"),
    ("negative", b"good\ngreat\nfine\n", b"good\ngreat\nfine\n", "3 words are in both lists"),
    ("positive", "good\n\u4e00\n".encode(), b"bad\n", "outside ISO-8859-1"),
    ("positive", b"x\n" * (site_lexicon.MAX_FILE_BYTES // 2 + 1), b"bad\n", "bytes; at most"),
]


@pytest.mark.parametrize(("field", "positive", "negative", "said"), BAD)
def test_bad_files_are_refused_with_a_sentence_and_keep_the_stored_lexicon(
    client, researcher, field, positive, negative, said
):
    client.force_login(researcher)
    upload(client, b"; header\ngood\ngreat\n", b"bad\nawful\n")
    before = site_lexicon.lexicon_fingerprint(researcher.pk)
    assert before

    response = upload(client, positive, negative)
    assert response.status_code == 400
    errors = response.context["form"].errors
    assert list(errors) == [field]
    assert errors[field][0].startswith("Nothing was stored.") and said in errors[field][0]
    assert site_lexicon.lexicon_fingerprint(researcher.pk) == before
    assert load_opinion_lexicon(site_lexicon.lexicon_dir(researcher.pk)).positive == {"good", "great"}


def test_a_missing_file_is_a_field_error(client, researcher):
    client.force_login(researcher)
    response = upload(client, b"good\n", None)
    assert response.status_code == 400
    assert "negative" in response.context["form"].errors
    assert site_lexicon.lexicon_dir(researcher.pk) is None


def test_annotators_cannot_see_or_upload(client, annotator_user):
    client.force_login(annotator_user)
    assert client.get(URL).status_code == 403
    assert upload(client, b"good\n", b"bad\n").status_code == 403
    assert site_lexicon.lexicon_dir(annotator_user.pk) is None


def test_the_upload_takes_precedence_over_the_setting_and_changes_the_cache_key(settings, client, admin_user):
    settings.HATLAB_LEXICON_DIR = "/somewhere/else"
    assert site_lexicon.lexicon_dir() == "/somewhere/else"
    client.force_login(admin_user)
    upload(client, b"good\n", b"bad\n", site="on")
    first = site_lexicon.lexicon_fingerprint()
    assert site_lexicon.lexicon_dir() == str(site_lexicon.uploaded_folder())
    upload(client, b"good\nfine\n", b"bad\n", site="on")
    assert site_lexicon.lexicon_fingerprint() not in ("", first)


def test_every_dashboard_uses_the_uploaded_lexicon(answered, client, researcher, real_files):  # noqa: F811
    study, _, _ = answered
    run = machine_run(researcher, study.dataset)
    client.force_login(researcher)
    select = {"select": f"{run.pk}:attention (training)"}
    page = client.get(f"/studies/{study.uid}/dashboard/machine/", select)
    assert b"data-lexicon-note" in page.content and b'href="/settings/lexicon/"' in page.content
    api = f"/api/dashboards/studies/{study.uid}/similarity/"
    before = client.get(api, select).json()
    assert "cssr" not in {c["id"] for c in before["charts"]}
    assert any("lexicon settings page" in n for n in before["notes"])
    fp_before = cache.fingerprint(study, cache.SIMILARITY, {"selections": [[run.pk, "attention (training)"]]})

    upload(client, *real_files)
    fp_after = cache.fingerprint(study, cache.SIMILARITY, {"selections": [[run.pk, "attention (training)"]]})
    assert fp_after != fp_before  # the figures computed without it are not served from the cache
    after = client.get(api, select).json()
    assert after["cssr_available"] is True and "cssr" in {c["id"] for c in after["charts"]}
    assert not any("lexicon settings page" in n for n in after["notes"])
    page = client.get(f"/studies/{study.uid}/dashboard/machine/", select)
    assert b"data-lexicon-note" not in page.content


# --- whose lexicon ------------------------------------------------------------------------------------


def test_a_researcher_cannot_replace_the_site_lexicon(client, researcher, admin_user):
    """The attack: a researcher posts the form with ``site`` set, as an admin's form would."""
    client.force_login(admin_user)
    upload(client, b"good\n", b"bad\n", site="on")
    before = site_lexicon.lexicon_fingerprint()
    client.force_login(researcher)
    refused = client.post(
        URL,
        {
            "positive": SimpleUploadedFile("p.txt", b"bad\n"),
            "negative": SimpleUploadedFile("n.txt", b"good\n"),
            "site": "on",
        },
    )
    assert refused.status_code == 403
    assert site_lexicon.lexicon_fingerprint() == before
    assert load_opinion_lexicon(site_lexicon.lexicon_dir()).positive == {"good"}
    assert not ChangeLog.objects.filter(actor=researcher).exists()


def test_a_researchers_lexicon_is_theirs_alone(client, researcher, other_researcher, admin_user):
    client.force_login(admin_user)
    upload(client, b"good\n", b"bad\n", site="on")
    client.force_login(researcher)
    upload(client, b"great\nfine\n", b"awful\n")
    assert load_opinion_lexicon(site_lexicon.lexicon_dir(researcher.pk)).positive == {"great", "fine"}
    # the other researcher's studies still read the site's lexicon, and their page shows the site's
    assert load_opinion_lexicon(site_lexicon.lexicon_dir(other_researcher.pk)).positive == {"good"}
    assert load_opinion_lexicon(site_lexicon.lexicon_dir()).positive == {"good"}
    assert site_lexicon.lexicon_fingerprint(other_researcher.pk) == site_lexicon.lexicon_fingerprint()
    client.force_login(other_researcher)
    assert b'data-lexicon-scope="site"' in client.get(URL).content


def test_every_lexicon_change_is_logged_with_who_made_it(client, researcher, admin_user):
    client.force_login(admin_user)
    upload(client, b"good\n", b"bad\n", site="on")
    client.force_login(researcher)
    upload(client, b"great\n", b"awful\n")
    upload(client, b"x\n", b"x\n")  # refused: nothing stored, nothing logged
    log = list(ChangeLog.objects.order_by("id").values_list("action", "actor_id", "owner_id", "target"))
    assert log == [
        ("lexicon", admin_user.pk, None, "site lexicon"),
        ("lexicon", researcher.pk, researcher.pk, "own lexicon"),
    ]


def test_the_lexicon_page_is_in_a_researchers_navigation_and_not_an_annotators(
    client, researcher, annotator_user
):
    client.force_login(researcher)
    page = client.get("/studies/").content.decode()
    nav = page[page.index('<nav class="site-nav"') : page.index("</nav>")]
    assert f'href="{URL}"' in nav and ">Lexicon<" in nav
    client.force_login(annotator_user)
    response = client.get("/", follow=True)
    page = response.content.decode()
    assert response.status_code == 200 and 'class="site-nav"' in page
    assert f'href="{URL}"' not in page
