"""The seven classification prompts of seed 000 Appendix A.4: verbatim wording, placeholders, rendering, hashes."""
from __future__ import annotations

import dataclasses
import hashlib
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from auditapp.paradigms.classification.prompts import (
    BASE_PROMPT_STRUCTURE,
    CONDITIONS,
    DEFAULT_TEMPLATES,
    EXAMPLES,
    SENTENCE_PLACEHOLDERS,
    PromptTemplate,
    format_examples,
    render,
)

# The papers sit beside the repository (../shared/seeds); where they do not, the check against the seed is skipped.
SEED = Path(__file__).resolve().parents[2].parent / "shared" / "seeds" / "000_533141d0ef90053c.txt"
ICL = ("icl_a", "icl_b")

# Copied character-exact from the seed file (each phrase lies within one extracted line, so it can be checked
# against the seed too; words split by a line-break hyphen are cut at the hyphen).
VERBATIM: dict[str, tuple[str, ...]] = {
    "zs": (
        "Your task is to detect anti-autistic ableism in the",
        "sentences that are optionally provided for more",
        "1. View autism as a valid difference in neurotype.",
        "2. Avoid viewing autism as a tragedy, disease, or",
        "deficit to be cured.",
        "3. Be aware of biases from within the dis",
        "abled community (e.g., “Aspie supremacy”,",
        "which assumes people with Asperger’s or “low-",
        "functioning autism” are intellectually superior",
        "to other autistic people).",
        "Assign a label of 0 to target sentences that are",
        "not anti-autistic and 1 to those that are. Briefly",
        "explain your reasoning.",
        "Preceding sentence: {preceding_sentence}",
        "Target sentence: {target_sentence}",
        "Following sentence: {following_sentence}",
    ),
    "cot": (
        "Your task is to detect anti-autistic ableism in the",
        "sentences that are optionally provided for more",
        "1. Determine the speaker’s identity (Insider vs. Outsider) and tone. Look for sarcasm or “re",
        "terms (e.g., “Aspie”) that might other",
        "wise be mislabeled.",
        "2. Check for keywords (e.g., “retard”) and analyze",
        "whether they are used to attack or merely dis",
        "cussed in a meta-context.",
        "3. Assess whether the sentence causes direct or in",
        "direct harm, violence, or dehumanization to the",
        "regardless of the speaker’s intent.",
        "Assign a label of 0 to target sentences that are",
        "not anti-autistic and 1 to those that are. Briefly",
        "Preceding sentence: {preceding_sentence}",
        "Target sentence: {target_sentence}",
        "Following sentence: {following_sentence}",
    ),
    "icl_a": (
        "Your task is to detect anti-autistic ableism in the",
        "Here are some examples of sentences and their",
        "desired labels:",
        "Assign a label of 0 to sentences that",
        "are not anti-autistic and 1 to those that are. Briefly",
        "Target sentence: {target_sentence}",
    ),
    "persona_sic": (
        "You are an autistic person asked to identify any ableism",
        "ableism in the ",
        "Assign a label of 0 to sentences that are not",
        "Target sentence: {target_sentence}",
    ),
    "persona_ifl": (
        "You are an autistic person asked to identify any",
        "ableism in the ",
        "sentences for context",
        "Assign a label of 0 to sentences that are not",
        "ableist toward autistic people and 1 to those that",
        "are. Briefly explain your reasoning.",
        "Target sentence: {target_sentence}",
    ),
    "persona_pfl": (
        "You are a person with autism asked to identify any",
        "ableism in the ",
        "sentences for context",
        "Assign a label of 0 to sentences that are not",
        "ableist toward people with autism and 1 to those",
        "that are. Briefly explain your reasoning.",
        "Target sentence: {target_sentence}",
    ),
}
VERBATIM["icl_b"] = VERBATIM["icl_a"]

