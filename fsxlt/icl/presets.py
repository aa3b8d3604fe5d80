"""Prompt presets: the prompt protocols of the field, beside fsxlt's own prompts.

A preset renders a task's prompts the way another evaluation renders them, so
that an ICL run can stand beside published numbers (``fsxlt icl --preset
NAME``, ``preset:`` in a sweep's ICL arms; the arm is named after it,
``icl-lmeval``). :data:`PRESETS` says which tasks and languages each preset
covers and how it renders them; an unknown preset, or a task, a language or a
label set it does not cover, is one line naming what it has. A preset's prompts
are its own, in the target language: the task YAML's ``icl`` section is not
used, nor are ``--template-lang`` and ``--words-lang``.

``lm-eval``: lm-evaluation-harness's XNLI and PAWS-X multiple-choice tasks
(v0.4 task configs; :data:`LM_EVAL_VERSION`). There is no instruction and the
context is empty: each option is the whole sentence ``premise, QUESTION? WORD,
hypothesis`` (English: ``right``; ``Yes`` / ``Also`` / ``No``), scored in full
after the BOS token. An XNLI option starts with lm-eval's default target
delimiter, a space; a PAWS-X option with none (its ``target_delimiter: ""``).
PAWS-X's German, English, Spanish and French sentences are first preprocessed as
its ``process_docs_paraphrases`` does (:func:`pawsx_sentences`); its Japanese,
Korean and Chinese tasks have no ``process_docs`` and take them as they are.
For per-character normalisation (``acc_norm``) an option's length is its whole
sentence's, ``len(choice)`` as the harness counts it. Demonstrations are the right option's sentence
after the target delimiter, each followed by lm-eval's few-shot delimiter
``"\\n\\n"``; the context's trailing whitespace then moves to the front of
every option, as lm-eval's ``_encode_pair`` moves it.

``fewclue-gpt``: FewCLUE's GPT zero-shot baseline (CLUEbenchmark/FewCLUE,
``baselines/models_keras/gpt``): the example's text with the task's suffix
cue, cut to the task's maximum length less two (the ``[CLS]`` and ``[SEP]``
its BERT vocabulary adds; cut in characters here, one token per Chinese
character there), then the label word, all of a task's words equally long in
characters. No instruction. FewCLUE prompts without demonstrations; with a
bucket, fsxlt shows each demonstration as its query and its label word,
followed by ``"\\n\\n"`` (an extension, not FewCLUE's). IFLYTEK (three pairs of
labels share a word there) and ChID (whole-sentence scoring with ``[SEP]``) are not
covered.

This module renders text only; it loads no model.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from fsxlt.data import WSC_MARKS
from fsxlt.errors import FsxltError
from fsxlt.tasks.prompts import PromptSettings, PromptText, render

FEWSHOT_DELIMITER = "\n\n"
LM_EVAL_VERSION = ("lm-evaluation-harness v0.4 task configs: xnli utils.py ac98d9e (whole-"
                   "sentence choices) with xnli_common_yaml 15fcc68; paws-x template version "
                   "1.0 (PR #2434: No/Yes by label, French Non) with utils.py d734f6a; "
                   "process_docs for paws de/en/es/fr only, acc_norm over len(choice): "
                   "checked against lm-eval 0.4.13")  # in the identity: runs before rerun
FEWCLUE_VERSION = ("CLUEbenchmark/FewCLUE baselines/models_keras/gpt: data_util.py 5af61bc, "
                   "config.py 838fcdf, label_config.py 4e4ac6c (zero-shot)")

# XNLI, per language: the question word and the words of entailment, neutral, contradiction
XNLI_WORDS = {
    "ar": ("صحيح", "نعم", "لذا", "رقم"),
    "bg": ("правилно", "да", "така", "не"),
    "de": ("richtig", "Ja", "Auch", "Nein"),
    "el": ("σωστός", "Ναί", "Έτσι", "όχι"),
    "en": ("right", "Yes", "Also", "No"),
    "es": ("correcto", "Sí", "Asi que", "No"),
    "fr": ("correct", "Oui", "Aussi", "Non"),
    "hi": ("सही", "हाँ", "इसलिए", "नहीं"),
    "ru": ("правильно", "Да", "Так", "Нет"),
    "sw": ("sahihi", "Ndiyo", "Hivyo", "Hapana"),
    "th": ("ถูกต้อง", "ใช่", "ดังนั้น", "ไม่"),
    "tr": ("doğru", "Evet", "Böylece", "Hayır"),
    "ur": ("صحیح", "جی ہاں", "اس لئے", "نہیں"),
    "vi": ("đúng", "Vâng", "Vì vậy", "Không"),
    "zh": ("正确", "是的", "所以", "不是的"),
}
XNLI_LABELS = ("entailment", "neutral", "contradiction")
# PAWS-X, per language: the question word and the words of label 1 (paraphrase) and 0
PAWSX_WORDS = {
    "de": ("richtig", "Ja", "Nein"),
    "en": ("right", "Yes", "No"),
    "es": ("verdad", "Sí", "No"),
    "fr": ("n'est-ce pas", "Oui", "Non"),
    "ja": ("ですね", "はい", "いいえ"),
    "ko": ("맞죠", "예", "아니요"),
    "zh": ("对吧", "是", "不是"),
}
# the PAWS-X languages whose lm-eval task preprocesses its sentences (``process_docs`` in
# paws_de/en/es/fr.yaml; paws_ja/ko/zh.yaml have none and take the sentences as they are)
PAWSX_PREPROCESSED = ("de", "en", "es", "fr")
# lm-eval's general_detokenize, in order: plain replacements, then a space dropped
# before an apostrophe, a full stop or a comma
DETOKENIZE = ((" n't", "n't"), (" )", ")"), ("( ", "("), ('" ', '"'), (' "', '"'))
SPACE_BEFORE = re.compile(r" (['.,])")

Render = Callable[[Sequence[str], str, Sequence[Any], Sequence[Any]], PromptText]


@dataclass(frozen=True)
class TaskPrompts:
    """How a preset renders one task: the languages and labels it covers, and
    ``render(labels, language, demonstrations, examples)``."""

    languages: tuple[str, ...]
    labels: tuple[str, ...]
    render: Render


@dataclass(frozen=True)
class Preset:
    """A prompt protocol: its name, its arm's suffix, whose protocol it reproduces (and
    which version), and the tasks it covers."""

    name: str
    arm: str
    reproduces: str
    tasks: Mapping[str, TaskPrompts]


# --------------------------------------------------------------------------- lm-eval

def _detokenize(text: str) -> str:
    for before, after in DETOKENIZE:
        text = text.replace(before, after)
    return SPACE_BEFORE.sub(r"\1", text)


def pawsx_sentences(sentence1: str, sentence2: str) -> tuple[str, str]:
    """lm-eval's PAWS-X preprocessing: both sentences detokenized (``" n't"``, spaces inside
    brackets and quotes, a space before ``' . ,``) and stripped; the first loses a final
    ``.``, ``,`` or ``;``; the second starts in lower case (it follows ``Yes, ``)."""
    first, second = _detokenize(sentence1).strip(), _detokenize(sentence2).strip()
    if first.endswith((".", ",", ";")):
        first = first[:-1]
    return first, second[:1].lower() + second[1:]


def _whole_sentences(choices: Callable[[Any], dict[str, str]], delimiter: str,
                     labels: Sequence[str], demonstrations: Sequence[Any],
                     examples: Sequence[Any]) -> PromptText:
    """lm-eval's multiple-choice requests as prompt pieces: the context (each
    demonstration's right sentence after ``delimiter``, then the few-shot delimiter) less
    its trailing whitespace, an empty query, and per label the whitespace the context lost,
    ``delimiter`` and the label's sentence; each option's length for ``acc_norm`` is its
    sentence's, ``len(choice)`` as the harness counts it (whitespace the choice starts
    with included, the moved whitespace and the delimiter not)."""
    context = "".join(delimiter + choices(d)[d.label] + FEWSHOT_DELIMITER
                      for d in demonstrations)
    prefix = context.rstrip()
    moved = context[len(prefix):] + delimiter
    sentences = [[choices(e)[label] for label in labels] for e in examples]
    return PromptText(prefix, [""] * len(examples),
                      [[moved + sentence for sentence in row] for row in sentences],
                      [[len(sentence) for sentence in row] for row in sentences])


def _xnli(labels: Sequence[str], language: str, demonstrations: Sequence[Any],
          examples: Sequence[Any]) -> PromptText:
    question, *words = XNLI_WORDS[language]

    def choices(example: Any) -> dict[str, str]:
        return {label: f"{example.text_a}, {question}? {word}, {example.text_b}"
                for label, word in zip(XNLI_LABELS, words, strict=True)}

    return _whole_sentences(choices, " ", labels, demonstrations, examples)


def _pawsx(labels: Sequence[str], language: str, demonstrations: Sequence[Any],
           examples: Sequence[Any]) -> PromptText:
    question, yes, no = PAWSX_WORDS[language]

    def choices(example: Any) -> dict[str, str]:
        first, second = example.text_a, example.text_b or ""
        if language in PAWSX_PREPROCESSED:
            first, second = pawsx_sentences(first, second)
        return {"0": f"{first}, {question}? {no}, {second}",
                "1": f"{first}, {question}? {yes}, {second}"}

    return _whole_sentences(choices, "", labels, demonstrations, examples)


# --------------------------------------------------------------------------- FewCLUE's GPT

TNEWS_WORDS = {"100": "故事", "101": "文化", "102": "娱乐", "103": "体育", "104": "财经",
               "106": "房产", "107": "汽车", "108": "教育", "109": "科技", "110": "军事",
               "112": "旅游", "113": "国际", "114": "股票", "115": "农业", "116": "电竞"}
CSLDCP_WORDS = {
    "材料科学与工程": "材料", "作物学": "作物", "口腔医学": "口腔", "药学": "药学",
    "教育学": "教育", "水利工程": "水利", "理论经济学": "理经", "食品科学与工程": "食品",
    "畜牧学/兽医学": "畜牧", "体育学": "体育", "核科学与技术": "核科", "力学": "力学",
    "园艺学": "园艺", "水产": "水产", "法学": "法学", "地质学/地质资源与地质工程": "地质",
    "石油与天然气工程": "石油", "农林经济管理": "农林", "信息与通信工程": "通信",
    "图书馆、情报与档案管理": "图书", "政治学": "政治", "电气工程": "电气",
    "海洋科学": "海洋", "民族学": "民族", "航空宇航科学与技术": "航空",
    "化学/化学工程与技术": "化学", "哲学": "哲学", "公共卫生与预防医学": "卫生",
    "艺术学": "艺术", "农业工程": "农工", "船舶与海洋工程": "船舶",
    "计算机科学与技术": "计科", "冶金工程": "冶金", "交通运输工程": "交通",
    "动力工程及工程热物理": "动力", "纺织科学与工程": "纺织", "建筑学": "建筑",
    "环境科学与工程": "环境", "公共管理": "公管", "数学": "数学", "物理学": "物理",
    "林学/林业工程": "林学", "心理学": "心理", "历史学": "历史", "工商管理": "工管",
    "应用经济学": "应经", "中医学/中药学": "中医", "天文学": "天文", "机械工程": "机械",
    "土木工程": "土木", "光学工程": "光学", "地理学": "地理", "农业资源利用": "农业",
    "生物学/生物科学与工程": "生物", "兵器科学与技术": "兵器", "矿业工程": "矿业",
    "大气科学": "大气", "基础医学/临床医学": "基础", "电子科学与技术": "电子",
    "测绘科学与技术": "测绘", "控制科学与工程": "控制", "军事学": "军事",
    "中国语言文学": "中文", "新闻传播学": "新闻", "社会学": "社会", "地球物理学": "地球",
    "植物保护": "植保",
}


def wsc_parts(text: str) -> tuple[str, str, str]:
    """A CLUEWSC text without fsxlt's marks, and its noun phrase and pronoun (the first pair
    of each mark, as :func:`fsxlt.models.pet.marked_span` reads them; "" when unmarked)."""
    spans = []
    for left, right in WSC_MARKS:
        begin = text.find(left)
        end = text.find(right, begin + len(left)) if begin >= 0 else -1
        if end < 0:
            spans.append("")
            continue
        spans.append(text[begin + len(left):end])
        text = text[:begin] + spans[-1] + text[end + len(right):]
    return text, spans[0], spans[1]


def _wsc_query(example: Any) -> str:
    text, noun, pronoun = wsc_parts(example.text_a)
    return f"{text}其中{pronoun}是{noun},这是"


def _csl_query(example: Any) -> str:
    keywords = ",".join(example.items_b())  # FewCLUE joins the list as given, with ","
    return f"{example.text_a[:300]}与下面的关键词：{keywords}，"


FEWCLUE_TASKS: dict[str, tuple[Callable[[Any], str], int, dict[str, str]]] = {
    # task: (the query with its suffix cue, FewCLUE's maximum length, words by label)
    "eprstmt": (lambda e: e.text_a + "这句话的情感是", 128,
                {"Negative": "不满意", "Positive": "很满意"}),
    "bustm": (lambda e: f"第一个句子是：{e.text_a}；另外一个句子是：{e.text_b}这两句话的语义是",
              80, {"0": "反", "1": "正"}),
    "ocnli": (lambda e: f"。句子一：{e.text_a}；句子二：{e.text_b}这两句话的语义是", 128,
              {"neutral": "中立", "entailment": "包含", "contradiction": "矛盾"}),
    "csl": (_csl_query, 384, {"0": "不相关", "1": "很相关"}),
    "cluewsc": (_wsc_query, 256, {"false": "错误", "true": "正确"}),
    "tnews": (lambda e: e.text_a + "这段内容是关于", 128, TNEWS_WORDS),
    "csldcp": (lambda e: e.text_a + "这段描述的学科是", 128, CSLDCP_WORDS),
}


def _fewclue(task: str) -> Render:
    query_of, max_len, words = FEWCLUE_TASKS[task]

    def query(example: Any) -> str:
        return query_of(example)[: max_len - 2]

    def render_task(labels: Sequence[str], language: str, demonstrations: Sequence[Any],
                    examples: Sequence[Any]) -> PromptText:
        prefix = "".join(query(d) + words[d.label] + FEWSHOT_DELIMITER for d in demonstrations)
        return PromptText(prefix, [query(e) for e in examples],
                          [[words[label] for label in labels] for _ in examples])

    return render_task


# --------------------------------------------------------------------------- the registry

PRESETS: dict[str, Preset] = {
    "lm-eval": Preset("lm-eval", "lmeval", LM_EVAL_VERSION, {
        "xnli": TaskPrompts(tuple(XNLI_WORDS), XNLI_LABELS, _xnli),
        "pawsx": TaskPrompts(tuple(PAWSX_WORDS), ("0", "1"), _pawsx)}),
    "fewclue-gpt": Preset("fewclue-gpt", "fewclue-gpt", FEWCLUE_VERSION, {
        task: TaskPrompts(("zh",), tuple(words), _fewclue(task))
        for task, (_, _, words) in FEWCLUE_TASKS.items()}),
}


def get_preset(name: str) -> Preset:
    """The preset called ``name``; an unknown one is one line naming the presets."""
    if name not in PRESETS:
        raise FsxltError(f"unknown prompt preset {name!r}; presets: {', '.join(sorted(PRESETS))}")
    return PRESETS[name]


def check_preset(name: str, task: str, labels: Sequence[str], language: str) -> None:
    """A task, language or label set the preset does not cover: one line naming what it
    covers."""
    preset = get_preset(name)
    covered = preset.tasks.get(task)
    if covered is None:
        raise FsxltError(f"{task}: the prompt preset {name} covers "
                         f"{', '.join(sorted(preset.tasks))}, not {task}")
    if language not in covered.languages:
        raise FsxltError(f"{task}: the prompt preset {name} has no {language} prompts (it has "
                         f"{', '.join(covered.languages)})")
    if set(labels) != set(covered.labels):
        raise FsxltError(f"{task}: the prompt preset {name} has words for the labels "
                         f"{', '.join(covered.labels)}, not {', '.join(labels)}")


def describe_preset(name: str) -> dict[str, str]:
    """What a record says of its preset: the name and what it reproduces."""
    return {"name": name, "reproduces": get_preset(name).reproduces}


def render_for(spec: Any, prompt: PromptSettings, preset: str | None, language: str,
               demonstrations: Sequence[Any], examples: Sequence[Any]) -> PromptText:
    """A run's prompt pieces: the preset's when it names one, else the task YAML's
    (:func:`fsxlt.tasks.prompts.render`)."""
    if preset is None:
        return render(spec.icl, spec.labels, prompt, language, demonstrations, examples)
    return get_preset(preset).tasks[spec.name].render(spec.labels, language, demonstrations,
                                                     examples)
