"""Prompt presets (lm-evaluation-harness's XNLI and PAWS-X, FewCLUE's GPT zero-shot
baseline), per-character length normalisation, and label words of unequal token lengths:
recorded, warned about on the command line and marked in the report."""

from __future__ import annotations

from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.data import TextExample
from fsxlt.errors import FsxltError
from fsxlt.icl.plan import check_settings
from fsxlt.icl.presets import (
    FEWCLUE_TASKS,
    LM_EVAL_VERSION,
    PAWSX_WORDS,
    XNLI_WORDS,
    check_preset,
    get_preset,
    pawsx_sentences,
    render_for,
)
from fsxlt.icl.run import IclSettings
from fsxlt.icl.scoring import (
    OptionScores,
    decision_scores,
    label_tokens,
    option_chars,
    predictions,
    tokenize_prompt,
)
from fsxlt.study.runs import is_complete, read_record
from fsxlt.tasks import get_task
from fsxlt.tasks.prompts import PromptSettings
from tests.icl_fixtures import make_causal_lm_dir, write_task_yaml
from tests.train_fixtures import nli_data, write_bucket_set, write_pairs

# what the tiny tokenizer needs for lm-eval's English and German XNLI sentences
PRESET_WORDS = ("richtig", "auch", "right", "also", ",")


def _render(task: str, preset: str, language: str, demonstrations: list, examples: list):
    return render_for(get_task(task), PromptSettings(), preset, language, demonstrations,
                      examples)


# --------------------------------------------------------------------------- lm-eval

def test_lm_eval_xnli_english_zero_shot_scores_whole_sentences():
    """xnli_en: doc_to_text '', choices premise + ', right? Yes|Also|No, ' + hypothesis,
    after lm-eval's default target delimiter (a space); nothing before but BOS."""
    example = TextExample("e", "The cat sat on the mat", "A cat is sitting", "neutral")
    text = _render("xnli", "lm-eval", "en", [], [example])
    assert text.prefix == "" and text.queries == [""]
    assert text.continuations == [[
        " The cat sat on the mat, right? Yes, A cat is sitting",
        " The cat sat on the mat, right? Also, A cat is sitting",
        " The cat sat on the mat, right? No, A cat is sitting"]]


def test_lm_eval_xnli_german_with_a_demonstration():
    """xnli_de (richtig; Ja, Auch, Nein): the demonstration is its right sentence and the
    few-shot delimiter; lm-eval's _encode_pair moves the context's trailing whitespace to
    the continuation."""
    shot = TextExample("d", "Der Hund bellt", "Der Hund schläft", "contradiction")
    example = TextExample("e", "Sie kam spät", "Sie war pünktlich", "entailment")
    text = _render("xnli", "lm-eval", "de", [shot], [example])
    context = " Der Hund bellt, richtig? Nein, Der Hund schläft\n\n"   # lm-eval's context
    requests = [" Sie kam spät, richtig? Ja, Sie war pünktlich",
                " Sie kam spät, richtig? Auch, Sie war pünktlich",
                " Sie kam spät, richtig? Nein, Sie war pünktlich"]
    assert text.prefix == context.rstrip() == " Der Hund bellt, richtig? Nein, Der Hund schläft"
    assert text.continuations[0] == ["\n\n" + request for request in requests]
    assert [text.prefix + option for option in text.continuations[0]] == \
        [context + request for request in requests]


def test_lm_eval_xnli_chinese_words():
    example = TextExample("e", "他来了", "他到了", "contradiction")
    assert _render("xnli", "lm-eval", "zh", [], [example]).continuations[0] == [
        " 他来了, 正确? 是的, 他到了", " 他来了, 正确? 所以, 他到了",
        " 他来了, 正确? 不是的, 他到了"]


def test_lm_eval_pawsx_preprocesses_both_sentences():
    """process_docs_paraphrases: detokenized and stripped; the first sentence's final . , ;
    dropped; the second starts in lower case; no target delimiter; label 0 is No."""
    example = TextExample("p", "The Tabaci River is a tributary of the River Leurda in Romania .",
                          "The Leurda River is a tributary of the River Tabaci in Romania .",
                          "1")
    text = _render("pawsx", "lm-eval", "en", [], [example])
    assert text.prefix == "" and text.queries == [""]
    assert text.continuations == [[
        "The Tabaci River is a tributary of the River Leurda in Romania, right? No, the "
        "Leurda River is a tributary of the River Tabaci in Romania.",
        "The Tabaci River is a tributary of the River Leurda in Romania, right? Yes, the "
        "Leurda River is a tributary of the River Tabaci in Romania."]]
    assert pawsx_sentences('He said " yes " ( loudly ) , and did n\'t stop .', "  Yes ;  ") \
        == ('He said"yes"(loudly), and didn\'t stop', "yes ;")
    assert pawsx_sentences("Er kam ;", "") == ("Er kam ", "")


