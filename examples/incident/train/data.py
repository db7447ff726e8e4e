"""Trajectory JSONL -> token arrays with loss masks, copy weights and turn ends.

Each segment is tokenized on its own and the ids concatenated: segment
boundaries fall right after "<|im_start|>assistant\\n" and right after
"<|im_end|>", where the tokenizer splits anyway (special tokens are split out
first, and "\\n" before an assistant turn's content ends a pre-token), so the
ids equal those of the whole transcript; `check_segment_split` verifies this
on real data.

Copied identifiers: a JSON string value in an assistant turn (a tool-call
argument or a final-answer field, not a key) that occurs verbatim in the
preceding context (the user task and every tool response so far) is a copy;
its tokens get `copy = 1`, and train.py weights their loss more. This marks
trace ids, line ids, service names and timestamps without knowing the tools.
"""

import json
import re

import numpy as np

from tokenizer import is_training_seed  # noqa: F401  (re-exported for train.py)

# JSON strings, matched left to right so that quotes pair up; one followed
# by ':' is a key.
_JSON_STRING = re.compile(rb'"((?:[^"\\]|\\.)*)"')
_KEY_COLON = re.compile(rb'\s*:')


class Example:
    __slots__ = ("seed", "ids", "train", "copy", "turn_ends")

    def __init__(self, seed, ids, train, copy, turn_ends):
        self.seed = seed
        self.ids = ids              # [n] int32 token ids
        self.train = train          # [n] uint8: 1 where the token is assistant output
        self.copy = copy            # [n] uint8: 1 where the token copies an identifier
        self.turn_ends = turn_ends  # [n_turns] int: index just past each assistant turn

    def __len__(self):
        return len(self.ids)

    def cut(self, max_len):
        """Length of the longest prefix <= max_len ending after a whole
        assistant turn (the first turn's end if even that is longer)."""
        best = self.turn_ends[0] if len(self.turn_ends) else len(self.ids)
        for e in self.turn_ends:
            if e <= max_len:
                best = e
        return int(min(best, len(self.ids)))


def copy_marks(tok, seg_text, context_text):
    """ids of `seg_text` and a 0/1 list marking tokens inside copied string values."""
    ids, ends = tok.encode_with_offsets(seg_text)
    marks = [0] * len(ids)
    raw = seg_text.encode("utf-8")
    spans = []
    for m in _JSON_STRING.finditer(raw):
        value = m.group(1)
        if _KEY_COLON.match(raw, m.end()):
            continue
        if len(value) >= 2 and value.decode("utf-8", "replace") in context_text:
            spans.append((m.start(1), m.end(1)))
    if spans:
        start = 0
        for i, end in enumerate(ends):
            for a, b in spans:
                if start < b and end > a:
                    marks[i] = 1
                    break
            start = end
    return ids, marks


def tokenize_record(tok, rec, segment_cache=None):
    ids, train, copy, turn_ends = [], [], [], []
    context = []  # non-assistant text after the system prompt
    for seg in rec["segments"]:
        text = seg["text"]
        if seg["train"]:
            seg_ids, marks = copy_marks(tok, text, "".join(context))
            ids += seg_ids
            train += [1] * len(seg_ids)
            copy += marks
            turn_ends.append(len(ids))
        else:
            seg_ids = segment_cache.get(text) if segment_cache is not None else None
            if seg_ids is None:
                seg_ids = tok.encode(text)
                if segment_cache is not None and len(text) > 2000 and len(segment_cache) < 64:
                    segment_cache[text] = seg_ids  # the system prompt repeats in every transcript
            ids += seg_ids
            train += [0] * len(seg_ids)
            copy += [0] * len(seg_ids)
            if context:
                context.append(text)
            else:  # the first segment: system prompt (not a source of copies), then the task
                user = text.find("<|im_start|>user")
                context.append(text[user:] if user >= 0 else "")
    return Example(rec["seed"], np.array(ids, dtype=np.int32), np.array(train, dtype=np.uint8),
                   np.array(copy, dtype=np.uint8), np.array(turn_ends, dtype=np.int64))


def load_records(paths, seed_ok):
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    rec = json.loads(line)
                    if seed_ok(rec["seed"]):
                        yield rec


def load_examples(tok, paths, seed_ok, limit=None, log=None):
    cache = {}
    out = []
    for rec in load_records(paths, seed_ok):
        out.append(tokenize_record(tok, rec, cache))
        if log and len(out) % 500 == 0:
            log(f"tokenized {len(out)} transcripts")
        if limit is not None and len(out) >= limit:
            break
    return out


def check_segment_split(tok, rec):
    """True when per-segment ids equal the ids of the whole transcript."""
    whole = tok.encode("".join(s["text"] for s in rec["segments"]))
    return list(tokenize_record(tok, rec).ids) == whole


def is_validation_seed(seed):
    return 90_000 <= seed < 90_100


def is_heldout_seed(seed):
    return seed >= 1_000_000
