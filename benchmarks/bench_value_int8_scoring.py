"""Does a saved head-mode model score states as its head saw them in training?

Head mode trains the head on cached features, embedded in length-sorted batches of the
training run. At scoring time (``LearnedValue``, the pyfunc) the saved model embeds states
again, in other batches. With the float encoder the two agree to float rounding. With
``model.quantize=int8-dynamic`` the activations are quantised with one scale per batch tensor,
so a state's features depend on its batch mates: this script measures by how much, on the
models that :mod:`benchmarks.bench_value_scale` saved (same work directory), on the first
``--states`` test states that the run embedded (read from its feature cache, which the
loaded model must find): the difference between the trained head's outputs on the cached
features and the loaded model's scores (``predict_texts``, batches of 64), and both Pearson
correlations with the return-to-go. Writes the ``value-int8-scoring`` section of docs/benchmarks.md.

    python -m benchmarks.bench_value_int8_scoring [--work runs/bench-value-scale]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

from amc.value.data import load_dataset_dir
from amc.value.features import FeatureCache, encoder_identity, text_key
from amc.value.model import load_model, predict_texts
from amc.value.train_head import head_predict
from benchmarks._report import md_table, write_section

# (label, run directory under --work, feature-cache root under --work)
RUNS = (("timed run", "head-cold", "feature-cache"), ("compare: float", "compare-float",
        "compare-cache"), ("compare: int8", "compare-int8", "compare-cache"),
        ("compare: int8-l3", "compare-int8-l3", "compare-cache"),
        ("compare: int8-l2", "compare-int8-l2", "compare-cache"))


def measure(model_dir: Path, cache_root: Path, texts: list[str], target: np.ndarray) -> list:
    """One table row: encoder, states found in the training cache, abs(trained - scored) (max,
    mean) and correlations, over the states the training run embedded (the cache is only read).
    """
    model, tok, meta = load_model(model_dir)
    cache = FeatureCache(cache_root, encoder_identity(model, tok))
    rows = [cache.get(text_key(t)) for t in texts]
    hit = [i for i, r in enumerate(rows) if r is not None]
    feats = np.stack([rows[i] for i in hit])  # type: ignore[misc]
    trained = head_predict(model, feats)
    scored = np.array(predict_texts(model, tok, [texts[i] for i in hit], batch_size=64))
    diff = np.abs(trained - scored)
    y = target[hit]
    cfg = meta["model"]
    enc = f"{cfg['quantize']}, {cfg['num_layers'] or 6} layers"
    return [enc, f"{len(hit)}/{len(texts)}", f"{diff.max():.4f}", f"{diff.mean():.4f}",
            f"{np.corrcoef(trained, scored)[0, 1]:.4f}", f"{np.corrcoef(trained, y)[0, 1]:.3f}",
            f"{np.corrcoef(scored, y)[0, 1]:.3f}"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--work", type=Path, default=Path("runs/bench-value-scale"))
    ap.add_argument("--states", type=int, default=500)
    ap.add_argument("--no-write", action="store_true", help="print only")
    args = ap.parse_args()
    work = args.work.resolve()
    ds = next(work.glob("dataset-*"))
    test = load_dataset_dir(ds)[0]["test"]
    texts = list(test["text"][: args.states])
    target = np.array(test["target"][: args.states])
    rows = [[label, *measure(work / run / "model", work / cache, texts, target)]
            for label, run, cache in RUNS if (work / run / "model").is_dir()]
    body = (f"Models saved by `benchmarks/bench_value_scale.py` (`{work.name}`), first "
            f"{len(texts)} test states ({len(set(texts))} distinct). \"trained\": the saved "
            "head on the features cached in training; \"scored\": the loaded model's "
            "`predict_texts` (batches of 64, as `LearnedValue` scores).\n\n"
            + md_table(["run", "encoder", "states in the training cache",
                        "max abs(trained - scored)",
                        "mean abs(trained - scored)", "corr(trained, scored)",
                        "Pearson trained vs return-to-go", "Pearson scored vs return-to-go"],
                       rows) + "\n")
    print(body)
    if not args.no_write:
        write_section("value-int8-scoring", "Head mode with an int8 encoder: training features "
                      "vs scoring", body)


if __name__ == "__main__":
    main()
