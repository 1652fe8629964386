"""Seed 001's first stage (§3.1, Table 6): a researcher's own texts (posts, tweets, comments) with every mention
of a target word replaced by each term of each group, and a control sentence with the mention removed. Pure: no
Django.

The paper "perturbed the words 'disability' and 'disabled' by replacing them with words from four distinct groups
(Table 4)" and "generated a control group by removing any social group mentions in the same sentences" (§3.1); it
does not say how a mention is found or how the sentence is mended. Ours, stated here and in the corpus's
provenance:

- A **mention** is a target word as a whole word in any case (:data:`DEFAULT_TARGET_WORDS` unless the researcher
  gives others): not inside a longer word or a hyphenated compound, so "disabilities", "non-disabled" and
  "disability-related" are not mentions (add them as target words to count them). A hashtag ("#disabled") is a
  mention; so is a possessive ("disability's"), whose "'s" stays with the term and goes with the removed mention.
- **Perturbed sentence**: every mention of the text replaced by the same term, one sentence per term. The term
  is lower-cased (``term_case="lower"``, as the template generator does) or kept as Table 4 prints it
  (``as_printed``); a mention written with a capital first letter gives the term a capital first letter, one
  written in capitals gives it in capitals; a hashtag gives the term as a hashtag without its spaces
  ("#hearingloss").
- **Control**: every mention removed, with its "#" and its possessive "'s".
- **Grammar fixes** (only next to a mention; the rest of the text is left as written): an article "a"/"an"
  directly before a mention agrees with the word that now follows it, by its first letter (the template
  generator's letter rule: "an autistic", "a person"); a removed mention leaves one space, none before
  punctuation; a removed capitalised mention that began the text or a sentence gives the next word a capital.
- A text without a mention is **reported** with its row and id and left out of the corpus (never dropped
  silently); so is one with nothing left once its mentions are removed.

:func:`perturb_posts` reads the records of an uploaded file (row number, {header: cell text}) and returns a
:class:`PerturbedPosts`, or raises :class:`PostsError` naming the row and column of every problem (nothing is
generated from a file with a bad row). Each post is a base sentence of the analysis: its id is the sentences'
``template`` (the paired t-test compares a group's value in a post with that post's control), and an optional
source column (the platform, by default) becomes the ``source`` of the per-source breakdown.
"""
from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from auditapp.corpora import MAX_KEY_LENGTH
from auditapp.paradigms.bits.corpus import CONTROL, TERM_CASES, BitsSentence, TermGroup, group_problems

DEFAULT_TARGET_WORDS = ("disability", "disabled")
"""The words seed 001 §3.1 replaced."""
DEFAULT_SOURCE_COLUMNS = ("platform", "source")
"""The columns a file's source (the per-source breakdown) is read from when the researcher names none."""
MAX_TARGET_WORDS = 50
MAX_WORD_LENGTH = 100
MAX_ID_LENGTH = 100
MAX_SOURCES = 50
MAX_TERMS = 1_000
MAX_SENTENCES = 250_000
"""Sentences (perturbed and controls) one upload may generate: each is a request per scorer."""
MAX_REPORTED = 200
PREVIEW_POSTS = 5
_VOWEL_LETTERS = frozenset("aeiouAEIOU")
_ARTICLE_BEFORE = re.compile(r"(?<![\w-])([Aa]n?)(\s+)$")
_POSSESSIVE = r"(?:['’]s)?"
_PUNCTUATION = ".,;:!?"
_PUNCTUATION_RUN = re.compile(r"[.,;:!?]*")
_CLOSERS = _PUNCTUATION + ")]}\"”’'"
_OPENERS = "\"“‘'([{"
_SPACES = re.compile(r"\s*")
_ADDRESS = re.compile(r"\b(?:https?://|www\.)\S+", re.IGNORECASE)
_ARTICLE_REACH = 20
"""How far back from a mention an article is looked for: "an" and the spaces after it."""


