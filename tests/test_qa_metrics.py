"""Extractive QA metrics (fsxlt.metrics.qa): MLQA's and SQuAD v1.1's F1 and EM.

Expected numbers are worked by hand; the comment beside each shows the tokens
and the arithmetic (P = precision, R = recall, F1 = 2PR / (P + R)).
"""

from __future__ import annotations

import random

import pytest

from fsxlt.errors import FsxltError
from fsxlt.metrics.qa import (
    MLQA_LANGUAGES,
    QA_METRICS,
    UnsupportedLanguageError,
    answer_tokens,
    best_over_golds,
    exact_match,
    f1,
    metric_style,
    normalize_answer,
    qa_scores,
    score_prediction_file,
)


def test_metric_names_and_styles():
    assert QA_METRICS == ("mlqa_f1", "squad_f1")
    assert metric_style("mlqa_f1") == "mlqa"
    assert metric_style("squad_f1") == "squad"
    with pytest.raises(ValueError, match="unknown QA metric"):
        metric_style("accuracy")


# --- English (mlqa): a / an / the ------------------------------------------------------------


def test_en_articles_case_and_punctuation():
    assert normalize_answer("An apple a day, the end.", "en") == "apple day end"
    # articles are whole words only; punctuation goes first, so "the-end" is one word
    assert normalize_answer("another theory", "en") == "another theory"
    assert normalize_answer("the-end", "en") == "theend"


def test_en_f1():
    # pred [eiffel, tower], gold [eiffel, tower, paris]: overlap 2, P = 2/2, R = 2/3
    # F1 = 2 * 1 * 2/3 / (1 + 2/3) = (4/3) / (5/3) = 0.8
    assert f1("The Eiffel Tower", "Eiffel Tower, Paris", "en") == pytest.approx(0.8)
    assert not exact_match("The Eiffel Tower", "Eiffel Tower, Paris", "en")
    assert exact_match("the Eiffel Tower!", "Eiffel  tower", "en")


# --- Spanish: el la los las un una unos unas --------------------------------------------------


def test_es_articles_and_inverted_marks():
    # "uno" is not in the script's list, "unos" is; ¿ and ? are punctuation
    assert normalize_answer("¿Uno o unos?", "es") == "uno o"
    assert normalize_answer("¡La Paz!", "es") == "paz"
    assert normalize_answer("Los Angeles, el una las un", "es") == "angeles"
    assert exact_match("El Niño", "niño", "es")


def test_es_f1():
    # pred [estados, unidos], gold [estados, unidos, de, américa]: overlap 2, P = 1, R = 2/4
    # F1 = 2 * 1 * 1/2 / (3/2) = 2/3
    assert f1("los Estados Unidos", "Estados Unidos de América", "es") == pytest.approx(2 / 3)


# --- German: der die das den dem des ein eine einen einem eines einer ---------------------------


def test_de_articles():
    assert normalize_answer("Eines Tages, einer der Besten", "de") == "tages besten"
    assert normalize_answer("Die Ein Einem Einen Dem Des Das", "de") == ""
    assert normalize_answer("eins", "de") == "eins"  # not an article in the list
    assert exact_match("Der Rhein", "den Rhein", "de")


def test_de_f1():
    # pred [berliner, mauer, 1961], gold [berliner, mauer]: overlap 2, P = 2/3, R = 1
    # F1 = 2 * 2/3 * 1 / (5/3) = (4/3) / (5/3) = 0.8
    assert f1("die Berliner Mauer, 1961", "Berliner Mauer", "de") == pytest.approx(0.8)


# --- Arabic: every "ال" anywhere is replaced by a space ---------------------------------------


def test_ar_alif_lam_everywhere():
    assert normalize_answer("القاهرة، مصر", "ar") == "قاهرة مصر"  # ، (U+060C) is punctuation
    assert normalize_answer("فالكتاب", "ar") == "ف كتاب"  # mid-word: one word becomes two
    assert normalize_answer("جمال", "ar") == "جم"  # even at the end of a word
    assert normalize_answer("ما هذا؟", "ar") == "ما هذا"  # ؟ (U+061F) is punctuation


