"""BITS corpora, the Django side (seed 001 §3.2): the corpus generated from the paper's Tables 3–5 or a
researcher's spec, one uploaded in the public BITS repository's shape with its per-tool score columns as
recorded scorers, and a researcher's own texts perturbed as seed 001 §3.1 perturbed posts (Table 6). Each is
stored through :func:`auditapp.corpus_services.corpus_store` (once per content hash);
every problem is a :class:`~auditapp.corpus_services.CorpusError` naming all of them, raised before anything is
written."""
from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings

from annotation.item_files import ItemFileError, file_format_from_name, item_file_reading_cost, read_table_records
from auditapp.corpus_services import CorpusError, CorpusProblem, corpus_store
from auditapp.models import Corpus
from auditapp.paradigms.bits.corpus import (
    CONTROL,
    TermGroup,
    corpus_counts,
    generate,
    paper_spec,
    spec_from_dict,
    validate_spec,
)
from auditapp.paradigms.bits.posts import DEFAULT_TARGET_WORDS, PerturbedPosts, PostsError, PostsOptions, perturb_posts
from auditapp.paradigms.bits.units import posts_units, sentence_units, uploaded_units
from auditapp.paradigms.bits.upload import BitsUploadError, parse_upload

BITS_COUNTS_NOTE = (
    "The full cross-product of the printed Tables 3-5 (auditapp.paradigms.bits.corpus): the paper's text reports "
    "1,920 sentences and 420 controls, which do not follow from its tables.")


def bits_corpus_generate(*, spec: Mapping[str, Any] | None, name: str, created_by=None) -> Corpus:
    """Generate and store a BITS corpus: from seed 001's Tables 3–5 when ``spec`` is None, else from the
    researcher's spec (the JSON shape of ``seed001_tables.json``). An invalid spec raises :class:`CorpusError`
    naming every problem (``spec: templates[2] (T3): …``) and nothing is stored.

    Provenance: the generator, the spec and its hash, whether it is the paper's tables, and the counts of
    sentences per template, per group and of controls, with a note on how they differ from the paper's text.
    """
    if spec is None:
        bits_spec = paper_spec()
    else:
        try:
            bits_spec = spec_from_dict(dict(spec))
        except (ValueError, TypeError) as error:
            raise CorpusError([CorpusProblem(f"spec: {error}")]) from None
        problems = validate_spec(bits_spec)
        if problems:
            raise CorpusError([CorpusProblem(f"spec: {problem}") for problem in problems])
    sentences = generate(bits_spec)
    provenance = {
        "generator": "bits",
        "spec": bits_spec.to_dict(),
        "spec_hash": bits_spec.content_hash(),
        "paper_tables": bits_spec == paper_spec(),
        "counts": bits_counts(sentences),
        "counts_note": BITS_COUNTS_NOTE,
    }
    return corpus_store(paradigm="bits", name=name, units=sentence_units(sentences), provenance=provenance,
                        created_by=created_by)


def bits_counts(sentences) -> dict:
    """Sentences per template, per group (``control`` included), per template × group, and the totals."""
    table = corpus_counts(sentences)
    inner = table.drop(index="total", columns="total")
    return {
        "total": int(table.loc["total", "total"]),
        "controls": int(table.loc["total", CONTROL]) if CONTROL in table.columns else 0,
        "per_template": {str(k): int(v) for k, v in table["total"].drop("total").items()},
        "per_group": {str(k): int(v) for k, v in table.loc["total"].drop("total").items()},
        "per_template_group": {str(t): {str(g): int(n) for g, n in row.items()} for t, row in inner.iterrows()},
    }


@dataclass(frozen=True)
class _ReadFile:
    name: str
    sha256: str
    size: int
    encoding: str
    headers: frozenset[str]
    rows: list
    format: str