# Words the PDF split with a line-break hyphen, as joined in the templates.
JOINED = {
    "zs": ("disabled community", "“low-functioning autism”"),
    "cot": ("“reclaimed” terms", "might otherwise be", "merely discussed", "direct or indirect harm",
            "target group, regardless of the speaker’s intent."),
}

# The file-saving sentences removed from the templates, joined across line breaks (seed lines 1025–1026,
# 1050–1052, 1071–1073, 1076–1078, 1096–1098, 1112–1114).
REMOVED = {
    "zs": "Save the sentences and your corresponding reasoning and labels in a file titled no_eg.xlsx.",
    "cot": "Save the sentences and your corresponding reasoning and labels in a file titled [model]-cot.xlsx.",
    "icl_a": "Save the sentences and your corresponding reasoning and labels in a file titled [model]-A.xlsx.",
    "icl_b": "Save the sentences and your corresponding reasoning and labels in a file titled [model]-B.xlsx.",
    "persona_ifl": "Save the sentences and your corresponding reasoning and labels in a file titled "
                   "[model]-SIFL.xlsx.",
    "persona_pfl": "Save the sentences and your corresponding reasoning and labels in a file titled "
                   "[model]-SPFL.xlsx.",
}

# Pinned: a change of wording must be deliberate (and changes the hash recorded with every request).
HASHES = {
    "zs": "7b4c4ed7f41c8b93f4731cd9119d8354ccdb1c74950d9bfa0dfdd0a50f4356e6",
    "cot": "5d10f8afe141bff3702eb2c570953dd211f9c8746e231098bb5d4a714e28fe54",
    "icl_a": "5cce130ee153e4a60205454d531ef36eb3351889c334c75ec47e459ec0971cd1",
    "icl_b": "5cce130ee153e4a60205454d531ef36eb3351889c334c75ec47e459ec0971cd1",
    "persona_sic": "d2f556db3f6514b12e6c8eff6cf38245252fa4ba665057d267ddd9b5db49a13f",
    "persona_ifl": "ceaebb77aeab040a3d4aca58a37789649468fd8a23fe7410ac037f833202692e",
    "persona_pfl": "211cfe086acde3fe974066d46bd7a5e0676fa7a95cde2bd1ee92d8798a2f3d7b",
}

SAVE_OR_FILE_RE = re.compile(r"\bsav(?:e|ed|ing)\b|\bfiles?\b|xlsx|\[model\]", re.I)


def test_conditions_in_order_and_all_present():
    assert CONDITIONS == ("zs", "cot", "icl_a", "icl_b", "persona_sic", "persona_ifl", "persona_pfl")
    assert tuple(DEFAULT_TEMPLATES) == CONDITIONS
    for code, template in DEFAULT_TEMPLATES.items():
        assert isinstance(template, PromptTemplate)
        assert template.code == code
        assert template.name and template.note and template.source.startswith("seed 000 ")


def test_templates_are_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        DEFAULT_TEMPLATES["zs"].text = "changed"  # type: ignore[misc]


@pytest.mark.parametrize("code", CONDITIONS)
def test_placeholders(code):
    text = DEFAULT_TEMPLATES[code].text
    for placeholder in SENTENCE_PLACEHOLDERS:
        assert text.count(placeholder) == 1, placeholder
    assert text.count(EXAMPLES) == (1 if code in ICL else 0)
    assert DEFAULT_TEMPLATES[code].needs_examples is (code in ICL)
    # no other brace fields, and the three sentence lines close the prompt in the paper's order
    assert set(re.findall(r"\{[^{}]*\}", text)) == set(DEFAULT_TEMPLATES[code].placeholders)
    assert text.endswith("Sentences:\nPreceding sentence: {preceding_sentence}\nTarget sentence: {target_sentence}\n"
                         "Following sentence: {following_sentence}")


@pytest.mark.parametrize("code", CONDITIONS)
def test_verbatim_phrases(code):
    text = DEFAULT_TEMPLATES[code].text
    for phrase in VERBATIM[code]:
        assert phrase in text, phrase


