"""REFI-QDA codebook files (``.qdc``), pure: export a codebook, and read one into the JSON shape of
:mod:`coding.codebooks`.

The REFI-QDA codebook standard 1.0 (www.qdasoftware.org; schema
http://schema.qdasoftware.org/versions/Codebook/v1.0/Codebook.xsd, vendored under tests/data/refi-qda/) is the
exchange format ATLAS.ti, MAXQDA, NVivo, QualCoder and Taguette read: ``CodeBook`` (namespace
``urn:QDA-XML:codebook:1.0``, attribute ``origin``) holds ``Codes`` of ``Code`` elements (``guid``, ``name``,
``isCodable``, an optional ``Description``, nested ``Code`` children) and optional ``Sets``.

Export: one ``Code`` per code, its GUID a UUID5 of the codebook's lineage and the code's name, so every export of
any version gives a code the same GUID and tools can merge re-exports. The standard has no place for examples, a
codebook's name or its source, so they travel as text other tools show as-is: a code's ``Description`` is its
definition followed by an "Examples:" list, and one ``Set`` named after the codebook, with every code as a
member, carries the description and the source.

Import: the file is refused if it has a DOCTYPE (entity expansion, "billion laughs", and external entities need
one; a .qdc never does) or is larger than ``QDC_MAX_BYTES``. Codes are read depth first; codes marked
``isCodable="false"`` are categories and are skipped (a lens is flat). Every problem is named with its place in
the file. Shortcuts are not part of the standard: imported codes get the next free keys.
"""
from __future__ import annotations

import re
import uuid
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from xml.parsers import expat

from coding.codebooks import CodebookProblem, CodebookSpec

NAMESPACE = "urn:QDA-XML:codebook:1.0"
SCHEMA_LOCATION = "http://schema.qdasoftware.org/versions/Codebook/v1.0/Codebook.xsd"
QDC_MAX_BYTES = 2 * 1024 * 1024
EXAMPLES_HEADING = "\n\nExamples:\n"
SOURCE_HEADING = "\n\nSource:\n"
EXAMPLE_BULLET = "- "
GUID_PATTERN = re.compile(r"^(\{)?[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}(?(1)\})$")
# The set's GUID is derived from the lineage under this name, which no code name can take (code names are stripped).
SET_GUID_NAME = " codebook set "


@dataclass
class QDCInvalid(ValueError):
    """The file cannot be read as a REFI-QDA codebook; ``problems`` name every place that is wrong."""

    problems: tuple[CodebookProblem, ...]

    def __str__(self) -> str:
        return "; ".join(str(problem) for problem in self.problems)


def code_guid(*, lineage: uuid.UUID, code_name: str) -> str:
    """The code's GUID in every export of the codebook's versions: UUID5 of the lineage and the name."""
    return str(uuid.uuid5(lineage, code_name)).upper()


def codebook_to_qdc(spec: CodebookSpec, *, lineage: uuid.UUID, origin: str) -> bytes:
    """The codebook as a REFI-QDA codebook document (UTF-8 XML, valid against Codebook.xsd v1.0)."""
    # Unprefixed elements under a default namespace, as the standard's examples write them (ElementTree's own
    # namespace handling would prefix them, or refuse unqualified attributes).
    root = ET.Element("CodeBook", {"xmlns": NAMESPACE, "origin": origin})
    codes = ET.SubElement(root, "Codes")
    for code in spec.codes:
        element = ET.SubElement(codes, "Code", {
            "guid": code_guid(lineage=lineage, code_name=code.name), "name": code.name, "isCodable": "true"})
        description = code.definition
        if code.examples:
            description += EXAMPLES_HEADING + "\n".join(EXAMPLE_BULLET + example for example in code.examples)
        if description.strip():
            ET.SubElement(element, "Description").text = description.strip()
    sets = ET.SubElement(root, "Sets")
    codebook_set = ET.SubElement(sets, "Set", {
        "guid": str(uuid.uuid5(lineage, SET_GUID_NAME)).upper(), "name": spec.name})
    set_description = spec.description + (SOURCE_HEADING + spec.source if spec.source else "")
    if set_description.strip():
        ET.SubElement(codebook_set, "Description").text = set_description.strip()
    for code in spec.codes:
        ET.SubElement(codebook_set, "MemberCode", {
            "guid": code_guid(lineage=lineage, code_name=code.name)})
    ET.indent(root)
    return b'<?xml version="1.0" encoding="utf-8"?>\n' + ET.tostring(root, encoding="utf-8", xml_declaration=False)


@dataclass(frozen=True)
class QDCCodebook:
    """A codebook read from a .qdc file: ``data`` in the JSON shape of :mod:`coding.codebooks`, and where in the
    file each of its codes is (``code_places[i]`` for ``codes[i]``), to name a code's problems by its place."""

    data: dict
    code_places: tuple[str, ...]

    def problem_in_file(self, problem: CodebookProblem) -> CodebookProblem:
        """A :func:`codebook_parse` problem (``codes[2].name: ...``) named by its place in the file instead."""
        found = re.match(r"codes\[(\d+)\]\.?(.*)$", problem.path)
        if not found or int(found.group(1)) >= len(self.code_places):
            return problem
        attribute = {"name": "@name", "definition": "/Description", "": ""}.get(found.group(2),
                                                                                 f" ({found.group(2)})")
        return CodebookProblem(self.code_places[int(found.group(1))] + attribute, problem.message)