def test_ar_f1():
    # pred [قاهرة], gold [مدينة, قاهرة]: overlap 1, P = 1, R = 1/2 -> F1 = 1 / (3/2) = 2/3
    assert f1("القاهرة", "مدينة القاهرة", "ar") == pytest.approx(2 / 3)
    # pred [ف, كتاب], gold [كتاب]: overlap 1, P = 1/2, R = 1 -> F1 = 2/3
    assert f1("فالكتاب", "الكتاب", "ar") == pytest.approx(2 / 3)


# --- Hindi: no articles ------------------------------------------------------------------------


def test_hi_no_articles_danda_is_punctuation():
    assert exact_match("नई दिल्ली।", "नई दिल्ली", "hi")  # । (U+0964) is punctuation
    assert normalize_answer("the Taj Mahal", "hi") == "the taj mahal"


def test_hi_f1():
    # pred [दिल्ली], gold [नई, दिल्ली]: overlap 1, P = 1, R = 1/2 -> F1 = 2/3
    assert f1("दिल्ली", "नई दिल्ली", "hi") == pytest.approx(2 / 3)
    # pred [the, taj, mahal], gold [taj, mahal]: overlap 2, P = 2/3, R = 1 -> F1 = 0.8
    assert f1("the Taj Mahal", "Taj Mahal", "hi") == pytest.approx(0.8)


# --- Vietnamese: của là cái chiếc những ---------------------------------------------------------


def test_vi_articles():
    assert normalize_answer("Những con mèo", "vi") == "con mèo"
    assert normalize_answer("cái bàn là chiếc bàn", "vi") == "bàn bàn"
    assert normalize_answer("các con mèo", "vi") == "các con mèo"  # "các" is not in the list
    # composed spellings only: decomposed "của" (u + U+0309) is not removed
    assert normalize_answer("cu\u0309a", "vi") == "cu\u0309a"


def test_vi_f1():
    # pred [con, mèo], gold [con, mèo, tôi]: overlap 2, P = 1, R = 2/3 -> F1 = 0.8
    assert f1("những con mèo", "con mèo của tôi", "vi") == pytest.approx(0.8)


# --- Chinese: mixed segmentation --------------------------------------------------------------


def test_zh_mixed_segmentation_tokens():
    assert answer_tokens("北京大学", "zh") == ["北", "京", "大", "学"]
    assert answer_tokens("iPhone手机", "zh") == ["iphone", "手", "机"]
    assert answer_tokens("2008年北京奥运会", "zh") == ["2008", "年", "北", "京", "奥", "运", "会"]
    assert answer_tokens("a北b c", "zh") == ["a", "北", "b", "c"]
    # ideographs outside U+4E00..U+9FA5 (Extension A U+3400, U+9FA6) stay in one run
    assert answer_tokens("\u3400\u3401 \u9fa6\u9fa6", "zh") == ["\u3400\u3401", "\u9fa6\u9fa6"]
    assert normalize_answer("the 北京", "zh") == "the 北 京"  # no articles in zh


def test_zh_punctuation_and_spacing():
    assert normalize_answer("北京，中国。", "zh") == "北 京 中 国"  # ， U+FF0C and 。 U+3002
    assert normalize_answer("《红楼梦》", "zh") == "红 楼 梦"
    assert exact_match("北京", "北 京", "zh")


def test_zh_f1():
    # pred [北, 京, 大, 学], gold [北, 京]: overlap 2, P = 2/4, R = 1
    # F1 = 2 * 1/2 * 1 / (3/2) = 2/3
    assert f1("北京大学", "北京", "zh") == pytest.approx(2 / 3)
    # pred [iphone, 手, 机], gold [iphone]: overlap 1, P = 1/3, R = 1
    # F1 = 2 * 1/3 / (4/3) = 0.5
    assert f1("iPhone手机", "iPhone", "zh") == pytest.approx(0.5)
    # the same answers split on whitespace (as squad does) share no token: F1 = 0
    assert f1("北京大学", "北京", "zh", "squad") == 0.0


# --- punctuation sets ---------------------------------------------------------------------------


def test_unicode_punctuation_mlqa_only():
    assert normalize_answer("«Paris»", "en") == "paris"
    assert normalize_answer("«Paris»", "en", "squad") == "«paris»"
    assert normalize_answer("“Hello”", "en") == "hello"
    assert normalize_answer("¿qué?", "es", "squad") == "¿qué"
    # ASCII symbols are in string.punctuation (both styles); other symbols are kept
    assert normalize_answer("$5 + 5 € 3°", "en") == "5 5 € 3°"
    assert normalize_answer("$5 + 5 € 3°", "en", "squad") == "5 5 € 3°"


