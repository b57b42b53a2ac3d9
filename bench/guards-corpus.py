#!/usr/bin/env python3
"""The negative corpus of the guard rules: every `example`, `x-example` and `examples`
value of the upstream OpenAPI documents, as their string leaves, deduplicated per
service, written to tests/fixtures/guards/upstream-examples.json (which the tests read;
the documents themselves are no test's input).

    python3 bench/guards-corpus.py SPECS_DIR > /dev/null

SPECS_DIR holds one folder per service with its OpenAPI files (JSON or YAML; PyYAML).
Prints per service: examples, distinct strings, their bytes.
"""
import json, sys, os, glob, yaml
root = sys.argv[1]
def load(p):
    with open(p) as f:
        return yaml.safe_load(f) if p.endswith('.yaml') else json.load(f)
def examples(node, out):
    if isinstance(node, dict):
        for k, v in node.items():
            if k in ('example', 'x-example'):
                out.append(v)
            elif k == 'examples' and isinstance(v, dict):
                for e in v.values():
                    if isinstance(e, dict) and 'value' in e: out.append(e['value'])
                    else: out.append(e)
            elif k == 'examples' and isinstance(v, list):
                out.extend(v)
            else:
                examples(v, out)
    elif isinstance(node, list):
        for v in node: examples(v, out)
def strings(v, out):
    if isinstance(v, str): out.add(v)
    elif isinstance(v, dict):
        for x in v.values(): strings(x, out)
    elif isinstance(v, list):
        for x in v: strings(x, out)
total = {}
for svc in sorted(os.listdir(root)):
    d = os.path.join(root, svc)
    if not os.path.isdir(d): continue
    files = sorted(glob.glob(d + '/**/*.json', recursive=True) + glob.glob(d + '/**/*.yaml', recursive=True))
    ex = []
    for p in files: examples(load(p), ex)
    s = set()
    for e in ex: strings(e, s)
    total[svc] = (len(ex), sorted(s))
    print(svc, len(ex), len(s), sum(len(x) for x in s), file=sys.stderr)
out = {
    "source": "every `example`, `x-example` and `examples` value of the upstream OpenAPI documents (docs: bench/README.md \"Guards\"), string leaves, deduplicated per service",
    "services": {k: v[1] for k, v in total.items()},
}
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, '..', 'tests', 'fixtures', 'guards', 'upstream-examples.json'), 'w') as f:
    json.dump(out, f, indent=0, ensure_ascii=False, sort_keys=True)
