"""Remaining dev sets for the study's published buckets (issue 59): every bucket example
located in the user's dev file by content, the remaining set the dev file minus them.

The release's shapes are reproduced here: XNLI text re-tokenized (``erklärt , die``),
ids ``<language>-<n>-val`` that are not lines of the dev file, PAWS-X pairs as written
where the dev file CSV-quotes a field holding a quote, a control character the release
dropped, duplicate dev lines, and lines that whitespace alone tells apart.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, replace
from pathlib import Path

import pytest

from fsxlt.cli import run_app
from fsxlt.data import TextExample
from fsxlt.errors import FsxltError
from fsxlt.fileio import sha256_file
from fsxlt.sampling.check import check_set
from fsxlt.sampling.locate import alike_lines, csv_unquoted, locate, squeezed
from fsxlt.sampling.store import read_set

REPO = Path(__file__).parents[1]
LABELS = ("entailment", "neutral", "contradiction")
WORDS = ["Haus", "erklärt", "die", "Frau", "ist", "。", "，", "望远镜", "血迹", "ab", "c", "x"]


@dataclass
class Line:
    """A dev line as written, with the sentence (``content``) it really is."""

    text_a: str
    text_b: str
    label: str
    content: int


def _sentence(rng: random.Random, content: int) -> list[str]:
    words = [f"s{content}"] + [rng.choice(WORDS) for _ in range(rng.randint(1, 6))]
    if rng.random() < 0.2:
        words.insert(rng.randint(0, len(words)), '"')
    return words


def _written(rng: random.Random, words: list[str]) -> str:
    """A sentence as a dev file writes it: spaced, perhaps a control character, CSV-quoted
    when it holds a quote (as the PAWS-X dev files are)."""
    text = " ".join(words)
    if rng.random() < 0.1:
        cut = rng.randint(0, len(text))
        text = text[:cut] + "\x08" + text[cut:]
    if '"' in text and rng.random() < 0.7:
        text = '"' + text.replace('"', '""') + '"'
    return text


def _retokenized(rng: random.Random, words: list[str]) -> str:
    """The release's form: the words cut and spaced anew, no control characters."""
    squeezed_text = "".join(words)
    pieces, start = [], 0
    while start < len(squeezed_text):
        end = start + rng.randint(1, 4)
        pieces.append(squeezed_text[start:end])
        start = end
    return " ".join(pieces)