def qdc_read(content: bytes, *, fallback_name: str = "") -> QDCCodebook:
    """The codebook a .qdc file describes, for :func:`coding.codebooks.codebook_parse` to validate.

    Its name is the one ``Set``'s name when the file has exactly one set, else ``fallback_name`` (e.g. the file's
    name). Raises :class:`QDCInvalid` naming every problem of the file; the codebook's own problems (duplicate
    names, too many codes) are :func:`codebook_parse`'s to name.
    """
    root = _parse_safely(content)
    problems: list[CodebookProblem] = []
    namespace, _, local = root.tag[1:].partition("}") if root.tag.startswith("{") else ("", "", root.tag)
    if local != "CodeBook":
        raise QDCInvalid((CodebookProblem("/", f"the root element is <{local}>, not <CodeBook>"),))
    if namespace not in ("", NAMESPACE):
        problems.append(CodebookProblem("/CodeBook", f'namespace "{namespace}" is not "{NAMESPACE}"'))

    def tag(name: str) -> str:
        return f"{{{namespace}}}{name}" if namespace else name

    codes_element = root.find(tag("Codes"))
    codes: list[dict] = []
    places: list[str] = []
    if codes_element is None:
        problems.append(CodebookProblem("/CodeBook", "no <Codes> element"))
    else:
        for place, element in _codes_depth_first(codes_element, tag, "/CodeBook/Codes"):
            code = _code(element, place, tag, problems)
            if code is not None:
                codes.append(code)
                places.append(place)
        if not codes and not problems:
            problems.append(CodebookProblem("/CodeBook/Codes", "no codable <Code>"))
    sets = root.findall(f"{tag('Sets')}/{tag('Set')}")
    name, description, source = fallback_name, "", ""
    if len(sets) == 1:
        name = sets[0].get("name") or fallback_name
        description, _, source = ("\n\n" + _description(sets[0], tag)).partition(SOURCE_HEADING)
    if problems:
        raise QDCInvalid(tuple(problems))
    return QDCCodebook(data={"name": name, "description": description.strip(), "source": source.strip(),
                             "codes": codes}, code_places=tuple(places))


def _parse_safely(content: bytes) -> ET.Element:
    """The document's root, read with expat directly: ElementTree's C parser cannot be told to refuse a DOCTYPE."""
    if not isinstance(content, bytes):
        raise QDCInvalid((CodebookProblem("", "the file must be bytes"),))
    if len(content) > QDC_MAX_BYTES:
        raise QDCInvalid((CodebookProblem("", f"the file has {len(content):,} bytes: at most {QDC_MAX_BYTES:,}"),))
    builder = ET.TreeBuilder()
    parser = expat.ParserCreate(namespace_separator="}")

    def qualified(name: str) -> str:
        return "{" + name if "}" in name else name

    def refuse_doctype(*args) -> None:
        raise QDCInvalid((CodebookProblem("", "the file declares a DOCTYPE or entities, refused (a .qdc needs "
                                              "none)"),))

    parser.StartDoctypeDeclHandler = refuse_doctype
    parser.EntityDeclHandler = refuse_doctype
    parser.StartElementHandler = lambda name, attributes: builder.start(
        qualified(name), {qualified(key): value for key, value in attributes.items()})
    parser.EndElementHandler = lambda name: builder.end(qualified(name))
    parser.CharacterDataHandler = builder.data
    try:
        parser.Parse(content, True)
        return builder.close()
    except expat.ExpatError as error:
        raise QDCInvalid((CodebookProblem("", f"not well-formed XML: {error}"),)) from None


def _codes_depth_first(parent: ET.Element, tag, place: str):
    for index, element in enumerate(parent.findall(tag("Code")), start=1):
        here = f"{place}/Code[{index}]"
        yield here, element
        yield from _codes_depth_first(element, tag, here)


def _code(element: ET.Element, place: str, tag, problems: list[CodebookProblem]) -> dict | None:
    guid, name, codable = element.get("guid"), element.get("name"), element.get("isCodable")
    if guid is None:
        problems.append(CodebookProblem(f"{place}@guid", "required"))
    elif not GUID_PATTERN.match(guid.strip()):
        problems.append(CodebookProblem(f"{place}@guid", f'"{guid}" is not a GUID'))
    if name is None:
        problems.append(CodebookProblem(f"{place}@name", "required"))
    if codable is None:
        problems.append(CodebookProblem(f"{place}@isCodable", "required"))
    elif codable.strip() not in ("true", "false", "1", "0"):
        problems.append(CodebookProblem(f"{place}@isCodable", f'"{codable}" is not true or false'))
    if name is None or codable is None or codable.strip() in ("false", "0"):
        return None
    return {"name": name, **_definition_and_examples(_description(element, tag))}


def _definition_and_examples(description: str) -> dict:
    """Our exports' "definition, Examples: - ..." split back; any other description is all definition."""
    definition, heading, tail = ("\n\n" + description).rpartition(EXAMPLES_HEADING)
    lines = [line.strip() for line in tail.splitlines() if line.strip()]
    if heading and lines and all(line.startswith(EXAMPLE_BULLET) for line in lines):
        return {"definition": definition.strip(), "examples": [line[len(EXAMPLE_BULLET):] for line in lines]}
    return {"definition": description.strip(), "examples": []}


def _description(element: ET.Element, tag) -> str:
    description = element.find(tag("Description"))
    return (description.text or "") if description is not None else ""