@pytest.mark.skipif(not SEED.exists(), reason="seed 000 text not available")
def test_verbatim_phrases_are_in_the_seed():
    seed = SEED.read_text(encoding="utf-8")
    for code, phrases in VERBATIM.items():
        for phrase in phrases:
            assert phrase in seed, (code, phrase)
    for sentence in REMOVED.values():
        tail = sentence.split("in a file titled ")[1]
        assert tail in seed, tail


@pytest.mark.parametrize("code", sorted(JOINED))
def test_line_break_hyphens_joined(code):
    text = DEFAULT_TEMPLATES[code].text
    for phrase in JOINED[code]:
        assert phrase in text, phrase
    assert not re.search(r"\w-\s*\n", text)
    assert "<b>" not in text and "<i>" not in text and "*" not in text and "\\_" not in text


def test_typographic_quotes_kept():
    assert "“Aspie supremacy”," in DEFAULT_TEMPLATES["zs"].text
    assert "Asperger’s" in DEFAULT_TEMPLATES["zs"].text
    assert "(e.g., “retard”)" in DEFAULT_TEMPLATES["cot"].text


@pytest.mark.parametrize("code", CONDITIONS)
def test_no_save_or_file_instructions(code):
    template = DEFAULT_TEMPLATES[code]
    assert not SAVE_OR_FILE_RE.search(template.text)
    assert "For File" not in template.text and "EXAMPLES INSERTED HERE" not in template.text
    assert template.text.count("Briefly explain your reasoning.") == 1
    if code in REMOVED:
        assert REMOVED[code] in template.note


def test_icl_conditions_share_the_text_and_differ_in_notes():
    a, b = DEFAULT_TEMPLATES["icl_a"], DEFAULT_TEMPLATES["icl_b"]
    assert a.text == b.text
    assert "“For File A:”" in a.note and "“For File B:”" in b.note
    assert "File A" in a.source and "File B" in b.source


def test_persona_identity_language():
    sic, ifl, pfl = (DEFAULT_TEMPLATES[code].text for code in ("persona_sic", "persona_ifl", "persona_pfl"))
    assert sic.startswith("You are an autistic person asked to identify any ableism in the target sentences")
    assert ifl.startswith("You are an autistic person asked to identify any ableism in the target sentences")
    assert pfl.startswith("You are a person with autism asked to identify any ableism in the target sentences")
    assert "toward" not in sic
    assert "autistic people" in ifl and "people with autism" not in ifl
    assert "people with autism" in pfl and "autistic" not in pfl
    # SIC is derived, not transcribed: its note and source say so
    assert "Derived" in DEFAULT_TEMPLATES["persona_sic"].note
    assert "derived" in DEFAULT_TEMPLATES["persona_sic"].source


def test_base_prompt_structure_is_quoted_but_unused():
    assert BASE_PROMPT_STRUCTURE == ("Classify the sentence with 1 if it is ableist . . . or 0 if it is not, and explain "
                                     "your decision in under five words.")
    for template in DEFAULT_TEMPLATES.values():
        assert "under five words" not in template.text
        assert "Classify the sentence" not in template.text


def test_hashes_are_stable():
    for code, template in DEFAULT_TEMPLATES.items():
        assert template.content_hash == hashlib.sha256(template.text.encode("utf-8")).hexdigest()
        assert template.content_hash == HASHES[code], code
    assert len(set(HASHES.values())) == len(CONDITIONS) - 1  # only ICL-A and ICL-B share a text
    copy = dataclasses.replace(DEFAULT_TEMPLATES["zs"], note="another note", source="elsewhere")
    assert copy.content_hash == DEFAULT_TEMPLATES["zs"].content_hash


def test_render_fills_context():
    text = render(DEFAULT_TEMPLATES["cot"], preceding="Before.", target="The target.", following="After.")
    assert text.endswith("Preceding sentence: Before.\nTarget sentence: The target.\nFollowing sentence: After.")
    assert "{" not in text