# --- SQuAD v1.1 style ---------------------------------------------------------------------------


def test_squad_style_english():
    assert exact_match("The Eiffel Tower!", "eiffel tower", "en", "squad")
    assert normalize_answer("U.S. Army", "en", "squad") == "us army"
    # pred [cat, dog], gold [cat, and, dog]: overlap 2, P = 1, R = 2/3 -> F1 = 0.8
    assert f1("a cat, the dog", "cat and dog", "en", "squad") == pytest.approx(0.8)


def test_squad_style_ignores_language():
    # English articles only, whatever the language; any language code is accepted
    assert normalize_answer("El Niño, the boy", "es", "squad") == "el niño boy"
    assert normalize_answer("The 서울", "ko", "squad") == "서울"


# --- several golds, empty strings, bad arguments ------------------------------------------------


def test_max_over_golds():
    golds = ["Paris, France", "city of Paris"]
    # [paris] vs [paris, france]: P = 1, R = 1/2 -> 2/3; vs [city, of, paris]: R = 1/3 -> 0.5
    assert best_over_golds(f1, "Paris", golds, "en", "mlqa") == pytest.approx(2 / 3)
    assert best_over_golds(exact_match, "Paris", golds, "en", "mlqa") is False
    assert best_over_golds(exact_match, "Paris", [*golds, "paris"], "en", "mlqa") is True
    with pytest.raises(ValueError, match="no gold answers"):
        best_over_golds(f1, "Paris", [], "en", "mlqa")
    with pytest.raises(ValueError, match="sequence of strings"):
        best_over_golds(f1, "Paris", "Paris", "en", "mlqa")


def test_empty_prediction():
    assert f1("", "Paris", "en") == 0.0
    assert not exact_match("", "Paris", "en")
    assert f1("the", "Paris", "en") == 0.0  # normalises to nothing
    # both sides empty after normalisation: the scripts give EM 1 but F1 0
    assert exact_match("", "The", "en")
    assert f1("", "The", "en") == 0.0
    assert exact_match("...", "", "en", "squad")
    assert f1("...", "", "en", "squad") == 0.0


def test_unknown_language_and_style():
    with pytest.raises(UnsupportedLanguageError, match="not 'ko'"):
        normalize_answer("서울", "ko")
    with pytest.raises(FsxltError):
        f1("a", "b", "fr")
    with pytest.raises(ValueError):
        exact_match("a", "b", "EN")  # codes are exact, as in the script
    with pytest.raises(ValueError, match="style"):
        normalize_answer("a", "en", "xquad")


# --- qa_scores ----------------------------------------------------------------------------------


def test_qa_scores_fractions():
    golds = [["Paris"], ["1961", "in 1961"], ["Berlin Wall"]]
    predicted = ["paris", "1961", "the Wall"]
    scores = qa_scores(golds, predicted, language="en", style="mlqa")
    # F1: 1 + 1 + ([wall] vs [berlin, wall]: P = 1, R = 1/2 -> 2/3) = 8/3, / 3 = 8/9
    # EM: 1 + 1 + 0 = 2, / 3 = 2/3
    assert scores["f1"] == pytest.approx(8 / 9)
    assert scores["exact_match"] == pytest.approx(2 / 3)
    assert scores["n"] == 3


def test_qa_scores_refuses_bad_input():
    with pytest.raises(ValueError, match="2 questions but 1 predictions"):
        qa_scores([["a"], ["b"]], ["a"], language="en", style="squad")
    with pytest.raises(ValueError, match="no gold answers"):
        qa_scores([["a"], []], ["a", "b"], language="en", style="squad")
    with pytest.raises(ValueError, match="no questions"):
        qa_scores([], [], language="en", style="squad")


# --- score_prediction_file ----------------------------------------------------------------------


def _dataset(qas):
    paragraph = {"context": "c", "qas": qas}
    return {"version": "1.0", "data": [{"title": "t", "paragraphs": [paragraph]}]}


def _qa(qid, *answers):
    gold = [{"text": a, "answer_start": 0} for a in answers]
    return {"id": qid, "question": "?", "answers": gold}


