"""REFI-QDA codebook files (coding/qdc.py): every default's export validates against the standard's
Codebook.xsd (tests/data/refi-qda/), round-trips through the import, keeps its GUIDs across versions; files from
other tools import; unsafe or malformed files are refused with every problem named."""
from __future__ import annotations

import uuid
from pathlib import Path

import pytest
import xmlschema

from coding.codebooks import CodebookProblem, codebook_parse, default_codebooks
from coding.qdc import QDC_MAX_BYTES, QDCInvalid, code_guid, codebook_to_qdc, qdc_read

SCHEMA = xmlschema.XMLSchema(Path(__file__).parents[1] / "data" / "refi-qda" / "Codebook.xsd")

# The shape ATLAS.ti writes (a category that is not codable, a nested code, colours, no description).
FOREIGN = b"""<?xml version="1.0" encoding="utf-8"?>
<CodeBook xmlns="urn:QDA-XML:codebook:1.0" origin="ATLAS.ti Win 23.4.0">
  <Codes>
    <Code guid="1FF58B12-6F6F-4B0C-8BE5-BBDC91F55294" name="Harm" color="#46AA00" isCodable="false">
      <Description>Category: kinds of harm.</Description>
      <Code guid="{2FF58B12-6F6F-4B0C-8BE5-BBDC91F55294}" name="Direct harm" isCodable="true">
        <Description>Names a harm.

Examples: see memo</Description>
      </Code>
    </Code>
    <Code guid="3ff58b12-6f6f-4b0c-8be5-bbdc91f55294" name="Sarcasm" isCodable="1"/>
  </Codes>
  <Sets>
    <Set name="group 1" guid="ECA18D76-2B8B-4F26-BC1D-19ECA19FB3F0"/>
    <Set name="group 2" guid="ECA18D76-2B8B-4F26-BC1D-19ECA19FB3F1"/>
  </Sets>
</CodeBook>"""


def export(default) -> bytes:
    return codebook_to_qdc(default.spec, lineage=default.lineage, origin="auditapp 0.1.0")


@pytest.mark.parametrize("index", [0, 1, 2])
def test_each_default_validates_against_the_refi_qda_schema_and_round_trips(index):
    default = default_codebooks()[index]
    content = export(default)
    SCHEMA.validate(content.decode("utf-8"))
    read = qdc_read(content)
    back = codebook_parse(read.data)
    # The standard has no place for "definition written by us": an imported codebook is its author's.
    assert back.codes == tuple(code.__class__(**{**code.as_dict(), "examples": code.examples,
                                                 "definition_is_ours": False}) for code in default.spec.codes)
    assert (back.name, back.description, back.source) == (default.spec.name, default.spec.description,
                                                          default.spec.source)


def test_code_guids_are_uuid5_of_lineage_and_name_so_re_exports_match():
    default = default_codebooks()[0]
    first, again = export(default), export(default)
    assert first == again
    guid = code_guid(lineage=default.lineage, code_name="WORDING")
    assert guid == str(uuid.uuid5(default.lineage, "WORDING")).upper()
    assert f'guid="{guid}" name="WORDING"'.encode() in first
    decoded = SCHEMA.to_dict(first.decode())
    assert decoded["@origin"] == "auditapp 0.1.0"
    assert [code["@name"] for code in decoded["Codes"]["Code"]][:2] == ["WORDING", "STEREOTYPES"]
    assert decoded["Sets"]["Set"][0]["@name"] == "Thematic content and error type"
    assert len(decoded["Sets"]["Set"][0]["MemberCode"]) == 7


