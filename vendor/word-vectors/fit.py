"""Fits the word-vector table to the catalog's intents: one linear map of the vector space.

The distilled vectors (distil.py) place a word by what the transformer says of it alone,
so "money back" and "refund" land near each other only as far as the transformer's
general sense of them goes. The catalog's intents (catalog/<service>/intents.toml) are
requests in people's words, each paired with the tool that serves it: thousands of
examples of how a person's words relate to a tool's. This module learns one square
matrix `W` so that, with every word vector `v` replaced by `W v`, each intent's vector
lies nearer its own tool's vector than any other tool's.

How: the vectors of a text and a tool are made as the broker makes them
(engine/catalog/src/catalog/search/meaning.rs: each word weighed `smoothing /
(smoothing + p)`, `p` its share of the catalog's words; stop words dropped). Each intent
is a query; its tool's vector is built without that intent (else the intent would find
itself); every other tool's vector is whole, as at search time. The loss is the softmax
cross-entropy of the intent's cosine similarities to all tools (temperature `TAU`), plus
`RIDGE` times the squared distance of `W` from the identity, so `W` stays near the
distilled space and words no intent says keep their place. Adam, `EPOCHS` passes in
batches of `BATCH`, a fixed seed: the same catalog gives the same table.

Linear, so the broker needs nothing new: a text's vector is a weighted sum of word
vectors, and `W` applied to each word is `W` applied to the sum. Only the catalog's
intents are used; the retrieval set (tests/retrieval/requests.toml) chose `TAU`,
`RIDGE` and `EPOCHS` on its tuned-on part and is never trained on.

Needs numpy; called by distil.py before the table is quantised.
"""
import tomllib
from collections import Counter
from pathlib import Path

import numpy as np

TAU = 20.0
RIDGE = 0.01
EPOCHS = 10
BATCH = 256
RATE = 0.01
SEED = 0


def each_word(text: str) -> list:
    """A text's words as meaning.rs reads them: runs of ASCII letters, lowercased, split
    where a small letter meets a capital."""
    out, word, last_small = [], "", False
    for c in text:
        letter = c.isascii() and c.isalpha()
        if (not letter or (last_small and c.isupper())) and word:
            out.append(word)
            word = ""
        if letter:
            word += c.lower()
        last_small = c.isascii() and c.islower()
    if word:
        out.append(word)
    return out


def catalog_texts(root: Path) -> dict:
    """Each tool's texts (name, title, description, argument names) and intents, by
    `service.name`."""
    tools = {}
    for folder in sorted((root / "catalog").iterdir()):
        if not folder.is_dir():
            continue
        intents_file = folder / "intents.toml"
        intents = {}
        if intents_file.exists():
            intents = tomllib.loads(intents_file.read_text(encoding="utf-8")).get("intents", {})
        for path in sorted(folder.glob("*.toml")):
            if path.name == "intents.toml":
                continue
            for tool in tomllib.loads(path.read_text(encoding="utf-8")).get("tool", []):
                texts = [tool["name"], tool.get("title", ""), tool.get("description", "")]
                texts += list(tool.get("arguments", {}).get("properties", {}))
                tools[f"{folder.name}.{tool['name']}"] = (texts, intents.get(tool["name"], []))
    return tools


def fitted(vocabulary: list, vectors: np.ndarray, root: Path) -> np.ndarray:
    """`vectors` (a row per word of `vocabulary`) mapped by the `W` learned from the
    catalog's intents under `root`."""
    rules = tomllib.loads((root / "rules/search.toml").read_text(encoding="utf-8"))
    stop = set(rules.get("stopwords", []))
    smoothing = rules["meaning"]["smoothing"]
    row = {w: i for i, w in enumerate(vocabulary)}

    def said(text):
        return [w for w in each_word(text) if len(w) > 1 and w not in stop]

    tools = catalog_texts(root)
    names = sorted(tools)
    base = {n: [w for t in tools[n][0] for w in said(t)] for n in names}
    intents = {n: [said(t) for t in tools[n][1]] for n in names}
    counts = Counter()
    for n in names:
        counts.update(base[n])
        for words in intents[n]:
            counts.update(words)
    total = sum(counts.values())

    def vector(words):
        v = np.zeros(vectors.shape[1], np.float64)
        for w in words:
            if w in row:
                v += smoothing / (smoothing + counts[w] / total) * vectors[row[w]]
        return v

    whole = np.stack([vector(base[n] + [w for s in intents[n] for w in s]) for n in names])
    queries, owners, rest = [], [], []
    for j, n in enumerate(names):
        for words in intents[n]:
            q = vector(words)
            if np.linalg.norm(q) > 0:
                queries.append(q)
                owners.append(j)
                rest.append(whole[j] - q)
    w = train(np.stack(queries), np.array(owners), np.stack(rest), whole)
    return (vectors @ w.T).astype(np.float32)


def train(queries, owners, rest, whole) -> np.ndarray:
    """The map: softmax cross-entropy of each query's cosines to every tool (its own as
    `rest`, the tool without the query), ridge toward the identity, Adam."""
    d = whole.shape[1]
    eye = np.eye(d)
    w = eye.copy()
    m, v = np.zeros_like(w), np.zeros_like(w)
    rng = np.random.default_rng(SEED)
    step = 0

    def unit(a):
        n = np.linalg.norm(a, axis=1, keepdims=True) + 1e-9
        return a / n, n

    def back(grad, hat, n):
        return (grad - hat * (grad * hat).sum(1, keepdims=True)) / n

    for _ in range(EPOCHS):
        order = rng.permutation(len(queries))
        for start in range(0, len(order), BATCH):
            b = order[start : start + BATCH]
            rows = np.arange(len(b))
            q, own, lo = queries[b], owners[b], rest[b]
            qh, qn = unit(q @ w.T)
            th, tn = unit(whole @ w.T)
            lh, ln = unit(lo @ w.T)
            s = TAU * qh @ th.T
            s[rows, own] = TAU * (qh * lh).sum(1)
            s -= s.max(1, keepdims=True)
            p = np.exp(s)
            p /= p.sum(1, keepdims=True)
            ds = p
            ds[rows, own] -= 1
            ds /= len(b)
            d_own = ds[rows, own].copy()
            ds[rows, own] = 0
            dq = TAU * (ds @ th) + TAU * d_own[:, None] * lh
            dt = TAU * (ds.T @ qh)
            dl = TAU * d_own[:, None] * qh
            grad = (
                back(dq, qh, qn).T @ q
                + back(dt, th, tn).T @ whole
                + back(dl, lh, ln).T @ lo
                + 2 * RIDGE * (w - eye)
            )
            step += 1
            m = 0.9 * m + 0.1 * grad
            v = 0.999 * v + 0.001 * grad * grad
            w -= RATE * (m / (1 - 0.9**step)) / (np.sqrt(v / (1 - 0.999**step)) + 1e-8)
    return w
