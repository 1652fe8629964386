"""The names of Experiment 1 of seed 002 (Törnberg 2026, Table 2 "Names used in Experiment 1") and a researcher's
own list. Pure: no Django.

:data:`TABLE_2` holds the 200 names exactly as printed: five groups (Arab, Asian, Black, Hispanic, White) × two
genders × 20 names, each row in the table's order (by embedding-based ethnic distinctiveness). White is the
reference group: every pair sets a minority-group name beside a White name of the same gender (Methods,
"Experiment 1: Names paradigm").

A researcher's list (CSV text with the header ``name,group,gender`` or a list of ``{name, group, gender}``) is
read by :func:`parse_names`, which reports every problem by row and column: an empty cell, a name over 100
characters or holding ``{``, ``}`` or a line break (it is put into a vignette in place of ``{NAME}``), a name
repeated within its group and gender, an unknown column. Group and gender are free text (a study may code
gender otherwise than the paper), non-empty and at most 40 characters. :func:`reference_problems` checks that the
list can make pairs: a reference group with names of every gender the minority groups use.
"""
from __future__ import annotations

from collections.abc import Mapping, Sequence

from auditapp.paradigms.counterfactual.material import PersonName
from auditapp.paradigms.counterfactual.problems import MaterialProblem, raise_if_any, records_of, text_problems

GROUPS = ("Arab", "Asian", "Black", "Hispanic", "White")
GENDERS = ("Female", "Male")
REFERENCE_GROUP = "White"
COLUMNS = ("name", "group", "gender")
MAX_NAME_CHARS = 100
MAX_FACTOR_CHARS = 40
FORBIDDEN_IN_NAME = ("{", "}", "\n", "\r")

# Table 2 as printed: group, gender, the 20 names in the table's order.
_TABLE_2_ROWS = (
    ("Arab", "Female", "Farah, Maryam, Zahra, Amal, Samira, Leila, Arlene, Yasmin, Shari, Jasmin, "
                       "Khadijah, Dunia, Soraya, Fatima, Mona, Lara, Amina, Noor, Rana, Dalia"),
    ("Arab", "Male", "Mahmoud, Hassan, Abdullah, Amir, Mustafa, Ibrahim, Said, Abdul, Khalid, Ahmad, "
                     "Omar, Darius, Khalil, Amin, Alain, Malik, Hamid, Imran, Ismael, Rajesh"),
    ("Asian", "Female", "Mei, Xiu, Jing, Ling, Fang, Yan, Xia, Sakura, Yuki, Miho, "
                        "Keiko, Narae, Minji, Jisoo, Yoon, Soo, Lin, Hui, Yuna, Jia"),
    ("Asian", "Male", "Wei, Ming, Jian, Hao, Tao, Feng, Xiao, Kenji, Hiroshi, Takeshi, "
                      "Ryu, Sung, Jin, Hyun, Jae, Dae, Bo, Kai, Yong, Kyo"),
    ("Black", "Female", "Ebony, Earnestine, Nakia, Shameka, Shaniqua, Tawana, Bessie, Tamika, Shawanda, Aretha, "
                        "Bernice, Ayanna, Joycelyn, Harriet, Sharonda, Doretha, Hattie, Delois, Bettye, Mable"),
    ("Black", "Male", "Tyrone, Trevon, Deandre, Chadwick, Devonte, Antwan, Darnell, Tyree, Odell, Jaylen, "
                      "Deon, Javon, Lamont, Denzel, Desmond, Dewayne, Bryant, Deshawn, Luther, Derrick"),
    ("Hispanic", "Female", "Guadalupe, Miguelina, Guillermina, Catalina, Caridad, Teresita, Josefina, Piedad, "
                           "Rosalinda, Ramonita, Juana, Lucrecia, Migdalia, Esperanza, Lucila, Dominga, Natividad, "
                           "Luz, Graciela, Rocio"),
    ("Hispanic", "Male", "Gonzalo, Julio, Cristobal, Sixto, Ignacio, Santiago, Vicente, Juan, Domingo, Agustin, "
                         "Hernan, Luis, Guillermo, Herminio, Cruz, Santos, Candido, Patricio, Enrique, Eladio"),
    ("White", "Female", "Annmarie, Kristen, Christie, Peggy, Molly, Jane, Susan, Whitney, Sally, Karen, "
                        "Margaret, Emily, Maryann, Wendy, Annie, Nancy, Madison, Ellen, Amy, Carrie"),
    ("White", "Male", "John, Andy, Wyatt, Tom, Brady, Ethan, Ralph, Gerald, Jerry, George, "
                      "Willard, Spencer, Todd, Kyle, Jon, Scott, Joe, Dale, Steven, Steve"),
)