def test_score_prediction_file_missing_and_extra_ids():
    dataset = _dataset([_qa("q1", "Paris"), _qa("q2", "1961", "in 1961"), _qa("q3", "Berlin Wall")])
    predictions = {"q1": "paris", "q3": "the Wall", "extra": "x"}
    scores = score_prediction_file(dataset, predictions, language="en", style="mlqa")
    # q1: F1 1, EM 1; q2 unanswered: 0, 0; q3: F1 2/3, EM 0
    # F1 = (1 + 0 + 2/3) / 3 = 5/9; EM = 1/3
    assert scores["f1"] == pytest.approx(5 / 9)
    assert scores["exact_match"] == pytest.approx(1 / 3)
    assert (scores["n"], scores["unanswered"], scores["unknown_ids"]) == (3, 1, 1)


def test_score_prediction_file_matches_qa_scores_when_complete():
    dataset = _dataset([_qa("a", "北京"), _qa("b", "上海", "上海市")])
    predictions = {"a": "北京大学", "b": "上海市"}
    by_file = score_prediction_file(dataset, predictions, language="zh", style="mlqa")
    aligned = qa_scores([["北京"], ["上海", "上海市"]], ["北京大学", "上海市"],
                        language="zh", style="mlqa")
    # a: F1 2/3, EM 0; b: F1 1, EM 1 -> F1 5/6, EM 1/2
    assert by_file["f1"] == pytest.approx(5 / 6) == aligned["f1"]
    assert by_file["exact_match"] == pytest.approx(0.5) == aligned["exact_match"]
    assert (by_file["unanswered"], by_file["unknown_ids"]) == (0, 0)


@pytest.mark.parametrize(
    ("dataset", "message"),
    [
        ({"version": "1.1"}, "has no 'data' list"),
        ([], "is not an object"),
        ({"data": [{"title": "t"}]}, r"data\[0\] has no 'paragraphs' list"),
        ({"data": [{"paragraphs": [{"context": "c"}]}]}, r"paragraphs\[0\] has no 'qas' list"),
        (_dataset([{"question": "?", "answers": [{"text": "x"}]}]), r"qas\[0\] has no string 'id'"),
        (_dataset([{"id": "q1", "question": "?"}]), r"'q1'\) has no 'answers' list"),
        (_dataset([_qa("q1", "x"), _qa("q2")]), r"qas\[1\] \(id 'q2'\) has no answers"),
        (_dataset([{"id": "q1", "answers": [{"answer_start": 0}]}]), "without a string 'text'"),
        (_dataset([]), "it has no questions"),
    ],
)
def test_score_prediction_file_malformed(dataset, message):
    with pytest.raises(FsxltError, match=message) as caught:
        score_prediction_file(dataset, {}, language="en", style="squad")
    assert "\n" not in str(caught.value)


def test_score_prediction_file_bad_predictions():
    dataset = _dataset([_qa("q1", "x")])
    with pytest.raises(FsxltError, match="'q1' is not a string"):
        score_prediction_file(dataset, {"q1": 3}, language="en", style="squad")
    with pytest.raises(FsxltError, match="mapping question ids"):
        score_prediction_file(dataset, ["x"], language="en", style="squad")


# --- properties over random strings -------------------------------------------------------------

_PIECES = list("abcxyzABC019 .,!?'-«»¿¡،؟।，。《》“”€$") + [
    "the", "a", "an", "el", "unos", "der", "einer", "của", "những", "ال", "الكتاب",
    "北", "京", "手机", "iPhone", "नई", "\u3400", "\u00a0", "\u3000",
]


def _random_answer(rng: random.Random) -> str:
    pieces = (rng.choice(_PIECES) + rng.choice(["", "", " "]) for _ in range(rng.randint(0, 8)))
    return "".join(pieces)


@pytest.mark.parametrize("seed", range(40))
def test_random_strings_properties(seed):
    rng = random.Random(seed)
    for _ in range(10):
        x, y = _random_answer(rng), _random_answer(rng)
        for language, style in [(lang, "mlqa") for lang in MLQA_LANGUAGES] + [("en", "squad")]:
            score = f1(x, y, language, style)
            assert 0.0 <= score <= 1.0
            assert score == pytest.approx(f1(y, x, language, style))
            x_nonempty = normalize_answer(x, language, style) != ""
            if exact_match(x, y, language, style):
                assert score == (1.0 if x_nonempty else 0.0)
            if x_nonempty:
                assert f1(x, x, language, style) == 1.0
                assert exact_match(x, x, language, style)