@dataclass(frozen=True)
class PostsOptions:
    """What to replace and with what: the target words, the term groups (Table 4 by default), the case of the
    terms, and which columns hold the id, the text and the source (headers compared without case)."""

    groups: tuple[TermGroup, ...]
    target_words: tuple[str, ...] = DEFAULT_TARGET_WORDS
    term_case: str = "lower"
    id_column: str = "id"
    text_column: str = "text"
    source_column: str | None = None
    """None: the first of :data:`DEFAULT_SOURCE_COLUMNS` the file has, else no breakdown."""

    def problems(self) -> list[str]:
        problems = []
        words = [word.strip() for word in self.target_words]
        if not words:
            problems.append("target_words: none given")
        elif len(words) > MAX_TARGET_WORDS:
            problems.append(f"target_words: {len(words)} given; at most {MAX_TARGET_WORDS}")
        if any(not word for word in words):
            problems.append("target_words: an empty word")
        long = [word for word in words if len(word) > MAX_WORD_LENGTH]
        if long:
            problems.append(f"target_words: {long[0][:40]!r}… is longer than {MAX_WORD_LENGTH} characters")
        folded = [word.casefold() for word in words]
        twice = sorted({word for word in folded if folded.count(word) > 1})
        if twice:
            problems.append(f"target_words: listed twice (case aside): {', '.join(twice)}")
        if self.term_case not in TERM_CASES:
            problems.append(f"term_case: {self.term_case!r} is not one of {', '.join(TERM_CASES)}")
        n_terms = sum(len(group.terms) for group in self.groups)
        if n_terms > MAX_TERMS:
            problems.append(f"groups: {n_terms:,} terms; at most {MAX_TERMS:,}")
        else:
            problems += group_problems(self.groups)
        for name in ("id_column", "text_column"):
            if not str(getattr(self, name)).strip():
                problems.append(f"{name}: empty")
        return problems

    def as_dict(self) -> dict:
        return {"target_words": list(self.target_words), "groups": [{"group": g.name, "terms": list(g.terms)}
                                                                     for g in self.groups],
                "term_case": self.term_case, "id_column": self.id_column, "text_column": self.text_column,
                "source_column": self.source_column}


@dataclass(frozen=True)
class PostsProblem:
    """One problem of the file: its row as a spreadsheet counts it (header = row 1), the column, what."""

    row: int | None
    column: str | None
    message: str


class PostsError(Exception):
    """Nothing can be generated; ``problems`` lists every problem found (the first :data:`MAX_REPORTED`)."""

    def __init__(self, problems: Sequence[PostsProblem]):
        self.problems = list(problems[:MAX_REPORTED])
        self.total = len(problems)
        super().__init__(f"{self.total} problem(s): " + "; ".join(p.message for p in problems[:5]))


@dataclass(frozen=True)
class SkippedPost:
    """A row of the file left out of the corpus, and why."""

    row: int
    id: str
    reason: str


@dataclass(frozen=True)
class PerturbedPost:
    """One text of the file: its row, id, source, the text as written, its control and its perturbed sentences."""

    row: int
    id: str
    source: str
    original: str
    mentions: int
    control: BitsSentence
    sentences: tuple[BitsSentence, ...]
    metadata: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class PerturbedPosts:
    """The posts that gave sentences, the rows left out with their reasons, and the columns read."""

    posts: tuple[PerturbedPost, ...]
    skipped: tuple[SkippedPost, ...]
    source_column: str | None
    metadata_columns: tuple[str, ...]
    warnings: tuple[str, ...] = ()

    def sentences(self) -> list[BitsSentence]:
        """Every sentence, post by post: its control, then one per group and term."""
        return [sentence for post in self.posts for sentence in (post.control, *post.sentences)]

    def report(self) -> dict:
        """The counts and every row left out (the first :data:`MAX_REPORTED`), for the upload's answer and the
        corpus's provenance."""
        sources: dict[str, int] = {}
        for post in self.posts:
            sources[post.source] = sources.get(post.source, 0) + 1
        return {"rows": len(self.posts) + len(self.skipped), "posts": len(self.posts),
                "skipped": len(self.skipped), "sentences": sum(1 + len(p.sentences) for p in self.posts),
                "mentions": sum(p.mentions for p in self.posts), "per_source": sources,
                "source_column": self.source_column, "metadata_columns": list(self.metadata_columns),
                "warnings": list(self.warnings),
                "skipped_rows": [{"row": s.row, "id": s.id, "reason": s.reason} for s in self.skipped[:MAX_REPORTED]]}

    def preview(self, n: int = PREVIEW_POSTS) -> list[dict]:
        """The first ``n`` posts as the researcher checks them: the text as written, its control, and each
        perturbed sentence with its group and term."""
        return [{"row": post.row, "id": post.id, "source": post.source, "original": post.original,
                 "control": post.control.text,
                 "sentences": [{"group": s.group, "term": s.term, "text": s.text} for s in post.sentences]}
                for post in self.posts[:n]]


