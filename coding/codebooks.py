"""Codebooks as data, pure: the validation of a codebook given as JSON and the three defaults of seed 000.

A codebook is one lens of an error-analysis round (seed 000 §3.4 "Error Analysis", §4.3): a name, a description
for coders, a ``source`` saying where its codes and definitions come from, and its codes, each with a name, a
definition, short examples and the key that toggles it on the coding page. The JSON shape is::

    {"name": str, "description": str, "source": str,
     "codes": [{"name": str, "definition": str, "examples": [str], "shortcut": str, "definition_is_ours": bool}]}

Only ``name`` and the codes' names are required. :func:`codebook_parse` checks everything at once and raises
:class:`CodebookInvalid` naming every problem with its path (``codes[3].name: duplicate "TONE"``), so a researcher
fixes a file in one go. A code given no shortcut gets the next free key, digits 1-9 first, then letters; the keys
the coding page itself uses (n, p, m, ?) are never given and refused when asked for. At most 35 codes (9 digits
and 26 letters, the most a keyboard lens could ever hold); past the free keys a code simply has no shortcut.

The defaults (``coding/data/codebooks.json``) are the three lenses the paper names; it names the codes but never
defines them, so every definition is ours and says so (``definition_is_ours``).
"""
from __future__ import annotations

import json
import string
import uuid
from dataclasses import dataclass, field
from pathlib import Path

from common.json_input import json_kind
from common.participant_input import unstorable_reason

DEFAULTS_PATH = Path(__file__).with_name("data") / "codebooks.json"

CODEBOOK_NAME_MAX = 200
CODE_NAME_MAX = 100
TEXT_MAX = 4000
EXAMPLE_MAX = 300
EXAMPLES_MAX = 10
MAX_CODES = 9 + 26
# The coding page's own keys (next, previous, memo, help; Enter and Escape are not single characters).
RESERVED_SHORTCUTS = frozenset("npm?")
SHORTCUT_ORDER = "123456789" + "".join(c for c in string.ascii_lowercase if c not in RESERVED_SHORTCUTS)
ALLOWED_SHORTCUTS = frozenset("0" + SHORTCUT_ORDER)
CODEBOOK_KEYS = frozenset({"name", "description", "source", "codes"})
CODE_KEYS = frozenset({"name", "definition", "examples", "shortcut", "definition_is_ours"})
# An optional key left out, told apart from one given as null (which is a problem, as any other wrong type).
ABSENT = object()


@dataclass(frozen=True)
class CodeSpec:
    name: str
    definition: str = ""
    examples: tuple[str, ...] = ()
    shortcut: str = ""
    definition_is_ours: bool = False

    def as_dict(self) -> dict:
        return {"name": self.name, "definition": self.definition, "examples": list(self.examples),
                "shortcut": self.shortcut, "definition_is_ours": self.definition_is_ours}


@dataclass(frozen=True)
class CodebookSpec:
    name: str
    description: str = ""
    source: str = ""
    codes: tuple[CodeSpec, ...] = ()

    def as_dict(self) -> dict:
        return {"name": self.name, "description": self.description, "source": self.source,
                "codes": [code.as_dict() for code in self.codes]}


@dataclass(frozen=True)
class DefaultCodebook:
    """A shipped codebook: its spec and the fixed lineage every version of it shares."""

    lineage: uuid.UUID
    spec: CodebookSpec


@dataclass(frozen=True)
class CodebookProblem:
    path: str
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}" if self.path else self.message

    def as_dict(self) -> dict:
        return {"path": self.path, "message": self.message}


@dataclass
class CodebookInvalid(ValueError):
    """Every problem of a codebook; nothing may be stored from it."""

    problems: list[CodebookProblem] = field(default_factory=list)

    def __str__(self) -> str:
        return "; ".join(str(problem) for problem in self.problems)