def test_lm_eval_pawsx_demonstrations_and_french_words():
    shots = [TextExample("a", "A b.", "C d.", "1"), TextExample("b", "E f", "G h", "0")]
    example = TextExample("c", "I j", "K l", "0")
    text = _render("pawsx", "lm-eval", "fr", shots, [example])
    assert text.prefix == "A b, n'est-ce pas? Oui, c d.\n\nE f, n'est-ce pas? Non, g h"
    assert text.continuations == [["\n\nI j, n'est-ce pas? Non, k l",
                                   "\n\nI j, n'est-ce pas? Oui, k l"]]


def test_lm_eval_covers_every_language_of_the_tasks():
    assert set(XNLI_WORDS) == set(get_task("xnli").languages)
    assert set(PAWSX_WORDS) == set(get_task("pawsx").languages)
    assert "2434" in LM_EVAL_VERSION and get_preset("lm-eval").arm == "lmeval"


# --------------------------------------------------------------------------- FewCLUE's GPT

@pytest.mark.parametrize("task, example, query, words", [
    ("eprstmt", TextExample("e", "这个手机很好用", None, "Positive"),
     "这个手机很好用这句话的情感是", ["不满意", "很满意"]),
    ("bustm", TextExample("b", "今天天气怎么样", "今天天气好吗", "1"),
     "第一个句子是：今天天气怎么样；另外一个句子是：今天天气好吗这两句话的语义是", ["反", "正"]),
    ("ocnli", TextExample("o", "他走了", "他离开了", "neutral"),
     "。句子一：他走了；句子二：他离开了这两句话的语义是", ["包含", "中立", "矛盾"]),
    ("csl", TextExample("c", "本文研究深度学习", "深度学习、神经网络", "1"),
     "本文研究深度学习与下面的关键词：深度学习,神经网络，", ["不相关", "很相关"]),
    ("cluewsc", TextExample("w", "[小明]说<他>明天来", None, "true"),
     "小明说他明天来其中他是小明,这是", ["错误", "正确"]),
    ("tnews", TextExample("t", "球队赢了比赛", None, "103"),
     "球队赢了比赛这段内容是关于", None),
    ("csldcp", TextExample("s", "研究了土壤", None, "植物保护"),
     "研究了土壤这段描述的学科是", None),
])
def test_fewclue_gpt_queries_end_in_the_suffix_cue(task, example, query, words):
    text = _render(task, "fewclue-gpt", "zh", [], [example])
    assert text.prefix == "" and text.queries == [query]
    table = FEWCLUE_TASKS[task][2]
    assert text.continuations[0] == (words or [table[label] for label in get_task(task).labels])


def test_fewclue_gpt_cuts_the_text_and_cue_to_its_maximum_length():
    """FewCLUE cuts [CLS] text+cue [SEP] to max_len tokens from the right (the cue goes
    first), one token per Chinese character: eprstmt keeps 126, bustm 78."""
    long = TextExample("e", "好" * 200, None, "Negative")
    assert _render("eprstmt", "fewclue-gpt", "zh", [], [long]).queries == ["好" * 126]
    pair = TextExample("b", "甲" * 30, "乙" * 60, "0")
    query = _render("bustm", "fewclue-gpt", "zh", [], [pair]).queries[0]
    assert len(query) == 78 and query.endswith("乙") and "语义" not in query
    shot = TextExample("s", "很好", None, "Positive")
    assert _render("eprstmt", "fewclue-gpt", "zh", [shot], [long]).prefix == \
        "很好这句话的情感是很满意\n\n"


@pytest.mark.parametrize("task", sorted(FEWCLUE_TASKS))
def test_fewclue_gpt_words_cover_the_labels_with_one_length(task):
    words = FEWCLUE_TASKS[task][2]
    assert set(words) == set(get_task(task).labels)
    assert len({len(word) for word in words.values()}) == 1
    assert len(set(words.values())) == len(words)


# --------------------------------------------------------------------------- the registry