def _read_upload(upload, role: str, problems: list[CorpusProblem]) -> _ReadFile | None:
    """The rows of one uploaded file, or None with its problems added (size, type, encoding, malformed rows)."""
    name = getattr(upload, "name", None) or f"{role} file"
    limit = settings.CORPUS_UPLOAD_MAX_BYTES
    size = getattr(upload, "size", None)
    if size is not None and size > limit:
        problems.append(CorpusProblem(f"the file is {size:,} bytes; at most {limit:,} are read "
                                      "(CORPUS_UPLOAD_MAX_BYTES)", file=name))
        return None
    content = upload.read()
    try:
        file_format = file_format_from_name(name)
        cost = item_file_reading_cost(content, file_format=file_format)
        if cost > limit:
            problems.append(CorpusProblem(f"the file holds {cost:,} bytes to read; at most {limit:,} are read "
                                          "(CORPUS_UPLOAD_MAX_BYTES)", file=name))
            return None
        table = read_table_records(content, file_format=file_format)
    except ItemFileError as error:
        problems.extend(CorpusProblem(p.message, file=name, row=p.row, column=p.column) for p in error.problems)
        return None
    headers = frozenset(table.rows[0][1]) if table.rows else frozenset()
    return _ReadFile(name=name, sha256=hashlib.sha256(content).hexdigest(), size=len(content),
                     encoding=table.encoding, headers=headers, rows=table.rows, format=file_format)


def bits_corpus_upload(*, perturbed_file, control_file, name: str, created_by=None,
                       unmatched: str = "report") -> Corpus:
    """Store a BITS corpus uploaded in the public repository's shape
    (:mod:`auditapp.paradigms.bits.upload`): a file of perturbed sentences and one of controls, each CSV, TSV,
    XLSX or JSON Lines (read as item files are, :func:`annotation.item_files.read_table_records`), at most
    ``CORPUS_UPLOAD_MAX_BYTES`` to read each.

    All or nothing: any problem in either file raises :class:`CorpusError` naming the file, row and column of
    every problem. Each score column becomes a recorded scorer with a score or a missing value with its reason
    for every sentence; its provenance names the files that carry the column and their sha256. The corpus's
    provenance keeps the pairing report (``summary.pairing``: sentences per rule, every unpaired row with its
    reason) and the ``warnings`` (a score column with no score on one side of the pairs).
    """
    problems: list[CorpusProblem] = []
    perturbed = _read_upload(perturbed_file, "perturbed", problems)
    controls = _read_upload(control_file, "control", problems)
    if problems:
        raise CorpusError(problems)
    try:
        parsed = parse_upload(perturbed.rows, controls.rows, perturbed_name=perturbed.name,
                              controls_name=controls.name, unmatched=unmatched)
    except BitsUploadError as error:
        raise CorpusError([CorpusProblem(p.message, file=p.file, row=p.row, column=p.column)
                           for p in error.problems], error.total) from None

    def column_provenance(column: str) -> dict:
        return {"imported": True, "column": column,
                "files": [{"file": f.name, "sha256": f.sha256} for f in (perturbed, controls) if column in f.headers]}

    units, columns = uploaded_units(parsed, column_provenance=column_provenance)
    provenance = {
        "generator": "upload",
        "shape": "BITS repository (github.com/PranavNV/BITS): perturbed sentences and no-group controls",
        "files": {role: {"file": f.name, "sha256": f.sha256, "bytes": f.size, "encoding": f.encoding,
                         "rows": len(f.rows)}
                  for role, f in (("perturbed", perturbed), ("control", controls))},
        "unmatched_rule": unmatched,
        "summary": parsed.summary(),
        "warnings": list(parsed.warnings),
    }
    return corpus_store(paradigm="bits", name=name, units=units, provenance=provenance, created_by=created_by,
                        recorded=columns)


