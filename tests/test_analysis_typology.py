"""Lexical overlap, WALS features, gain correlations and script groups, on hand-checked cases."""

from __future__ import annotations

import pandas as pd
import pytest

from fsxlt.analysis.typology import (
    correlate,
    language_gains,
    lexical_overlap,
    overlap_table,
    script_table,
    shared_wals_features,
    word_types,
)
from fsxlt.cli import run_app
from fsxlt.data import TaggedSentence, TextExample
from fsxlt.errors import FsxltError
from fsxlt.sampling.store import BucketSet, write_sets


def test_word_types_of_tagged_and_text_examples():
    tagged = [TaggedSentence("a", ("Berlin", "ist", "groß"), ("B-LOC", "O", "O"))]
    text = [TextExample("b", "Hello, world", "world!", "0")]
    assert word_types(tagged) == {"Berlin", "ist", "groß"}
    assert word_types(text) == {"Hello", ",", "world", "!"}


def test_overlap_table_counts_types_of_all_buckets_of_one_k(tmp_path):
    def sentence(i, *tokens):
        return TaggedSentence(f"s{i}", tokens, ("O",) * len(tokens))

    buckets = [[sentence(0, "Paris", "is", "nice")], [sentence(1, "Paris", "ist", "schön")]]
    write_sets(tmp_path, [BucketSet("panx", "de", 1, "published", None, "train", "x", None,
                                    ["PER"], buckets)])
    english = [sentence(2, "Paris", "is", "big")]
    table = overlap_table(tmp_path, english)
    # V_de = {Paris, is, nice, ist, schön}; shared with English = {Paris, is}
    assert table.to_dict("records") == [{"task": "panx", "language": "de", "k": 1, "types": 5,
                                         "shared": 2, "overlap": 0.4}]
    assert lexical_overlap({"a", "b"}, {"b"}) == 0.5


def test_shared_wals_features_by_hand():
    assert shared_wals_features("de") == 4   # 85A 87A 88A 89A; 81A and 86A differ
    assert shared_wals_features("ja") == 3   # 87A 88A 89A
    assert shared_wals_features("af") == 0   # no values: missing never counts
    assert shared_wals_features("en") == 6
    with pytest.raises(FsxltError, match="'xx' is not in the bundled WALS table"):
        shared_wals_features("xx")


def test_gains_are_the_mean_over_k_of_the_difference_to_zero_shot():
    scores = pd.DataFrame({"task": ["t"] * 3, "language": ["de"] * 3, "k": [0, 1, 4],
                           "mean": [50.0, 53.0, 57.0]})
    gains = language_gains(scores)
    assert gains.loc[0, "gain"] == pytest.approx(5.0) and gains.loc[0, "n_k"] == 2
    with pytest.raises(FsxltError, match="no zero-shot \\(k=0\\) score for t/de: run"):
        language_gains(scores[scores["k"] > 0])
    with pytest.raises(FsxltError, match="no few-shot"):
        language_gains(scores[scores["k"] == 0])


def test_a_zero_shot_only_language_is_left_out_not_an_error():
    # the study's tables carry English with its K=0 score only
    scores = pd.DataFrame({"task": ["ner"] * 3, "language": ["de", "de", "en"], "k": [0, 1, 0],
                           "mean": [50.0, 53.0, 83.0]})
    gains = language_gains(scores)
    assert list(gains["language"]) == ["de"]
    assert gains.attrs["zero_shot_only"] == ["ner/en"]


def test_correlation_with_known_ranks():
    # ranks of x: 1 2 3 4, of gain: 1 2 4 3 -> rho = 1 - 6*2/(4*15) = 0.8
    # centred x: -1.5 -.5 .5 1.5, gain: -15 -5 15 5 -> r = 40 / sqrt(5*500) = 0.8
    gains = pd.DataFrame({"gain": [10.0, 20.0, 40.0, 30.0], "x": [1.0, 2.0, 3.0, 4.0]})
    result = correlate(gains, "x")
    assert result["n"] == 4
    assert result["spearman_rho"] == pytest.approx(0.8)
    assert result["pearson_r"] == pytest.approx(0.8)
    with pytest.raises(FsxltError, match="at least 3 languages"):
        correlate(gains.head(2), "x")


def test_script_groups():
    gains = pd.DataFrame({"task": ["t"] * 3, "language": ["de", "es", "zh"],
                          "gain": [1.0, 3.0, 10.0]})
    table = script_table(gains).set_index("script")
    assert table.loc["same script", "mean"] == 2.0 and table.loc["other script", "count"] == 1


def test_correlate_command_from_csv_writes_tables_and_plots(tmp_path, capsys):
    rows = [("de", 70, 73), ("es", 72, 74), ("zh", 40, 52), ("ar", 38, 47)]
    csv = tmp_path / "scores.csv"
    csv.write_text("task,language,k,mean,overlap\n" + "".join(
        f"panx,{lang},0,{zero},\npanx,{lang},1,{few},{ov}\n"
        for (lang, zero, few), ov in zip(rows, (0.4, 0.5, 0.05, 0.03), strict=True))
        + "panx,en,0,84,\n")
    out = tmp_path / "out"
    assert run_app(["analyze", "correlate", str(csv), "--out", str(out)]) == 0
    captured = capsys.readouterr()
    printed = captured.out
    assert "spearman_rho" in printed and "other script" in printed
    assert captured.err == "left out (zero-shot only, not few-shot targets): panx/en\n"
    assert (out / "correlations.csv").is_file() and (out / "panx-gain-overlap.pdf").is_file()
    table = pd.read_csv(out / "correlations.csv").set_index("predictor")
    assert table.loc["overlap", "spearman_rho"] == pytest.approx(-0.8)