@pytest.mark.parametrize("call, message", [
    (lambda: get_preset("helm"), "unknown prompt preset 'helm'; presets: fewclue-gpt, lm-eval"),
    (lambda: check_preset("lm-eval", "marc", ["1"], "de"),
     "marc: the prompt preset lm-eval covers pawsx, xnli, not marc"),
    (lambda: check_preset("lm-eval", "xnli", get_task("xnli").labels, "ja"),
     "xnli: the prompt preset lm-eval has no ja prompts (it has ar, bg, de"),
    (lambda: check_preset("fewclue-gpt", "iflytek", ["0"], "zh"),
     "iflytek: the prompt preset fewclue-gpt covers bustm, cluewsc, csl, csldcp"),
    (lambda: check_preset("lm-eval", "pawsx", ["no", "yes"], "de"),
     "has words for the labels 0, 1, not no, yes"),
    (lambda: IclSettings(model="m", preset="lm-eval", words_language="target").check(),
     "the prompt preset lm-eval brings its own prompts"),
    (lambda: check_settings(get_task("eprstmt"), "zh", IclSettings(model="m", preset="lm-eval")),
     "eprstmt: the prompt preset lm-eval covers pawsx, xnli, not eprstmt"),
    (lambda: IclSettings(model="m", normalize="bytes").check(),
     "length normalisation is False, True (per token) or 'char'"),
])
def test_presets_and_settings_out_of_range_are_one_line(call, message):
    with pytest.raises(FsxltError) as err:
        call()
    assert message in str(err.value) and "\n" not in str(err.value)


def test_arm_names_and_identities():
    """A preset and per-character normalisation name the arm; the default settings'
    identity is the one records had before (no preset key, normalize false)."""
    assert IclSettings(model="m", preset="lm-eval").arm_name() == "icl-lmeval"
    assert IclSettings(model="m", preset="lm-eval", normalize="char").arm_name() == \
        "icl-lmeval-norm-char"
    assert IclSettings(model="m", preset="fewclue-gpt", calibrate=True,
                       normalize=True).arm_name() == "icl-fewclue-gpt-calibrated-norm"
    assert IclSettings(model="m").describe() == {
        "template_language": "en", "words_language": "en", "calibrate": False,
        "content_free": None, "normalize": False, "order": "seeded", "seed": 0,
        "test_limit": None, "encoder": None}
    described = IclSettings(model="m", preset="lm-eval", normalize="char").describe()
    assert described["preset"] == {"name": "lm-eval", "reproduces": LM_EVAL_VERSION}
    assert described["normalize"] == "char"


def test_sweep_arms_name_a_preset_and_a_normalisation():
    from fsxlt.execution.icl_config import parse_icl

    def parse(arms: list) -> list[str]:
        plan = parse_icl({"model": "m", "arms": arms}, get_task("xnli"), ["de"], "<sweep>",
                         lambda value, key: value)
        return [arm.name for arm in plan.arms]

    assert parse([{"preset": "lm-eval", "normalize": "char"}, {"normalize": "token"},
                  {}]) == ["icl-lmeval-norm-char", "icl-norm", "icl"]
    assert parse([{"normalize": True}]) == ["icl-norm"]  # the same arm as token's
    for arm, message in (({"normalize": "bytes"}, "normalize must be true, false, token or "
                                                  "char"),
                         ({"preset": "fewclue-gpt"}, "covers bustm")):
        with pytest.raises(FsxltError, match=message):
            parse([arm])


# --------------------------------------------------------------------------- lengths

def test_per_character_normalisation_divides_by_the_options_characters():
    """lm-eval's acc_norm: log-likelihood / len(choice), the target delimiter not counted."""
    assert option_chars(" ja") == 2 and option_chars("\n\n Er kam, richtig?") == 16
    scores = OptionScores([[-6.0, -4.0]], [[1, 4]], [[12, 2]])
    assert predictions(decision_scores(scores), ["a", "b"]) == ["b"]
    assert predictions(decision_scores(scores, normalize=True), ["a", "b"]) == ["b"]
    assert decision_scores(scores, normalize="char") == [[-0.5, -2.0]]
    assert predictions(decision_scores(scores, normalize="char"), ["a", "b"]) == ["a"]
    with pytest.raises(FsxltError, match="lengths in characters"):
        decision_scores(OptionScores([[-1.0]], [[1]]), normalize="char")


def test_label_token_counts():
    same = [[[1], [2], [3]], [[1], [2], [3]]]
    assert label_tokens(same, "abc") == {"label_word_tokens": {"a": 1, "b": 1, "c": 1},
                                         "unequal_label_tokens": False}
    assert label_tokens([[[1], [2, 3], [4]]], "abc")["unequal_label_tokens"]
    assert label_tokens([], "abc") == {}


# --------------------------------------------------------------------------- runs