def mention_pattern(target_words: Iterable[str]) -> re.Pattern[str]:
    """A mention of any target word (see the module docstring): groups ``hash``, ``word``, ``possessive``. A word
    after "@" is a handle, not a mention."""
    words = sorted({word.strip() for word in target_words}, key=len, reverse=True)
    alternatives = "|".join(re.escape(word) for word in words)
    return re.compile(rf"(?<![\w#@-])(?P<hash>#?)(?P<word>{alternatives})(?P<possessive>{_POSSESSIVE})(?![\w-])",
                      re.IGNORECASE)


def mentions(text: str, pattern: re.Pattern[str]) -> list[re.Match[str]]:
    """The mentions of a text, in order, leaving out those inside a web address (``https://…/disabled``)."""
    addresses = [match.span() for match in _ADDRESS.finditer(text)]
    found, index = [], 0
    for match in pattern.finditer(text):
        while index < len(addresses) and addresses[index][1] <= match.start():
            index += 1
        if index < len(addresses) and addresses[index][0] <= match.start():
            continue
        found.append(match)
    return found


def _cased(term: str, mention: str, term_case: str) -> str:
    term = term.lower() if term_case == "lower" else term
    if len(mention) > 1 and mention.isupper():
        return term.upper()
    if mention[:1].isupper():
        return term[:1].upper() + term[1:]
    return term


def _agree(before: str, first: str) -> str:
    """``before`` with an article that ends it made to agree with ``first``, the letter that now follows it."""
    window = before[-_ARTICLE_REACH:]
    offset = len(before) - len(window)
    article = _ARTICLE_BEFORE.search(window)
    if not article or not first.isalpha():
        return before
    start = offset + article.start(1)
    if start and (before[start - 1].isalnum() or before[start - 1] in "_-"):
        return before  # the window began inside a word ("…ka "), not at an article
    wanted = "an" if first in _VOWEL_LETTERS else "a"
    agreed = (wanted[:1].upper() + wanted[1:]) if article.group(1)[:1].isupper() else wanted
    return before[:start] + agreed + before[start + len(article.group(1)):]


def perturbed_text(text: str, pattern: re.Pattern[str], term: str, *, term_case: str = "lower") -> str:
    """``text`` with every mention replaced by ``term`` (case, hashtag and article as the module docstring says)."""
    pieces, last = [], 0
    for match in mentions(text, pattern):
        replacement = _cased(term, match.group("word"), term_case)
        if match.group("hash"):
            replacement = "#" + re.sub(r"\s+", "", replacement)
        pieces += [_agree(text[last:match.start()], replacement[:1]), replacement + match.group("possessive")]
        last = match.end()
    return "".join(pieces) + text[last:]


def _capitalised(text: str) -> str:
    return re.sub(r"^(\W*)(\w)", lambda m: m.group(1) + m.group(2).upper(), text, count=1)


@dataclass(frozen=True)
class _Written:
    """What the control written so far ends with: its last visible character (None before any), whether spaces
    follow it, and whether a sentence begins there (the start, after . ! ? or a line break, or after an opening
    quote or bracket that itself begins one)."""

    last: str | None = None
    space: bool = False
    starts_sentence: bool = True

    def then(self, piece: str) -> _Written:
        if not piece:
            return self
        visible = piece.rstrip()
        trailing = piece[len(visible):]
        if not visible:
            return _Written(self.last, True, self.starts_sentence or "\n" in trailing)
        unquoted = visible.rstrip(_OPENERS)
        if unquoted != visible:
            begins = (self.starts_sentence if not unquoted else unquoted[-1] in ".!?" or
                      "\n" in visible[len(unquoted.rstrip()):] or unquoted[-1:].isspace())
        else:
            begins = visible[-1] in ".!?" or "\n" in trailing
        return _Written(visible[-1], bool(trailing), begins or "\n" in trailing)


def _past(run: re.Pattern[str], text: str, position: int) -> int:
    """Where a run of ``run`` (which matches the empty string too) starting at ``position`` ends."""
    found = run.match(text, position)
    return found.end() if found else position