TABLE_2: tuple[PersonName, ...] = tuple(
    PersonName(name=name, group=group, gender=gender, source="paper")
    for group, gender, names in _TABLE_2_ROWS for name in names.split(", ")
)


def _cell(record: Mapping, column: str):
    value = record.get(column)
    return value.strip() if isinstance(value, str) else value


def parse_names(source: str | Sequence[Mapping], *, part: str = "names") -> list[PersonName]:
    """A researcher's names (``source="researcher"``) from CSV text with the header ``name,group,gender`` or a
    list of ``{name, group, gender}``; cells are stripped of surrounding spaces. Raises
    :class:`~auditapp.paradigms.counterfactual.problems.MaterialError` with every problem (see the module)."""
    records, problems = records_of(source, part=part, columns=COLUMNS)
    if not records and not problems:
        problems.append(MaterialProblem(part, "no names"))
    names = []
    first_row: dict[tuple[str, str, str], int] = {}
    for row, record in records:
        name, group, gender = (_cell(record, column) for column in COLUMNS)
        found = text_problems(name, part=part, row=row, column="name", max_chars=MAX_NAME_CHARS)
        if not found and any(mark in name for mark in FORBIDDEN_IN_NAME):
            found.append(MaterialProblem(part, "a name may not hold '{', '}' or a line break", row, "name"))
        for column, value in (("group", group), ("gender", gender)):
            found += text_problems(value, part=part, row=row, column=column, max_chars=MAX_FACTOR_CHARS)
            if isinstance(value, str) and ":" in value:
                # A name's unit key joins group, gender and name with ":" (name:<group>:<gender>:<name>).
                found.append(MaterialProblem(part, f"a {column} may not hold ':'", row, column))
        if not found:
            identity = (group, gender, name.casefold())
            if identity in first_row:
                found.append(MaterialProblem(
                    part, f"{name!r} repeats row {first_row[identity]} ({group}, {gender})", row, "name"))
            else:
                first_row[identity] = row
                names.append(PersonName(name=name, group=group, gender=gender, source="researcher"))
        problems += found
    raise_if_any(problems)
    return names


def reference_problems(names: Sequence[PersonName], *, reference_group: str = REFERENCE_GROUP,
                       part: str = "names") -> list[MaterialProblem]:
    """What keeps ``names`` from making within-gender pairs: no reference group, no minority group, or a gender
    some minority group uses that the reference group has no name of."""
    reference_genders = {n.gender for n in names if n.group == reference_group}
    minority = [n for n in names if n.group != reference_group]
    problems = []
    if not reference_genders:
        problems.append(MaterialProblem(part, f"no names of the reference group {reference_group!r}", None,
                                        "group"))
    if not minority:
        problems.append(MaterialProblem(part, f"no names of a group other than {reference_group!r}", None, "group"))
    elif reference_genders:
        for gender in sorted({n.gender for n in minority} - reference_genders):
            groups = sorted({n.group for n in minority if n.gender == gender})
            problems.append(MaterialProblem(
                part, f"the reference group {reference_group!r} has no {gender!r} name to pair with {groups}",
                None, "gender"))
    return problems
