#!/usr/bin/env bash
# The score difference of two readings on one published XNLI set (Hindi) and one PAWS-X
# set (Korean), adapted with a real encoder on CPU: the published buckets kept in the
# release's form beside dev and test files read the default way (what fsxlt 0.10 did)
# against one form throughout (XNLI: the buckets put in the dev file's raw text; PAWS-X:
# the dev and test files read unquoted, the release's form).
#
#   bash scripts/readings_scores.sh DATA ENCODER WORK
#
# DATA: ../shared/data (XTREME's dev files and the release); ENCODER: a Hugging Face
# folder (python3 ../shared/tools/offline_encoder.py /tmp/e5); WORK: an empty folder.
# No labelled target test file is at hand, so each target's dev file is cut in two: the
# lines of the K=1 and K=8 buckets plus every other remaining line stay the dev file,
# the other remaining lines become the test file (no bucket line in it). English is
# source-trained on the first 1,600 lines of its dev file and selected on the rest.
set -euo pipefail
DATA=$(realpath "$1"); ENCODER=$(realpath "$2"); WORK=$3
mkdir -p "$WORK" && cd "$WORK"

python - "$DATA" <<'EOF'
import json, shutil, sys
from pathlib import Path

from fsxlt.data import TextExample, read_examples
from fsxlt.sampling.locate import bucket_key, dev_keys

data = Path(sys.argv[1])


def _lines(path):
    """A file's lines with their ends, cut at newlines only (texts hold U+2028)."""
    return [line + "\n" for line in path.read_text(encoding="utf-8").split("\n")[:-1]]


for task, lang, name in (("xnli", "hi", "hindi"), ("pawsx", "ko", "korean")):
    texts = set()
    for k in (1, 8):  # a release of K=1 and K=8 only, so the cut dev file holds every line
        src = data / "published_buckets" / task / f"{k}-shots" / name
        shutil.copytree(src, Path("release") / task / f"{k}-shots" / name, dirs_exist_ok=True)
        for sampled in src.glob("*-th/sampled.json"):
            for label, rows in json.loads(sampled.read_text(encoding="utf-8")).items():
                for row in rows:
                    texts.add(bucket_key(TextExample(row["uid"], row["text_a"],
                                                     row.get("text_b"), label)))
    lines = _lines(data / task / f"dev-{lang}.tsv")
    examples = read_examples(data / task / f"dev-{lang}.tsv", task, language=lang)
    dev, test, others = [], [], 0
    for line, example in zip(lines, examples, strict=True):
        if dev_keys(example) & texts:
            dev.append(line)
        else:
            (dev if others % 2 == 0 else test).append(line)
            others += 1
    out = Path("data") / task
    out.mkdir(parents=True, exist_ok=True)
    (out / f"dev-{lang}.tsv").write_text("".join(dev), encoding="utf-8")
    (out / f"test-{lang}.tsv").write_text("".join(test), encoding="utf-8")
    english = _lines(data / task / "dev-en.tsv")
    (out / "train-en.tsv").write_text("".join(english[:1600]), encoding="utf-8")
    (out / "dev-en.tsv").write_text("".join(english[1600:]), encoding="utf-8")
    print(f"{task}/{lang}: dev {len(dev)} lines, test {len(test)}, english 1600 + "
          f"{len(english) - 1600}")
EOF

fsxlt buckets import-published release --task xnli -d 'data/{task}' --out b-mixed \
    --bucket-text release
fsxlt buckets import-published release --task xnli -d 'data/{task}' --out b-one \
    --bucket-text dev-file
fsxlt buckets import-published release --task pawsx -d 'data/{task}' --out b-mixed \
    --bucket-text release
fsxlt buckets import-published release --task pawsx -d 'data/{task}' --out b-one \
    --reading quoting=csv

for task in xnli pawsx; do
  lang=$([ "$task" = xnli ] && echo hi || echo ko)
  [ -d "ckpt/$task" ] || fsxlt source-train --task "$task" --model "$ENCODER" \
      --data-dir "data/$task" --target "$lang" --epochs 2 --lr 1e-4 --test-limit 600 \
      --out "ckpt/$task"
done

for store in mixed one; do
  cat > "sweep-$store.yaml" <<EOF
name: readings-$store
out: runs-$store
buckets: b-$store
data_dir: data/{task}
start: ckpt/{task}
methods: [full]
n_buckets: 2
lrs: [1.0e-4]
max_epochs: 5
patience: 3
dev_limit: 300
test_limit: 600
tasks:
  xnli: {languages: [hi], k: [1, 8]}
  pawsx: {languages: [ko], k: [1, 8]}
EOF
  fsxlt sweep "sweep-$store.yaml" --workers 1
done
for store in mixed one; do fsxlt report "runs-$store" --out "report-$store" >/dev/null; done
# each (task, language, K, bucket) under both: the test score (points) and the difference
python - <<'EOF'
import csv
from pathlib import Path

rows = {}
for store in ("mixed", "one"):
    with open(f"report-{store}/records.csv", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            key = (row["task"], row["language"], row["k"], row["bucket"])
            rows.setdefault(key, {})[store] = float(row["test_points"])
print("task language k bucket mixed one one-mixed")
for key, scores in sorted(rows.items()):
    if len(scores) == 2:
        print(*key, f"{scores['mixed']:.2f}", f"{scores['one']:.2f}",
              f"{scores['one'] - scores['mixed']:+.2f}")
EOF
