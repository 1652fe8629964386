"""Table 2 of seed 002 exactly (the seed's text is copied below, line breaks and all), and a researcher's names
read with every problem named by row and column."""
import pytest

from auditapp.paradigms.counterfactual.material import PersonName
from auditapp.paradigms.counterfactual.names import (
    GENDERS,
    GROUPS,
    TABLE_2,
    parse_names,
    reference_problems,
)
from auditapp.paradigms.counterfactual.problems import MaterialError

# Table 2 as the seed's text prints it (each group × gender row wraps after its tenth name).
SEED_TABLE_2 = """\
Arab Female Farah, Maryam, Zahra, Amal, Samira, Leila, Arlene, Yasmin, Shari, Jasmin,
Khadijah, Dunia, Soraya, Fatima, Mona, Lara, Amina, Noor, Rana, Dalia
Arab Male Mahmoud, Hassan, Abdullah, Amir, Mustafa, Ibrahim, Said, Abdul, Khalid, Ahmad,
Omar, Darius, Khalil, Amin, Alain, Malik, Hamid, Imran, Ismael, Rajesh
Asian Female Mei, Xiu, Jing, Ling, Fang, Yan, Xia, Sakura, Yuki, Miho,
Keiko, Narae, Minji, Jisoo, Yoon, Soo, Lin, Hui, Yuna, Jia
Asian Male Wei, Ming, Jian, Hao, Tao, Feng, Xiao, Kenji, Hiroshi, Takeshi,
Ryu, Sung, Jin, Hyun, Jae, Dae, Bo, Kai, Yong, Kyo
Black Female Ebony, Earnestine, Nakia, Shameka, Shaniqua, Tawana, Bessie, Tamika, Shawanda, Aretha,
Bernice, Ayanna, Joycelyn, Harriet, Sharonda, Doretha, Hattie, Delois, Bettye, Mable
Black Male Tyrone, Trevon, Deandre, Chadwick, Devonte, Antwan, Darnell, Tyree, Odell, Jaylen,
Deon, Javon, Lamont, Denzel, Desmond, Dewayne, Bryant, Deshawn, Luther, Derrick
Hispanic Female Guadalupe, Miguelina, Guillermina, Catalina, Caridad, Teresita, Josefina, Piedad, Rosalinda, Ramonita,
Juana, Lucrecia, Migdalia, Esperanza, Lucila, Dominga, Natividad, Luz, Graciela, Rocio
Hispanic Male Gonzalo, Julio, Cristobal, Sixto, Ignacio, Santiago, Vicente, Juan, Domingo, Agustin,
Hernan, Luis, Guillermo, Herminio, Cruz, Santos, Candido, Patricio, Enrique, Eladio
White Female Annmarie, Kristen, Christie, Peggy, Molly, Jane, Susan, Whitney, Sally, Karen,
Margaret, Emily, Maryann, Wendy, Annie, Nancy, Madison, Ellen, Amy, Carrie
White Male John, Andy, Wyatt, Tom, Brady, Ethan, Ralph, Gerald, Jerry, George,
Willard, Spencer, Todd, Kyle, Jon, Scott, Joe, Dale, Steven, Steve
"""


def seed_table_2():
    lines = SEED_TABLE_2.splitlines()
    rows = []
    for first, second in zip(lines[::2], lines[1::2], strict=True):
        group, gender, names = first.split(" ", 2)
        rows += [(name, group, gender) for name in (names + " " + second).split(", ")]
    return rows


def test_table_2_is_the_papers_200_names_in_order():
    assert [(n.name, n.group, n.gender) for n in TABLE_2] == seed_table_2()
    assert len(TABLE_2) == 200
    assert {n.source for n in TABLE_2} == {"paper"}
    for group in GROUPS:
        for gender in GENDERS:
            assert sum(1 for n in TABLE_2 if (n.group, n.gender) == (group, gender)) == 20
    white_female = [n.name for n in TABLE_2 if (n.group, n.gender) == ("White", "Female")]
    assert white_female[:3] == ["Annmarie", "Kristen", "Christie"] and white_female[-1] == "Carrie"
    assert reference_problems(TABLE_2) == []


def test_parse_names_reads_csv_text_and_lists_alike():
    csv_text = "\ufeffName, Group ,gender\nAmal, Arab,Female\n\nJane,White,Female\n"
    expected = [PersonName("Amal", "Arab", "Female", "researcher"), PersonName("Jane", "White", "Female",
                                                                               "researcher")]
    assert parse_names(csv_text) == expected
    assert parse_names([{"name": "Amal", "group": "Arab", "gender": "Female"},
                        {"name": "Jane", "group": "White", "gender": "Female"}]) == expected
    # Gender is free text: a study may code it otherwise than the paper.
    assert parse_names("name,group,gender\nSam,White,nonbinary\n")[0].gender == "nonbinary"


def test_parse_names_names_every_problem_by_row_and_column():
    csv_text = ("name,group,gender,age\n"
                "Amal,Arab,Female,30\n"       # row 2: fine
                ",Arab,Female,\n"             # row 3: empty name
                "amal,Arab,Female,\n"         # row 4: repeats row 2 (case aside)
                "Amal,Asian,Female,\n"        # row 5: another group may share a name
                "{NAME},White,,\n"            # row 6: braces, empty gender
                f"{'x' * 101},White,Male,\n")  # row 7: too long
    with pytest.raises(MaterialError) as caught:
        parse_names(csv_text)
    found = [(p.row, p.column) for p in caught.value.problems]
    assert found == [(None, "age"), (3, "name"), (4, "name"), (6, "name"), (6, "gender"), (7, "name")]
    assert "repeats row 2" in str(caught.value.problems[2])
    with pytest.raises(MaterialError) as caught:
        parse_names([{"name": "Amal", "group": "Arab"}, "Jane"])
    assert [(p.row, p.column) for p in caught.value.problems] == [(2, None), (None, "gender"), (1, "gender")]
    with pytest.raises(MaterialError, match="empty"):
        parse_names("")
    for nothing in ([], "name,group,gender\n"):
        with pytest.raises(MaterialError) as caught:
            parse_names(nothing)
        assert [str(p) for p in caught.value.problems] == ["names: no names"]


def test_reference_problems_need_a_reference_name_of_every_minority_gender():
    names = [PersonName("Amal", "Arab", "Female"), PersonName("Omar", "Arab", "Male"),
             PersonName("Jane", "White", "Female")]
    [problem] = reference_problems(names)
    assert problem.column == "gender" and "'Male'" in problem.message and "['Arab']" in problem.message
    assert reference_problems(names[:1]) and "no names of the reference group" in reference_problems(names[:1])[0].message
    assert "no names of a group other than" in reference_problems(names[2:])[0].message
    assert reference_problems(names, reference_group="Arab") == []