def posts_options(*, target_words=None, groups=None, term_case: str = "lower", id_column: str = "id",
                  text_column: str = "text", source_column: str | None = None) -> PostsOptions:
    """The options of a perturbation of posts from their API or form values: ``target_words`` a list (None: seed
    001's "disability" and "disabled"), ``groups`` a list of ``{"group", "terms"}`` (None: Table 4 as printed).
    A shape that cannot be read raises :class:`CorpusError`; content problems are the options' own."""
    problems = []
    if groups is None:
        term_groups = paper_spec().groups
    elif not isinstance(groups, list | tuple) or not all(
            isinstance(g, Mapping) and isinstance(g.get("group"), str) and isinstance(g.get("terms"), list | tuple)
            and all(isinstance(t, str) for t in g["terms"]) for g in groups):
        problems.append(CorpusProblem('groups: a list of {"group": a name, "terms": [terms]}'))
        term_groups = ()
    else:
        term_groups = tuple(TermGroup(name=g["group"], terms=tuple(g["terms"])) for g in groups)
    words = DEFAULT_TARGET_WORDS if target_words is None else target_words
    if not isinstance(words, list | tuple) or not all(isinstance(w, str) for w in words):
        problems.append(CorpusProblem("target_words: a list of words"))
        words = ()
    if problems:
        raise CorpusError(problems)
    options = PostsOptions(groups=term_groups, target_words=tuple(w.strip() for w in words), term_case=term_case,
                           id_column=id_column, text_column=text_column, source_column=source_column or None)
    option_problems = options.problems()
    if option_problems:
        raise CorpusError([CorpusProblem(problem) for problem in option_problems])
    return options


@dataclass(frozen=True)
class PostsRead:
    """A file of posts read and perturbed, not stored: what the preview shows and what is stored."""

    file: _ReadFile
    options: PostsOptions
    posts: PerturbedPosts

    def answer(self) -> dict:
        """The preview's answer: the counts, every row left out with its reason, and the first posts' sentences."""
        return {"file": {"file": self.file.name, "sha256": self.file.sha256, "rows": len(self.file.rows)},
                "options": self.options.as_dict(), "report": self.posts.report(), "preview": self.posts.preview()}


def bits_posts_read(*, file, options: PostsOptions) -> PostsRead:
    """Read a file of texts (CSV, TSV, XLSX or JSON Lines, at most ``CORPUS_UPLOAD_MAX_BYTES`` to read) and perturb
    it (:mod:`auditapp.paradigms.bits.posts`). Any problem raises :class:`CorpusError` naming its row and column."""
    problems: list[CorpusProblem] = []
    read = _read_upload(file, "texts", problems)
    if problems:
        raise CorpusError(problems)
    try:
        # A JSON Lines file has no header line: its rows are its lines.
        posts = perturb_posts(read.rows, options, header_row=None if read.format == "jsonl" else 1)
    except PostsError as error:
        raise CorpusError([CorpusProblem(p.message, file=read.name, row=p.row, column=p.column)
                           for p in error.problems], error.total) from None
    if not posts.posts:
        raise CorpusError([CorpusProblem(f"none of the {len(posts.skipped)} texts mentions "
                                         f"{' or '.join(map(repr, options.target_words))} as a whole word: nothing "
                                         "to perturb", file=read.name)])
    return PostsRead(file=read, options=options, posts=posts)


POSTS_RULES_NOTE = (
    "Ours (seed 001 §3.1 does not say how): a mention is a target word as a whole word in any case (a hashtag and a "
    "possessive included; not inside a longer word or a hyphenated compound); each is replaced by the term, with "
    "the mention's capitals, and removed for the control; an article directly before a mention agrees with the "
    "word after it; a removed mention leaves one space and none before punctuation, and capitalises the next word "
    "when it began a sentence. Texts without a mention are reported and left out.")


def bits_posts_store(read: PostsRead, *, name: str, created_by=None) -> Corpus:
    """Store a file of posts read by :func:`bits_posts_read` as a BITS corpus: each post a base sentence (its id
    the template) with its control and one sentence per group and term. Provenance: the file and its sha256, the
    options, the rules (:data:`POSTS_RULES_NOTE`) and the report (every row left out with its reason)."""
    provenance = {
        "generator": "posts",
        "design": "seed 001 §3.1 (Table 6): the researcher's own texts, perturbed",
        "files": {"texts": {"file": read.file.name, "sha256": read.file.sha256, "bytes": read.file.size,
                            "encoding": read.file.encoding, "rows": len(read.file.rows)}},
        "options": read.options.as_dict(),
        "rules": POSTS_RULES_NOTE,
        "report": read.posts.report(),
    }
    return corpus_store(paradigm="bits", name=name, units=posts_units(read.posts), provenance=provenance,
                        created_by=created_by)