def _random_release(seed: int):
    """A dev file and buckets drawn from it, with what each line really is."""
    rng = random.Random(seed)
    contents = {c: (_sentence(rng, c), _sentence(rng, c + 1000), rng.choice(LABELS))
                for c in range(rng.randint(12, 40))}
    lines = []
    for content, (a, b, label) in contents.items():
        lines.append(Line(_written(rng, a), _written(rng, b), label, content))
        if rng.random() < 0.15:  # an exact duplicate line
            lines.append(Line(lines[-1].text_a, lines[-1].text_b, label, content))
        if rng.random() < 0.05:  # the same pair under another label (XNLI zh has one)
            lines.append(Line(lines[-1].text_a, lines[-1].text_b,
                              rng.choice([x for x in LABELS if x != label]), content))
    collisions = []
    if rng.random() < 0.5:  # another sentence that only whitespace tells from one of them
        content = rng.choice(list(contents))
        a, b, label = contents[content]
        joined = "".join(a)
        cut = rng.randint(1, len(joined) - 1)
        other = Line(joined[:cut] + " " + joined[cut:], " ".join(b), label, -1 - content)
        lines.append(other)
        collisions.append((content, other.content))
    rng.shuffle(lines)
    dev = [TextExample(f"dev-de.tsv:{i + 1}", line.text_a, line.text_b, line.label)
           for i, line in enumerate(lines)]
    chosen = rng.sample(list(contents), rng.randint(1, max(1, len(contents) // 2)))
    buckets, where, index = [], {}, 0
    for bucket in range(rng.randint(1, 4)):
        examples = []
        for content in chosen[bucket::4]:
            a, b, label = contents[content]
            examples.append(TextExample(f"german-{5000 + index}-val", _retokenized(rng, a),
                                        _retokenized(rng, b), label))
            where[examples[-1].id] = content
            index += 1
        if examples:
            buckets.append((bucket, examples))
    absent = None
    if rng.random() < 0.3:  # an example the dev file lacks
        absent = TextExample("german-9999-val", "nirgends zu finden", "nie", "neutral")
        buckets[0][1].append(absent)
    return lines, dev, buckets, where, absent, collisions


@pytest.mark.parametrize("seed", range(200))
def test_every_example_located_and_the_rest_remains(seed):
    lines, dev, buckets, where, absent, collisions = _random_release(seed)
    found = locate(buckets, dev)
    drawn = {where[ex.id] for _, examples in buckets for ex in examples if ex.id in where}
    twins = {other for content, other in collisions if content in drawn}
    expected = [ex for ex, line in zip(dev, lines, strict=True)
                if line.content not in drawn and line.content not in twins]
    assert [ex.id for ex in found.remaining] == [ex.id for ex in expected]
    n_drawn = sum(len(examples) for _, examples in buckets)
    assert found.located == n_drawn - (absent is not None)
    assert [u.example for u in found.unlocated] == ([absent] if absent else [])
    assert found.removed == len(dev) - len(expected)
    groups = [{ex.id for ex in group} for group in alike_lines(dev)]
    for content, other in collisions:  # the merge the match key could make is reported
        ids = {ex.id for ex, line in zip(dev, lines, strict=True)
               if line.content in (content, other)}
        written = {(line.text_a, line.text_b) for line in lines
                   if line.content in (content, other)}
        assert any(ids <= group for group in groups) or len(written) == 1  # or one line, twice


def test_csv_quoting_is_undone_only_where_it_is_whole():
    assert csv_unquoted('"Album "", weil er"') == 'Album ", weil er'
    assert csv_unquoted('"""Ras"" Abbi"') == '"Ras" Abbi'
    assert csv_unquoted('"Ras" Abbi "Addi"') is None  # a lone inner quote: not CSV
    assert csv_unquoted("plain") is None and csv_unquoted('"') is None
    assert squeezed("不，\x08布拉德 关了") == "不，布拉德关了"


# ----------------------------------------------------------------------------- the import

# the fixture's dev file writes a field CSV-quoted (as XTREME's PAWS-X files do) where the
# release holds it unquoted: read so, the two forms agree (tests/test_readings.py: refused
# otherwise)
CSV = ["--reading", "quoting=csv"]

DEV = [("Das Haus ist rot.", "Es ist rot.", "entailment"),
       ("Die Frau erklärt, die Regel gilt.", "Sie schweigt.", "contradiction"),
       ('"Er sagte ""nein"" und ging."', "Er ging.", "neutral"),
       ("不，\x08布拉德关了他的望远镜。", "望远镜周围有血迹。", "entailment"),
       ("Ein Hund bellt.", "Ein Tier macht Laerm.", "entailment"),
       ("Ein Hund bellt.", "Ein Tier macht Laerm.", "entailment"),  # an exact duplicate
       ("Der Zug kommt spaet.", "Der Zug ist puenktlich.", "contradiction"),
       ("Sie liest ein Buch.", "Sie liest.", "entailment"),
       ("Er kocht Suppe.", "Er kocht.", "neutral"),
       ("Es regnet heute.", "Die Sonne scheint.", "contradiction")]
# bucket i of K=1 takes these lines of DEV, re-tokenized as the release has them
K1 = [{"entailment": 0, "contradiction": 1, "neutral": 2},
      {"entailment": 3, "contradiction": 6, "neutral": 8}]
K2_ENTAILMENT = [4, 7]  # K=2 draws on its own: one bucket, overlapping K=1's lines


def _release_text(text: str) -> str:
    text = text.replace("\x08", "").strip('"').replace('""', '"')
    return " ".join(text.replace(",", " ,").replace(".", " .").replace("。", " 。").split())


def _example(line: int) -> dict:
    a, b, label = DEV[line]
    return {"uid": f"german-{4980 + line}-val", "text_a": _release_text(a),
            "text_b": _release_text(b), "label": label, "portion_identifier": -1}


def write_release(root: Path, extra: dict | None = None) -> None:
    for index, lines in enumerate(K1):
        folder = root / "xnli" / "1-shots" / "german" / f"{index}-th"
        folder.mkdir(parents=True)
        sampled = {label: [_example(line)] for label, line in lines.items()}
        if extra and index == 1:
            sampled["neutral"] = [extra]
        (folder / "sampled.json").write_text(json.dumps(sampled, ensure_ascii=False))
    folder = root / "xnli" / "2-shots" / "german" / "0-th"
    folder.mkdir(parents=True)
    sampled = {"entailment": [_example(line) for line in K2_ENTAILMENT],
               "contradiction": [_example(1), _example(9)], "neutral": [_example(2),
                                                                         _example(8)]}
    (folder / "sampled.json").write_text(json.dumps(sampled, ensure_ascii=False))


def write_data(data: Path) -> Path:
    (data / "xnli").mkdir(parents=True)
    rows = ["\t".join(row) for row in DEV]
    (data / "xnli" / "dev-de.tsv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    (data / "xnli" / "test-de.tsv").write_text(
        "Ein Satz.\tNoch einer.\tentailment\nZwei Saetze.\tKeiner.\tneutral\n",
        encoding="utf-8")
    return data


@pytest.fixture
def release(tmp_path):
    src = tmp_path / "release"
    write_release(src)
    return src, write_data(tmp_path / "data"), tmp_path / "store"


def _texts(examples) -> list[str]:
    return [ex.text_a for ex in examples]


def test_import_with_data_dir_writes_each_k_its_remaining_dev_set(release, capsys):
    src, data, out = release
    assert run_app(["buckets", "import-published", str(src), "--out", str(out),
                    "--data-dir", str(data / "{task}"), *CSV]) == 0
    printed = capsys.readouterr()
    assert "remaining dev sets: 2 sets, 12 bucket examples located in their dev files, 0 not" \
        in printed.out
    assert "no remaining dev set" not in printed.out
    manifest, _, remaining = read_set(out / "xnli" / "de" / "k1")
    used = {line for lines in K1 for line in lines.values()}
    assert _texts(remaining) == [DEV[i][0] for i in range(len(DEV)) if i not in used]
    entry = manifest["dev_remaining"]
    assert entry["source"]["file"] == "dev-de.tsv" and entry["located"] == 6
    assert entry["removed"] == 6 and entry["unlocated"] == []
    # the rule is this K's buckets: K=2's set keeps what only K=1 took, and drops both copies
    # of the duplicate line its bucket holds
    _, _, remaining2 = read_set(out / "xnli" / "de" / "k2")
    used2 = {*K2_ENTAILMENT, 1, 9, 2, 8, 5}
    assert _texts(remaining2) == [DEV[i][0] for i in range(len(DEV)) if i not in used2]
    for k in (1, 2):
        report = check_set(out / "xnli" / "de" / f"k{k}", data / "xnli" / "dev-de.tsv")
        assert report.ok, report.violations


def test_the_dev_set_added_later_leaves_the_buckets_and_their_hashes(release, capsys):
    src, data, out = release
    assert run_app(["buckets", "import-published", str(src), "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert ("2 sets of 1 task/language pair (xnli/de) have no remaining dev set, which their "
            "runs select models on; "
            f"add it: fsxlt buckets import-published {src} --out {out} --data-dir DIR") in printed
    before = {p.name: p.read_bytes() for p in (out / "xnli" / "de" / "k1").iterdir()}
    hashes = [e["sha256"] for e in read_set(out / "xnli" / "de" / "k1")[0]["buckets"]]
    assert run_app(["buckets", "import-published", str(src), "--out", str(out),
                    "--data-dir", str(data / "xnli"), *CSV]) == 0
    assert "2 dev set added" in capsys.readouterr().out
    after = {p.name: p.read_bytes() for p in (out / "xnli" / "de" / "k1").iterdir()}
    assert {n: b for n, b in after.items() if n.endswith(".json") and n != "manifest.json"} \
        == {n: b for n, b in before.items() if n != "manifest.json"}
    manifest = read_set(out / "xnli" / "de" / "k1")[0]
    assert [e["sha256"] for e in manifest["buckets"]] == hashes
    assert "dev-remaining.jsonl" in after
    for args in ([], ["--data-dir", str(data / "xnli"), *CSV]):  # again, with or without: as it is
        assert run_app(["buckets", "import-published", str(src), "--out", str(out),
                        *args]) == 0
        printed = capsys.readouterr().out
        assert "2 unchanged" in printed and "no remaining dev set" not in printed
        assert {p.name: p.read_bytes() for p in (out / "xnli" / "de" / "k1").iterdir()} == after


def test_a_dev_set_from_another_file_is_refused_without_replace(release, capsys):
    src, data, out = release
    run_app(["buckets", "import-published", str(src), "--out", str(out),
             "--data-dir", str(data / "xnli"), *CSV])
    dev = data / "xnli" / "dev-de.tsv"
    dev.write_text(dev.read_text(encoding="utf-8") + "Neu.\tNeu.\tneutral\n", encoding="utf-8")
    capsys.readouterr()
    assert run_app(["buckets", "import-published", str(src), "--out", str(out),
                    "--data-dir", str(data / "xnli"), *CSV]) == 2
    assert "holds another bucket set (dev_remaining.n: 4 -> 5" in capsys.readouterr().err


def test_an_example_the_dev_file_lacks_refuses_unless_accepted(tmp_path, capsys):
    src, out = tmp_path / "release", tmp_path / "store"
    stray = {"uid": "german-9999-val", "text_a": "Nirgends .", "text_b": "Nie .",
             "label": "neutral", "portion_identifier": -1}
    write_release(src, extra=stray)
    data = write_data(tmp_path / "data")
    args = ["buckets", "import-published", str(src), "--out", str(out), "--data-dir",
            str(data / "xnli"), *CSV]
    assert run_app(args) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err
    assert ("xnli/de/k1: 1 bucket example not located in" in err
            and "(bucket 01: german-9999-val 'Nirgends . | Nie .' (not in the dev file))" in err
            and "--max-unlocated 1 accepts them" in err)
    assert not out.exists()
    assert run_app([*args, "--max-unlocated", "1"]) == 0
    printed = capsys.readouterr()
    assert "xnli/de/k1: 1 bucket examples not located, accepted" in printed.err
    entry = read_set(out / "xnli" / "de" / "k1")[0]["dev_remaining"]
    assert [(u["bucket"], u["id"]) for u in entry["unlocated"]] == [(1, "german-9999-val")]
    assert entry["located"] == 5


def test_a_missing_dev_file_leaves_its_sets_without_a_dev_set_and_says_so(release, capsys):
    """Issue 73, item 2: what can be imported is; the sets whose dev file --data-dir lacks
    are imported without a remaining dev set, the summary names them in one unit (sets of
    task/language pairs) with the missing files, and the same import with the file adds it."""
    src, data, out = release
    elsewhere = data / "elsewhere"
    assert run_app(["buckets", "import-published", str(src), "--out", str(out),
                    "--data-dir", str(elsewhere)]) == 0
    printed = capsys.readouterr().out
    assert (f"2 sets of 1 task/language pair (xnli/de) have no remaining dev set, which their "
            f"runs select models on; --data-dir lacks their dev files ({elsewhere / 'dev-de.tsv'})"
            ) in printed
    assert not (out / "xnli" / "de" / "k1" / "dev-remaining.jsonl").exists()
    assert run_app(["buckets", "import-published", str(src), "--out", str(out),
                    "--data-dir", str(data / "{task}"), *CSV]) == 0
    assert "no remaining dev set" not in capsys.readouterr().out
    assert (out / "xnli" / "de" / "k1" / "dev-remaining.jsonl").is_file()


def _sweep(tmp_path: Path, out: Path, data: Path, n_buckets: int = 2) -> dict:
    start = tmp_path / "ckpt"
    start.mkdir(exist_ok=True)
    (start / "config.json").write_text("{}")
    (start / "tokenizer_config.json").write_text("{}")  # a model folder's
    return {"name": "published", "out": str(tmp_path / "runs"), "buckets": str(out),
            "data_dir": str(data / "{task}"), "start": str(start), "n_buckets": n_buckets,
            "tasks": {"xnli": {"languages": ["de"], "k": [1]}}}


def test_a_sweep_refuses_a_set_without_its_dev_set_with_the_cure(release, tmp_path):
    from fsxlt.execution import expand, parse_config

    src, data, out = release
    run_app(["buckets", "import-published", str(src), "--out", str(out)])
    with pytest.raises(FsxltError, match=r"no remaining dev set .*add it with 'fsxlt buckets "
                       rf"import-published RELEASE --out {out} --task xnli --data-dir DIR'"):
        expand(parse_config(_sweep(tmp_path, out, data)))
    run_app(["buckets", "import-published", str(src), "--out", str(out),
             "--data-dir", str(data / "xnli"), *CSV])
    runs = expand(parse_config(_sweep(tmp_path, out, data))).runs
    assert [run.index for run in runs] == [0, 1]
    remaining = out / "xnli" / "de" / "k1" / "dev-remaining.jsonl"
    assert all(run.dev_path == str(remaining) for run in runs)


def test_a_test_file_that_is_the_dev_file_is_refused(release, tmp_path):
    from fsxlt.execution import expand, parse_config

    src, data, out = release
    run_app(["buckets", "import-published", str(src), "--out", str(out),
             "--data-dir", str(data / "xnli"), *CSV])
    (data / "xnli" / "test-de.tsv").write_bytes((data / "xnli" / "dev-de.tsv").read_bytes())
    with pytest.raises(FsxltError, match="is the dev file the buckets of .* were found in"):
        expand(parse_config(_sweep(tmp_path, out, data)))


# ------------------------------------------------------------ the study on its release

def _tiny_release(root: Path, data: Path) -> None:
    """One bucket per published (task, K, language) folder of the release, with dev and
    test files for each language in the study's form: the release's shape, at no size.
    XNLI's are XNLI 1.0's own two files (every language, the tokenized columns); each
    classification bucket's release ids name the dev lines of its examples, as the
    release's do (fsxlt.sampling.locate.release_position)."""
    from fsxlt.sampling.locate import XNLI_DEV_ROWS, XNLI_ORDER
    from fsxlt.tasks import get_task
    from fsxlt.tasks.languages import language_code

    listing = json.loads((REPO / "tests/fixtures/published_release.json").read_text())
    xnli10: dict[str, list[str]] = {"dev": [], "test": []}
    for task, ks in listing.items():
        spec = get_task(task)
        for k, folders in ks.items():
            for folder in folders:
                code = language_code(folder)
                bucket = root / task / f"{k}-shots" / folder / "0-th"
                bucket.mkdir(parents=True)
                (data / task).mkdir(parents=True, exist_ok=True)
                if spec.is_tagging:
                    tag = spec.labels[0]
                    (bucket / "train.tsv").write_text(f"Ada\t{tag}\n", encoding="utf-8")
                    for split in ("dev", "test"):
                        (data / task / f"{split}-{code}.tsv").write_text(
                            f"Ada\t{tag}\n\nBonn\t{tag}\n", encoding="utf-8")
                    continue
                first = XNLI_DEV_ROWS * XNLI_ORDER.index(code) if task == "xnli" else 1
                sampled = {label: [{"uid": f"{folder}-{first + i}-val", "text_a": f"{code} {label}",
                                    "text_b": "b", "label": label}]
                           for i, label in enumerate(spec.labels)}
                (bucket / "sampled.json").write_text(json.dumps(sampled))
                texts = [(f"{code} {label}", label) for label in spec.labels]
                texts += [(f"{code} other {label}", label) for label in spec.labels]
                for split in ("dev", "test"):
                    chosen = texts if split == "dev" else texts[len(spec.labels):]
                    if task == "xnli":
                        if not any(row.startswith(f"{code}\t") for row in xnli10[split]):
                            xnli10[split] += [_xnli10_row(code, text, label)
                                              for text, label in chosen]
                        continue
                    path = spec.data.locate(str(data / task), split, code)
                    rows = [json.dumps({"review_body": text, "review_title": "b",
                                        "product_category": "x", "stars": int(label)})
                            if task == "marc"
                            else f"{text}\tb\t{label}" for text, label in chosen]
                    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    for split, rows in xnli10.items():
        header = "language\tgold_label\tsentence1\tsentence2\tsentence1_tokenized\t" \
                 "sentence2_tokenized"
        (data / "xnli" / f"xnli.{split}.tsv").write_text("\n".join([header, *rows]) + "\n",
                                                         encoding="utf-8")


def _xnli10_row(code: str, text: str, label: str) -> str:
    return "\t".join([code, label, text, "b", text, "b"])


def test_the_published_sweep_config_runs_every_set_of_the_release(tmp_path, monkeypatch):
    """configs/sweeps/published.yaml on a store imported the study's way (--reading study)
    from the whole release's shape (every task, language and K of it; one bucket each
    here) plans every run, refuses nothing, and covers every target language and K the
    release has."""
    from fsxlt.execution import expand, load_config

    monkeypatch.chdir(tmp_path)
    _tiny_release(tmp_path / "release", tmp_path / "data")
    assert run_app(["buckets", "import-published", "release", "--out", "buckets/published",
                    "--data-dir", "data/{task}", "--reading", "study"]) == 0
    for task in ("xnli", "pawsx", "marc", "udpos", "panx"):
        (tmp_path / "ckpt" / f"{task}-mbert").mkdir(parents=True)
        (tmp_path / "ckpt" / f"{task}-mbert" / "config.json").write_text("{}")
        (tmp_path / "ckpt" / f"{task}-mbert" / "tokenizer_config.json").write_text("{}")
    config = load_config(REPO / "configs/sweeps/published.yaml")
    config = replace(config, tasks=tuple(replace(plan, n_buckets=1) for plan in config.tasks))
    runs = expand(config).runs
    listing = json.loads((REPO / "tests/fixtures/published_release.json").read_text())
    from fsxlt.tasks.languages import language_code

    expected = {(task, language_code(folder), int(k)) for task, ks in listing.items()
                for k, folders in ks.items() for folder in folders} - {
        (task, "en", k) for task in ("panx", "udpos") for k in (1, 2, 4)}
    assert {(run.task, run.language, run.k) for run in runs} == expected
    assert {run.method for run in runs if run.task == "marc"} == {
        "full", "fc", "fc-pooler", "cos-pooler", "fc-reset-pooler"}


def test_check_notes_a_set_without_its_dev_set_and_accepted_unlocated_examples(tmp_path):
    src, out = tmp_path / "release", tmp_path / "store"
    write_release(src, extra={"uid": "german-9999-val", "text_a": "Nirgends .",
                              "text_b": "Nie .", "label": "neutral"})
    data = write_data(tmp_path / "data")
    run_app(["buckets", "import-published", str(src), "--out", str(out)])
    report = check_set(out / "xnli" / "de" / "k1")
    assert report.ok and report.notes == [
        "no remaining dev set, which its runs select models on: add it with fsxlt buckets "
        "import-published RELEASE --out STORE --data-dir DIR"]
    run_app(["buckets", "import-published", str(src), "--out", str(out), "--data-dir",
             str(data / "xnli"), *CSV, "--max-unlocated", "1"])
    report = check_set(out / "xnli" / "de" / "k1")
    assert report.ok and report.notes == [
        "1 bucket examples were not located in the dev file at import (accepted with "
        "--max-unlocated): the remaining dev set may hold them"]
    assert check_set(out / "xnli" / "de" / "k2").notes == []


@pytest.mark.parametrize(("field", "value", "message"), [
    ("located", "12", "dev_remaining.located is '12', not a whole number"),
    ("unlocated", "none", "dev_remaining.unlocated is 'none', not a list of examples"),
    ("source", {"file": "dev-de.tsv"}, "dev_remaining.source is {'file': 'dev-de.tsv'}"),
])
def test_a_forged_dev_record_in_a_manifest_is_one_line(release, field, value, message):
    src, data, out = release
    run_app(["buckets", "import-published", str(src), "--out", str(out), "--data-dir",
             str(data / "xnli"), *CSV])
    path = out / "xnli" / "de" / "k1" / "manifest.json"
    manifest = json.loads(path.read_text())
    manifest["dev_remaining"][field] = value
    path.write_text(json.dumps(manifest))
    with pytest.raises(FsxltError, match=re_escape(message)):
        read_set(path.parent)


def re_escape(text: str) -> str:
    import re

    return re.escape(text)


def test_a_published_set_with_its_dev_set_round_trips_through_a_dataset(release, tmp_path):
    src, data, out = release
    run_app(["buckets", "import-published", str(src), "--out", str(out), "--data-dir",
             str(data / "xnli"), *CSV])
    assert run_app(["buckets", "export", str(out), str(tmp_path / "hf"), "--format", "hf"]) == 0
    assert run_app(["buckets", "import-hf", str(tmp_path / "hf"), "--out",
                    str(tmp_path / "back")]) == 0
    for k in (1, 2):
        here, there = out / "xnli" / "de" / f"k{k}", tmp_path / "back" / "xnli" / "de" / f"k{k}"
        assert {p.name: p.read_bytes() for p in here.iterdir()} == \
            {p.name: p.read_bytes() for p in there.iterdir()}
    # the card names the local dev file each remaining dev set was computed from (issue 72)
    card = (tmp_path / "hf" / "README.md").read_text(encoding="utf-8")
    digest = sha256_file(data / "xnli" / "dev-de.tsv")
    assert card.count(f"- **Remaining dev set**: computed from the local file `dev-de.tsv` "
                      f"(sha256 `{digest}`); ") == 2


def test_lang_keeps_the_import_to_the_languages_whose_dev_files_one_has(tmp_path, capsys):
    src, out = tmp_path / "release", tmp_path / "store"
    write_release(src)
    folder = src / "xnli" / "1-shots" / "french" / "0-th"
    folder.mkdir(parents=True)
    (folder / "sampled.json").write_text(json.dumps(
        {label: [{"uid": f"french-{i}-val", "text_a": "x", "text_b": "y", "label": label}]
         for i, label in enumerate(LABELS)}))
    data = write_data(tmp_path / "data")
    args = ["buckets", "import-published", str(src), "--out", str(out), "--data-dir",
            str(data / "xnli"), *CSV]
    assert run_app([*args, "--lang", "de"]) == 0
    assert sorted(p.name for p in (out / "xnli").iterdir()) == ["de"]
    assert run_app([*args, "--lang", "de", "--lang", "sw"]) == 2  # in no task of the release
    assert "--lang sw: the release holds no buckets of xnli in that language" in \
        capsys.readouterr().err
    assert run_app(args) == 0  # fr imported too, without the dev file --data-dir lacks
    assert f"--data-dir lacks their dev files ({data / 'xnli' / 'dev-fr.tsv'})" in \
        capsys.readouterr().out
    other = tmp_path / "other"  # without the dev files: the cure keeps the filters given
    assert run_app(["buckets", "import-published", str(src), "--out", str(other), "--task",
                    "xnli", "--lang", "fr"]) == 0
    assert (f"add it: fsxlt buckets import-published {src} --out {other} --task xnli "
            "--lang fr --data-dir DIR") in capsys.readouterr().out


@pytest.mark.parametrize("seed", range(5))
def test_fsxlt_s_own_sets_follow_the_same_rule_this_k_s_buckets(tmp_path, seed):
    """fsxlt sample's remaining dev set of (language, K) is the dev split less that K's
    buckets only, as the published sets' are: K=1's holds examples K=2 drew."""
    from tests.conftest import write_pair_tsv

    dev = write_pair_tsv(tmp_path / "dev-de.tsv", {label: 100 for label in LABELS}, seed=seed)
    out = tmp_path / "store"
    assert run_app(["sample", "--task", "xnli", "--lang", "de", "-k", "1", "-k", "2",
                    "--data", str(dev), "--out", str(out), "--seed", str(seed)]) == 0
    ids = {}
    for k in (1, 2):
        _, buckets, remaining = read_set(out / "xnli" / "de" / f"k{k}")
        drawn = {ex.id for bucket in buckets for ex in bucket.examples}
        ids[k] = drawn
        pool = [f"dev-de.tsv:{line}" for line in range(1, 301)]
        assert [ex.id for ex in remaining] == [i for i in pool if i not in drawn]
    _, _, remaining1 = read_set(out / "xnli" / "de" / "k1")
    assert {ex.id for ex in remaining1} & ids[2]