def control_text(text: str, pattern: re.Pattern[str]) -> str:
    """``text`` with every mention removed, mended next to each mention only (see the module docstring): no space
    left at the start or after an opening quote or bracket, one space between the words on either side, none
    before punctuation; punctuation that would follow other punctuation goes with the mention ("I, disabled, am"
    → "I, am"); an article agrees with the word now after it; a capitalised mention that began a sentence gives
    the next word a capital."""
    pieces: list[str] = []
    written = _Written()
    position, capital_next = 0, False
    for match in mentions(text, pattern):
        before = text[position:match.start()]
        if capital_next and re.search(r"\w", before):
            before, capital_next = _capitalised(before), False
        state = written.then(before)
        resume = match.end()
        if state.last is None:  # the mention began the text: what only followed it goes with it
            resume = _past(_SPACES, text, _past(_PUNCTUATION_RUN, text, resume))
        elif state.last in _OPENERS and not state.space:
            resume = _past(_SPACES, text, resume)
        elif state.last in _PUNCTUATION:
            resume = _past(_PUNCTUATION_RUN, text, resume)
            if state.space:
                resume = _past(_SPACES, text, resume)
                if resume == len(text):
                    before = before.rstrip()
        elif state.space:
            if text[resume:resume + 1].isspace():
                resume = _past(_SPACES, text, resume)
            elif resume == len(text) or text[resume] in _CLOSERS:
                if before:
                    before = before.rstrip()
                elif pieces:
                    pieces[-1] = pieces[-1].rstrip()
        following = _past(_SPACES, text, resume)
        before = _agree(before, text[following:following + 1])
        pieces.append(before)
        written = written.then(before)
        capital_next = capital_next or (match.group("word")[:1].isupper() and written.starts_sentence)
        position = resume
    tail = text[position:]
    return "".join(pieces) + (_capitalised(tail) if capital_next else tail)


def _column(headers: Sequence[str], wanted: str) -> str | None:
    return next((header for header in headers if header.strip().casefold() == wanted.strip().casefold()), None)