@pytest.fixture(scope="module")
def setup(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("icl-presets")
    data = nli_data(40, 5)
    buckets = write_bucket_set(root / "buckets", "xnli", "de", 1,
                               [data[i:i + 3] for i in (0, 3)],
                               ["entailment", "neutral", "contradiction"],
                               dev_remaining=data[9:])
    return {"buckets": buckets, "test": write_pairs(root / "test-de.tsv", nli_data(8, 9)),
            "model": make_causal_lm_dir(root / "lm", "llama", extra_words=PRESET_WORDS)}


def _icl(setup: dict, out: Path, *extra: str) -> int:
    return run_app(["icl", "--lang", "de", "--model", str(setup["model"]), "--test",
                    str(setup["test"]), "--out", str(out), "--threads", "1", *extra])


def test_tokenized_prompts_carry_the_options_characters(setup):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(setup["model"])
    spec = get_task("xnli")
    text = _render("xnli", "lm-eval", "de", nli_data(2, 1), nli_data(2, 2))
    prompt = tokenize_prompt(tokenizer, text, "b")
    assert prompt.chars == [[len(o.lstrip()) for o in options] for options in text.continuations]
    words = spec.icl.words("en")
    plain = tokenize_prompt(tokenizer, render_for(spec, PromptSettings(), None, "de", [],
                                                  nli_data(1, 2)), "b")
    assert plain.chars == [[len(words[label]) for label in spec.labels]]


def test_a_preset_run_writes_a_record(setup, tmp_path):
    out = tmp_path / "runs"
    assert _icl(setup, out, "--task", "xnli", "--bucket", str(setup["buckets"] / "00.json"),
                "--preset", "lm-eval", "--normalize-chars", "--test-limit", "4") == 0
    record = read_record(out / "xnli" / "de" / "k1" / "icl-lmeval-norm-char" / "00.json")
    block = record["icl"]
    assert is_complete(record) and record["method"] == "icl-lmeval-norm-char"
    assert block["preset"] == {"name": "lm-eval", "reproduces": LM_EVAL_VERSION}
    assert block["normalize"] == "char" and len(block["demonstrations"]) == 3
    assert set(block["label_word_tokens"]) == {"entailment", "neutral", "contradiction"}
    assert isinstance(block["unequal_label_tokens"], bool) and record["test"]["n"] == 4


@pytest.mark.parametrize("extra, message", [
    (["--normalize", "--normalize-chars"], "--normalize (per token) and --normalize-chars"),
    (["--preset", "helm"], "unknown prompt preset 'helm'"),
    (["--preset", "fewclue-gpt"], "xnli: the prompt preset fewclue-gpt covers"),
])
def test_bad_preset_options_are_one_line(setup, tmp_path, capsys, extra, message):
    capsys.readouterr()
    out = tmp_path / "runs"
    assert _icl(setup, out, "--task", "xnli", *extra) == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1 and not out.exists()


def test_unequal_label_words_are_warned_recorded_and_marked(setup, tmp_path, capsys):
    """'unbelievable' is 3 tokens (un ##believ ##able), 'maybe' and 'no' one each: the run
    says so on stderr, in its record, and the report marks its cells."""
    out = tmp_path / "runs"
    long_words = write_task_yaml(tmp_path / "xnli.yaml", label_words={"en": {
        "entailment": "unbelievable", "neutral": "maybe", "contradiction": "no"}})
    capsys.readouterr()
    for bucket in ([], ["--bucket", str(setup["buckets"])]):
        assert _icl(setup, out, "--task", str(long_words), "--arm", "icl-long-words",
                    "--test-limit", "3", *bucket) == 0
        err = capsys.readouterr().err
        assert err.count("warning: xnli/de: the label words tokenize to different numbers of "
                         "tokens (entailment 3, neutral 1, contradiction 1)") == 1
    assert _icl(setup, out, "--task", "xnli", "--test-limit", "3") == 0
    assert "warning" not in capsys.readouterr().err
    flagged = read_record(out / "xnli" / "de" / "k0" / "icl-long-words" / "zero-shot.json")
    assert flagged["icl"]["label_word_tokens"] == {"entailment": 3, "neutral": 1,
                                                   "contradiction": 1}
    assert flagged["icl"]["unequal_label_tokens"] is True
    plain = read_record(out / "xnli" / "de" / "k0" / "icl" / "zero-shot.json")
    assert plain["icl"]["unequal_label_tokens"] is False
    assert run_app(["report", str(out), "--expected-buckets", "2"]) == 0
    report = capsys.readouterr().out
    sections = {part.split(" (", 1)[0]: part for part in report.split("### ")[1:]}
    assert "†" in sections["xnli: icl-long-words"] and "†" not in sections["xnli: icl"]
    side_by_side = sections["xnli: adapting variants side by side, K=1"].splitlines()
    header = [cell.strip() for cell in side_by_side[2].split("|")]
    row = [cell.strip() for cell in side_by_side[4].split("|")]
    assert row[header.index("icl-long-words")].endswith("†")
    assert "†" not in row[header.index("icl")]
    assert "† In-context learning cells whose label words tokenize to different" in report
    assert "- xnli/de/k0/icl-long-words" in report and "- xnli/de/k1/icl-long-words" in report
    assert "- xnli/de/k0/icl\n" not in report