def codebook_parse(data: object) -> CodebookSpec:
    """The codebook ``data`` describes (the JSON shape of the module docstring), with every code's shortcut given.

    Raises :class:`CodebookInvalid` listing every problem: unknown keys, wrong types, empty or too long names,
    duplicate code names (case-insensitive: "Tone" and "TONE" would read as one code), duplicate, reserved or
    impossible shortcuts, examples that are not short one-line strings, no codes, more than ``MAX_CODES`` codes.
    """
    problems: list[CodebookProblem] = []
    if not isinstance(data, dict):
        raise CodebookInvalid([CodebookProblem("", f"a codebook is a JSON object, not {json_kind(data)}")])
    problems += [CodebookProblem(key, "unknown key (expected: codes, description, name, source)")
                 for key in sorted(set(map(str, data)) - CODEBOOK_KEYS)]
    name = _text(data.get("name", ABSENT), "name", problems, required=True, max_length=CODEBOOK_NAME_MAX)
    description = _text(data.get("description", ABSENT), "description", problems, max_length=TEXT_MAX)
    source = _text(data.get("source", ABSENT), "source", problems, max_length=TEXT_MAX)
    codes = _codes(data.get("codes", ABSENT), problems)
    if problems:
        raise CodebookInvalid(problems)
    return CodebookSpec(name=name, description=description, source=source, codes=codes)


def _codes(raw: object, problems: list[CodebookProblem]) -> tuple[CodeSpec, ...]:
    if not isinstance(raw, list):
        problems.append(CodebookProblem("codes", "required: a list of codes" if raw is ABSENT
                                        else f"must be a list of codes, not {json_kind(raw)}"))
        return ()
    if not raw:
        problems.append(CodebookProblem("codes", "a codebook needs at least one code"))
    if len(raw) > MAX_CODES:
        problems.append(CodebookProblem("codes", f"{len(raw)} codes: at most {MAX_CODES} (9 digits and 26 letters "
                                                 f"to type them)"))
    parsed: list[dict] = []
    seen_names: dict[str, int] = {}
    seen_shortcuts: dict[str, int] = {}
    for index, entry in enumerate(raw):
        path = f"codes[{index}]"
        if not isinstance(entry, dict):
            problems.append(CodebookProblem(path, f"a code is a JSON object, not {json_kind(entry)}"))
            continue
        problems += [CodebookProblem(f"{path}.{key}", "unknown key (expected: definition, definition_is_ours, "
                                                      "examples, name, shortcut)")
                     for key in sorted(set(map(str, entry)) - CODE_KEYS)]
        name = _text(entry.get("name", ABSENT), f"{path}.name", problems, required=True, max_length=CODE_NAME_MAX)
        if name:
            folded = name.casefold()
            if folded in seen_names:
                problems.append(CodebookProblem(f"{path}.name", f'duplicate "{name}" (also codes[{seen_names[folded]}])'))
            else:
                seen_names[folded] = index
        definition = _text(entry.get("definition", ABSENT), f"{path}.definition", problems, max_length=TEXT_MAX)
        examples = _examples(entry.get("examples", ABSENT), f"{path}.examples", problems)
        shortcut = _shortcut(entry.get("shortcut", ABSENT), f"{path}.shortcut", problems)
        if shortcut:
            if shortcut in seen_shortcuts:
                problems.append(CodebookProblem(f"{path}.shortcut",
                                                f'"{shortcut}" is already the key of codes[{seen_shortcuts[shortcut]}]'))
            else:
                seen_shortcuts[shortcut] = index
        ours = entry.get("definition_is_ours", False)
        if not isinstance(ours, bool):
            problems.append(CodebookProblem(f"{path}.definition_is_ours", f"must be true or false, not {json_kind(ours)}"))
        parsed.append({"name": name, "definition": definition, "examples": examples, "shortcut": shortcut,
                       "definition_is_ours": ours is True})
    free = iter(key for key in SHORTCUT_ORDER if key not in seen_shortcuts)
    for code in parsed:
        code["shortcut"] = code["shortcut"] or next(free, "")
    return tuple(CodeSpec(**code) for code in parsed)