def perturb_posts(records: Iterable[tuple[int, Mapping[str, str]]], options: PostsOptions, *,
                  header_row: int | None = 1) -> PerturbedPosts:
    """The perturbed posts of a file's records (see the module docstring). Raises :class:`PostsError` naming every
    problem of the options or the file (a required column missing, an empty or repeated id, an empty text, a
    sentence key too long or made twice, too many sentences); rows without a mention are not problems but
    :class:`SkippedPost` s. ``header_row`` is the row a missing column is reported at (None for a file without a
    header line, such as JSON Lines).

    The source column, when the researcher names none, is the first of :data:`DEFAULT_SOURCE_COLUMNS` the file has,
    unless it holds more than :data:`MAX_SOURCES` values (an address per text, not a platform): then there is no
    breakdown, and the report's ``warnings`` say why; a named one with more is a problem."""
    problems = [PostsProblem(None, None, problem) for problem in options.problems()]
    if problems:
        raise PostsError(problems)
    rows = [(row, {str(h): "" if v is None else str(v) for h, v in fields.items()}) for row, fields in records]
    if not rows:
        raise PostsError([PostsProblem(None, None, "the file has no rows")])
    headers = list(rows[0][1])
    id_column, text_column = _column(headers, options.id_column), _column(headers, options.text_column)
    if options.source_column:
        source_column = _column(headers, options.source_column)
        if source_column is None:
            problems.append(PostsProblem(header_row, options.source_column, "the source column is missing"))
    else:
        source_column = next((c for name in DEFAULT_SOURCE_COLUMNS if (c := _column(headers, name))), None)
    for name, column in ((options.id_column, id_column), (options.text_column, text_column)):
        if column is None:
            problems.append(PostsProblem(header_row, name, f"a required column is missing (the file has "
                                                  f"{', '.join(headers) or 'no columns'})"))
    warnings: list[str] = []
    if source_column is not None:
        values = {fields.get(source_column, "").strip() for _, fields in rows}
        if len(values) > MAX_SOURCES:
            message = (f"the column {source_column!r} has {len(values):,} values; a source (a platform) has at most "
                       f"{MAX_SOURCES}")
            if options.source_column:
                problems.append(PostsProblem(header_row, source_column, message))
            else:
                warnings.append(f"{message}: it is kept as metadata, and there is no per-source breakdown")
                source_column = None
    if problems or id_column is None or text_column is None:
        raise PostsError(problems)
    metadata_columns = tuple(h for h in headers if h not in {id_column, text_column} and h.strip())
    pattern = mention_pattern(options.target_words)
    n_terms = sum(len(group.terms) for group in options.groups)
    first_row: dict[str, int] = {}
    posts: list[PerturbedPost] = []
    skipped: list[SkippedPost] = []
    n_sentences = 0
    made: dict[str, int] = {}
    for row, fields in rows:
        found_before = len(problems)
        post_id, text = fields.get(id_column, "").strip(), fields.get(text_column, "")
        if not post_id:
            problems.append(PostsProblem(row, id_column, "empty"))
        elif len(post_id) > MAX_ID_LENGTH:
            problems.append(PostsProblem(row, id_column, f"the id has {len(post_id)} characters; at most "
                                                         f"{MAX_ID_LENGTH}"))
        elif post_id in first_row:
            problems.append(PostsProblem(row, id_column, f"the same id as row {first_row[post_id]}"))
        else:
            first_row[post_id] = row
        if not text.strip():
            problems.append(PostsProblem(row, text_column, "empty"))
        if len(problems) > found_before:
            continue
        n_mentions = len(mentions(text, pattern))
        if not n_mentions:
            words = " or ".join(repr(w) for w in options.target_words)
            skipped.append(SkippedPost(row, post_id, f"no mention of {words} as a whole word"))
            continue
        control = control_text(text, pattern)
        if not re.search(r"\w", control):
            skipped.append(SkippedPost(row, post_id, "nothing is left once the mention is removed"))
            continue
        n_sentences += 1 + n_terms
        if n_sentences > MAX_SENTENCES:
            break
        keys = [f"{post_id}|{CONTROL}", *(f"{post_id}|{group.name}|{term}" for group in options.groups
                                          for term in group.terms)]
        clash = next((key for key in keys if key in made), None)
        if clash is not None or max(map(len, keys)) > MAX_KEY_LENGTH:
            problems.append(PostsProblem(row, id_column, (
                f"its sentence key {clash!r} is also a sentence key of row {made[clash]}: use another id"
                if clash is not None else
                f"with this id a sentence key has {max(map(len, keys))} characters; at most {MAX_KEY_LENGTH} "
                "(a shorter id, group name or term)")))
            continue
        made.update(dict.fromkeys(keys, row))
        if problems:  # an earlier row's: the rest are only checked
            continue
        source = fields.get(source_column, "").strip() if source_column else ""
        control_key = f"{post_id}|{CONTROL}"
        control_sentence = BitsSentence(key=control_key, text=control, template=post_id, emotion=None, word=None,
                                        word_kind=None, group=CONTROL, term=None, source=source)
        sentences = tuple(
            BitsSentence(key=f"{post_id}|{group.name}|{term}",
                         text=perturbed_text(text, pattern, term, term_case=options.term_case), template=post_id,
                         emotion=None, word=None, word_kind=None, group=group.name, term=term,
                         control_key=control_key, source=source)
            for group in options.groups for term in group.terms)
        posts.append(PerturbedPost(row=row, id=post_id, source=source, original=text, mentions=n_mentions,
                                   control=control_sentence, sentences=sentences,
                                   metadata={column: fields.get(column, "") for column in metadata_columns}))
    if n_sentences > MAX_SENTENCES:
        problems.append(PostsProblem(None, None, f"the texts with a mention × ({n_terms} terms + a control) make "
                                                 f"more than {MAX_SENTENCES:,} sentences (fewer texts or terms)"))
    if problems:
        raise PostsError(problems)
    return PerturbedPosts(posts=tuple(posts), skipped=tuple(skipped), source_column=source_column,
                          metadata_columns=metadata_columns, warnings=tuple(warnings))


def report_for_page(report: Mapping) -> dict:
    """A stored report as a page reads it: the texts per source as (source, n) pairs, since a template looks a name
    up in a mapping before its method (a source called "items" would hide ``per_source.items``)."""
    return {**report, "per_source": list((report.get("per_source") or {}).items())}