def test_a_file_from_another_tool_imports_its_codable_codes_depth_first():
    SCHEMA.validate(FOREIGN.decode())
    read = qdc_read(FOREIGN, fallback_name="atlas export")
    assert read.data == {"name": "atlas export", "description": "", "source": "", "codes": [
        {"name": "Direct harm", "definition": "Names a harm.\n\nExamples: see memo", "examples": []},
        {"name": "Sarcasm", "definition": "", "examples": []}]}
    assert read.code_places == ("/CodeBook/Codes/Code[1]/Code[1]", "/CodeBook/Codes/Code[2]")
    problem = read.problem_in_file(CodebookProblem("codes[1].name", 'duplicate "Sarcasm"'))
    assert str(problem) == '/CodeBook/Codes/Code[2]@name: duplicate "Sarcasm"'


def test_a_codebook_without_a_namespace_is_read_too():
    read = qdc_read(b'<CodeBook><Codes><Code guid="1FF58B12-6F6F-4B0C-8BE5-BBDC91F55294" name="A" isCodable="true"/>'
                    b'</Codes><Sets><Set guid="1FF58B12-6F6F-4B0C-8BE5-BBDC91F55295" name="Lens">'
                    b'<Description>Source:\nthe paper</Description></Set></Sets></CodeBook>')
    assert (read.data["name"], read.data["description"], read.data["source"]) == ("Lens", "", "the paper")


BILLION_LAUGHS = b"""<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
<!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">]>
<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="1FF58B12-6F6F-4B0C-8BE5-BBDC91F55294" name="&lol3;"
isCodable="true"/></Codes></CodeBook>"""
EXTERNAL_ENTITY = b"""<?xml version="1.0"?>
<!DOCTYPE CodeBook [<!ENTITY secret SYSTEM "file:///etc/passwd">]>
<CodeBook xmlns="urn:QDA-XML:codebook:1.0"><Codes><Code guid="1FF58B12-6F6F-4B0C-8BE5-BBDC91F55294"
name="&secret;" isCodable="true"/></Codes></CodeBook>"""


@pytest.mark.parametrize(("content", "expected"), [
    (BILLION_LAUGHS, "the file declares a DOCTYPE or entities, refused"),
    (EXTERNAL_ENTITY, "the file declares a DOCTYPE or entities, refused"),
    (b"<CodeBook><Codes>", "not well-formed XML"),
    (b"", "not well-formed XML"),
    (b"<Project/>", "/: the root element is <Project>, not <CodeBook>"),
    (b'<CodeBook xmlns="urn:QDA-XML:project:1.0"><Codes/></CodeBook>',
     '/CodeBook: namespace "urn:QDA-XML:project:1.0" is not "urn:QDA-XML:codebook:1.0"'),
    (b"<CodeBook/>", "/CodeBook: no <Codes> element"),
    (b"<CodeBook><Codes/></CodeBook>", "/CodeBook/Codes: no codable <Code>"),
    (b'<CodeBook><Codes><Code name="A" isCodable="true"/></Codes></CodeBook>', "/CodeBook/Codes/Code[1]@guid: required"),
    (b'<CodeBook><Codes><Code guid="nope" name="A" isCodable="true"/></Codes></CodeBook>',
     '/CodeBook/Codes/Code[1]@guid: "nope" is not a GUID'),
    (b'<CodeBook><Codes><Code guid="1FF58B12-6F6F-4B0C-8BE5-BBDC91F55294" isCodable="true"/></Codes></CodeBook>',
     "/CodeBook/Codes/Code[1]@name: required"),
    (b'<CodeBook><Codes><Code guid="1FF58B12-6F6F-4B0C-8BE5-BBDC91F55294" name="A" isCodable="yes"/></Codes>'
     b"</CodeBook>", '/CodeBook/Codes/Code[1]@isCodable: "yes" is not true or false'),
    (b" " * (QDC_MAX_BYTES + 1), "the file has 2,097,153 bytes: at most 2,097,152"),
])
def test_a_bad_or_unsafe_file_is_refused_naming_the_problem(content, expected):
    with pytest.raises(QDCInvalid) as raised:
        qdc_read(content)
    assert any(str(problem).startswith(expected) for problem in raised.value.problems), raised.value.problems