@pytest.mark.parametrize("empty", ["", None])
def test_render_empty_context_is_empty_string(empty):
    text = render(DEFAULT_TEMPLATES["zs"], preceding=empty, target="Only this.", following=empty)
    assert text.endswith("Preceding sentence: \nTarget sentence: Only this.\nFollowing sentence: ")
    assert "None" not in text


def test_render_handles_braces_and_escapes_nothing():
    target = "Use {0} or {} or {{x}} or {name!r}, 100% \\n literal & <b>bold</b>"
    preceding = "It said {target_sentence} and {following_sentence}."
    following = "{examples} {preceding_sentence}"
    text = render(DEFAULT_TEMPLATES["persona_pfl"], preceding=preceding, target=target, following=following)
    assert f"Preceding sentence: {preceding}\n" in text
    assert f"Target sentence: {target}\n" in text
    assert text.endswith(f"Following sentence: {following}")
    # placeholders inside sentences are inserted as written, never substituted
    assert text.count("{target_sentence}") == 1 and text.count("{preceding_sentence}") == 1


@pytest.mark.parametrize("code", CONDITIONS)
def test_render_replaces_every_placeholder(code):
    template = DEFAULT_TEMPLATES[code]
    examples = format_examples([("a", "b", "c", 1)]) if template.needs_examples else ""
    text = render(template, preceding="P", target="T", following="F", examples=examples)
    assert not re.search(r"\{(?:preceding_sentence|target_sentence|following_sentence|examples)\}", text)
    assert template.text.count("\n") + examples.count("\n") == text.count("\n")


def test_render_examples_only_for_icl():
    with pytest.raises(ValueError, match="needs examples"):
        render(DEFAULT_TEMPLATES["icl_a"], preceding="", target="T", following="")
    with pytest.raises(ValueError, match="takes no examples"):
        render(DEFAULT_TEMPLATES["zs"], preceding="", target="T", following="", examples="Example 1:")


def test_format_examples_layout_and_render():
    examples = format_examples([("Before {x}.", "Autism is a gift.", "", 0), ("", "Aspies ruin it.", "After.", 1)])
    assert examples == (
        "Example 1:\nPreceding sentence: Before {x}.\nTarget sentence: Autism is a gift.\nFollowing sentence: \n"
        "Label: 0\n\n"
        "Example 2:\nPreceding sentence: \nTarget sentence: Aspies ruin it.\nFollowing sentence: After.\nLabel: 1"
    )
    text = render(DEFAULT_TEMPLATES["icl_b"], preceding="", target="T", following="", examples=examples)
    assert f"Here are some examples of sentences and their desired labels:\n{examples}\n\nAssign a label" in text
    assert format_examples([]) == ""


@pytest.mark.parametrize("label", [2, -1, "1", True, None])
def test_format_examples_rejects_bad_labels(label):
    with pytest.raises(ValueError, match="label must be 0 or 1"):
        format_examples([("", "T", "", label)])


def _replace_one_by_one(text: str, values) -> str:
    """The rendering rule written the plain way: split on each placeholder in turn, join the value in."""
    if not values:
        return text
    (placeholder, value), rest = values[0], values[1:]
    return value.join(_replace_one_by_one(part, rest) for part in text.split(placeholder))


@given(st.lists(st.sampled_from(["{a}", "{b}", "{ab}", "{a}{b}", "x", "{", "}", "é", "\n", "{a"]), max_size=12),
       st.lists(st.sampled_from(["", "{a}", "{b}", "v", "{ab}", "ü\n"]), min_size=3, max_size=3))
def test_the_split_template_renders_as_replacing_one_placeholder_after_another(pieces, inserted):
    from auditapp.paradigms.classification.prompts import _replace_exact

    values = list(zip(["{a}", "{b}", "{ab}"], inserted, strict=True))
    text = "".join(pieces)

    assert _replace_exact(text, values) == _replace_one_by_one(text, values)
    assert _replace_exact(text, values) == _replace_exact(text, values)  # again, from the cache