def _text(raw: object, path: str, problems: list[CodebookProblem], *, required: bool = False,
          max_length: int) -> str:
    if raw is ABSENT:
        if required:
            problems.append(CodebookProblem(path, "required"))
        return ""
    if not isinstance(raw, str):
        problems.append(CodebookProblem(path, f"must be text, not {json_kind(raw)}"))
        return ""
    text = raw.strip()
    if required and not text:
        problems.append(CodebookProblem(path, "empty name"))
    if len(raw) > max_length:
        problems.append(CodebookProblem(path, f"too long: {len(raw)} characters, at most {max_length}"))
    if reason := unstorable_reason(text):
        problems.append(CodebookProblem(path, reason))
    return text


def _examples(raw: object, path: str, problems: list[CodebookProblem]) -> tuple[str, ...]:
    if raw is ABSENT:
        return ()
    if not isinstance(raw, list):
        problems.append(CodebookProblem(path, f"must be a list of strings, not {json_kind(raw)}"))
        return ()
    if len(raw) > EXAMPLES_MAX:
        problems.append(CodebookProblem(path, f"{len(raw)} examples: at most {EXAMPLES_MAX}"))
    examples = []
    for index, example in enumerate(raw):
        if not isinstance(example, str):
            problems.append(CodebookProblem(f"{path}[{index}]", f"examples must be strings, not {json_kind(example)}"))
            continue
        text = example.strip()
        if not text:
            problems.append(CodebookProblem(f"{path}[{index}]", "empty example"))
        elif "\n" in text or "\r" in text:
            problems.append(CodebookProblem(f"{path}[{index}]", "an example is one line"))
        elif len(example) > EXAMPLE_MAX:
            problems.append(CodebookProblem(f"{path}[{index}]",
                                            f"too long: {len(example)} characters, at most {EXAMPLE_MAX}"))
        elif reason := unstorable_reason(text):
            problems.append(CodebookProblem(f"{path}[{index}]", reason))
        examples.append(text)
    return tuple(examples)


def _shortcut(raw: object, path: str, problems: list[CodebookProblem]) -> str:
    if raw is ABSENT or raw == "":
        return ""
    if not isinstance(raw, str):
        problems.append(CodebookProblem(path, f"must be one character, not {json_kind(raw)}"))
        return ""
    key = raw.lower()
    if key in RESERVED_SHORTCUTS:
        problems.append(CodebookProblem(path, f'shortcut reserved: "{raw}" is a key of the coding page itself '
                                              f'(n, p, m, ?)'))
        return ""
    if key not in ALLOWED_SHORTCUTS:
        problems.append(CodebookProblem(path, f'"{raw}" cannot be a shortcut: one digit or one letter'))
        return ""
    return key


def default_codebooks(path: Path = DEFAULTS_PATH) -> list[DefaultCodebook]:
    """The shipped codebooks, in lens order (seed 000 §3.4: thematic, disability-studies, reasoning structure).

    The file holds ``{"codebooks": [{"lineage": uuid, ...codebook}]}``; each entry must be a valid codebook, or
    this raises :class:`CodebookInvalid` with paths prefixed by the entry (``codebooks[1].codes[0].name``).
    """
    entries = json.loads(path.read_text(encoding="utf-8"))["codebooks"]
    defaults, problems = [], []
    for index, entry in enumerate(entries):
        body = {key: value for key, value in entry.items() if key != "lineage"}
        try:
            defaults.append(DefaultCodebook(lineage=uuid.UUID(entry["lineage"]), spec=codebook_parse(body)))
        except CodebookInvalid as invalid:
            problems += [CodebookProblem(f"codebooks[{index}].{p.path}".rstrip("."), p.message)
                         for p in invalid.problems]
    if problems:
        raise CodebookInvalid(problems)
    return defaults
