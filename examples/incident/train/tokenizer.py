"""Byte-level BPE tokenizer of the shipped model: training, encoding, saving.

Layout of the vocabulary (ids):
  0..255            the 256 single bytes, written with GPT-2's byte->unicode map
  256..256+M-1      one token per learned merge, in rank order
  then              the special tokens (GGUF token type "control")

Pre-tokenization is llama.cpp's "qwen2" pre-tokenizer, so that tachyon's C++
tokenizer (tokenizer.ggml.pre = "qwen2") reproduces the same ids:
  (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}
  | ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
Python's `re` has no \p{..}: ASCII text (all of the incident transcripts) goes
through an equivalent ASCII-class regex, any other text through a hand-written
matcher over unicodedata categories; a test checks both agree on ASCII.

Hexadecimal identifiers (trace and span ids) are kept out of merge learning:
a pre-token that overlaps a run of 6+ hex characters mixing digits and a-f
letters is not counted when training. Digits are single tokens anyway, so a
trace id encodes as digits plus short letter runs that only get merges learned
from ordinary words: ids stay close to one token per character, which is what
copying an id token by token from a tool response needs.

Usage:
  python3 tokenizer.py train --data T.jsonl [--data ...] --vocab 2048 --out tok.json
  python3 tokenizer.py encode --tokenizer tok.json --file F [--parse-special]
"""

import argparse
import collections
import heapq
import json
import re
import sys
import unicodedata

SPECIAL_TOKENS = [
    "<|endoftext|>", "<|im_start|>", "<|im_end|>",
    "<tool_call>", "</tool_call>", "<tool_response>", "</tool_response>",
]


# --- GPT-2 byte <-> unicode map --------------------------------------------
def bytes_to_unicode():
    """Printable bytes map to themselves; the others to 256+n, in byte order."""
    printable = (list(range(ord("!"), ord("~") + 1)) + list(range(ord("\xa1"), ord("\xac") + 1))
                 + list(range(ord("\xae"), ord("\xff") + 1)))
    table = {}
    n = 0
    for b in range(256):
        if b in printable:
            table[b] = chr(b)
        else:
            table[b] = chr(256 + n)
            n += 1
    return table


BYTE_TO_UNICODE = bytes_to_unicode()
UNICODE_TO_BYTE = {u: b for b, u in BYTE_TO_UNICODE.items()}


def to_byte_string(text):
    return "".join(BYTE_TO_UNICODE[b] for b in text.encode("utf-8"))


# --- qwen2 pre-tokenizer ----------------------------------------------------
# llama.cpp's whitespace set (unicode.cpp), which \s means in its regexes.
_WHITESPACE = set([0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0x85, 0xA0, 0x1680, 0x2028, 0x2029,
                   0x202F, 0x205F, 0x3000] + list(range(0x2000, 0x200B)))

_W = r"\t\n\x0b\x0c\r "  # ASCII whitespace (not Python's \s: that adds \x1c-\x1f)
_QWEN2_ASCII = re.compile(
    r"'(?:[sS]|[tT]|[rR][eE]|[vV][eE]|[mM]|[lL][lL]|[dD])"
    r"|[^\r\nA-Za-z0-9]?[A-Za-z]+"
    r"|[0-9]"
    r"| ?[^" + _W + r"A-Za-z0-9]+[\r\n]*"
    r"|[" + _W + r"]*[\r\n]+"
    r"|[" + _W + r"]+(?![^" + _W + r"])"
    r"|[" + _W + r"]+")


def _is_letter(c):
    return unicodedata.category(c)[0] == "L"


def _is_number(c):
    return unicodedata.category(c)[0] == "N"


def _is_space(c):
    return ord(c) in _WHITESPACE


def _match_qwen2(text, pos):
    """End of the qwen2 regex match starting at `pos` (alternatives in order)."""
    n = len(text)
    c = text[pos]
    # (?i:'s|'t|'re|'ve|'m|'ll|'d)
    if c == "'" and pos + 1 < n:
        for suffix in ("s", "t", "re", "ve", "m", "ll", "d"):
            if text[pos + 1:pos + 1 + len(suffix)].lower() == suffix:
                return pos + 1 + len(suffix)
    # [^\r\n\p{L}\p{N}]?\p{L}+
    start = pos
    if c not in "\r\n" and not _is_letter(c) and not _is_number(c) and pos + 1 < n and _is_letter(text[pos + 1]):
        start = pos + 1
    if _is_letter(text[start]):
        end = start
        while end < n and _is_letter(text[end]):
            end += 1
        return end
    # \p{N}
    if _is_number(c):
        return pos + 1
    # ' ?[^\s\p{L}\p{N}]+[\r\n]*'
    def other(ch):
        return not _is_space(ch) and not _is_letter(ch) and not _is_number(ch)
    start = pos + 1 if (c == " " and pos + 1 < n and other(text[pos + 1])) else pos
    if other(text[start]):
        end = start
        while end < n and other(text[end]):
            end += 1
        while end < n and text[end] in "\r\n":
            end += 1
        return end
    # c is whitespace from here on.
    run_end = pos
    while run_end < n and _is_space(text[run_end]):
        run_end += 1
    # \s*[\r\n]+ : greedy \s* backs off to the last \r or \n of the run.
    last_nl = -1
    for i in range(pos, run_end):
        if text[i] in "\r\n":
            last_nl = i
    if last_nl >= 0:
        return last_nl + 1
    # \s+(?!\S)
    if run_end == n:
        return run_end
    if run_end - 1 > pos:
        return run_end - 1
    # \s+
    return run_end


def pre_tokenize_spans(text):
    """[(start, end)] character spans of the qwen2 pre-tokens of `text`."""
    if text.isascii():
        return [m.span() for m in _QWEN2_ASCII.finditer(text)]
    return pre_tokenize_spans_unicode(text)


def pre_tokenize_spans_unicode(text):
    spans = []
    pos = 0
    while pos < len(text):
        end = _match_qwen2(text, pos)
        spans.append((pos, end))
        pos = end
    return spans


def pre_tokenize(text):
    return [text[a:b] for a, b in pre_tokenize_spans(text)]


# GPT-2's pre-tokenizer, used only to check the BPE core against the gpt-2
# conformance vocabulary (test_tokenizer.py).
def pre_tokenize_gpt2(text):
    """'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+"""
    def other(ch):
        return not _is_space(ch) and not _is_letter(ch) and not _is_number(ch)
    out = []
    pos = 0
    n = len(text)
    while pos < n:
        c = text[pos]
        end = None
        if c == "'":
            for suffix in ("s", "t", "re", "ve", "m", "ll", "d"):
                if text[pos + 1:pos + 1 + len(suffix)] == suffix:
                    end = pos + 1 + len(suffix)
                    break
        if end is None:
            for pred in (_is_letter, _is_number, other):
                if c == " " and pos + 1 < n and pred(text[pos + 1]):
                    start = pos + 1
                elif pred(c):
                    start = pos
                else:
                    continue
                end = start
                while end < n and pred(text[end]):
                    end += 1
                break
        if end is None:  # whitespace
            run_end = pos
            while run_end < n and _is_space(text[run_end]):
                run_end += 1
            if run_end == n or run_end - 1 == pos:
                end = run_end
            else:
                end = run_end - 1
        out.append(text[pos:end])
        pos = end
    return out


# --- hex identifiers ----------------------------------------------------------
_HEX_RUN = re.compile(r"(?<![0-9A-Za-z])[0-9a-fA-F]{6,}(?![0-9A-Za-z])")


def hex_id_spans(text):
    """Spans of hex identifiers: 6+ hex chars, at least one digit and one letter."""
    spans = []
    for m in _HEX_RUN.finditer(text):
        s = m.group(0)
        if any(ch.isdigit() for ch in s) and any(ch.isalpha() for ch in s):
            spans.append(m.span())
    return spans


# --- the tokenizer --------------------------------------------------------------
class Tokenizer:
    def __init__(self, merges, special_tokens=SPECIAL_TOKENS, pre_tokenizer="qwen2", tokens=None):
        """`tokens` defaults to this project's layout (bytes, merges, specials);
        an explicit list reads another vocabulary (the gpt-2 conformance test)."""
        self.merges = [tuple(m) for m in merges]            # [(left, right)] in rank order
        self.special_tokens = list(special_tokens)
        if tokens is None:
            tokens = [BYTE_TO_UNICODE[b] for b in range(256)] + [a + b for a, b in self.merges]
            self.n_normal = len(tokens)
            tokens += self.special_tokens
        else:
            self.n_normal = len(tokens)
        self.tokens = list(tokens)
        self.token_to_id = {t: i for i, t in enumerate(self.tokens)}
        self.special_ids = {t: self.token_to_id[t] for t in self.special_tokens}
        self.ranks = {m: i for i, m in enumerate(self.merges)}
        self.pre_tokenizer = pre_tokenizer
        self._cache = {}
        self._special_re = re.compile("|".join(re.escape(t) for t in
                                               sorted(self.special_tokens, key=len, reverse=True)))

    @property
    def vocab_size(self):
        return len(self.tokens)

    # -- encoding --
    def _bpe(self, word):
        """Ids of one pre-token (already in byte-unicode form)."""
        ids = self._cache.get(word)
        if ids is not None:
            return ids
        symbols = list(word)
        while len(symbols) > 1:
            best = None
            best_rank = None
            for i in range(len(symbols) - 1):
                r = self.ranks.get((symbols[i], symbols[i + 1]))
                if r is not None and (best_rank is None or r < best_rank):
                    best, best_rank = i, r
            if best is None:
                break
            symbols[best:best + 2] = [symbols[best] + symbols[best + 1]]
        ids = [self.token_to_id[s] for s in symbols]
        if len(self._cache) < 500000:
            self._cache[word] = ids
        return ids

    def _pre(self, text):
        if self.pre_tokenizer == "gpt2":
            return pre_tokenize_gpt2(text)
        return pre_tokenize(text)

    def encode_ordinary(self, text):
        ids = []
        for piece in self._pre(text):
            ids.extend(self._bpe(to_byte_string(piece)))
        return ids

    def encode(self, text, parse_special=True):
        """Special tokens are split out first, then each piece is pre-tokenized and merged."""
        if not parse_special:
            return self.encode_ordinary(text)
        ids = []
        pos = 0
        for m in self._special_re.finditer(text):
            if m.start() > pos:
                ids.extend(self.encode_ordinary(text[pos:m.start()]))
            ids.append(self.special_ids[m.group(0)])
            pos = m.end()
        if pos < len(text):
            ids.extend(self.encode_ordinary(text[pos:]))
        return ids

    def encode_with_offsets(self, text):
        """(ids, byte_ends): byte_ends[i] is the UTF-8 byte offset where token i ends."""
        ids = self.encode(text)
        ends = []
        pos = 0
        for i in ids:
            pos += len(self.token_bytes(i))
            ends.append(pos)
        return ids, ends

    def token_bytes(self, i):
        t = self.tokens[i]
        if t in self.special_ids:
            return t.encode("utf-8")
        return bytes(UNICODE_TO_BYTE[ch] for ch in t)

    def decode(self, ids):
        return b"".join(self.token_bytes(i) for i in ids).decode("utf-8", errors="replace")

    # -- persistence --
    def to_json(self):
        return {
            "model": "gpt2",
            "pre": "qwen2",
            "tokens": self.tokens,
            "merges": [a + " " + b for a, b in self.merges],
            "special_tokens": self.special_ids,
            "n_normal": self.n_normal,
        }

    def save(self, path):
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.to_json(), f, ensure_ascii=False)

    @staticmethod
    def load(path):
        with open(path, encoding="utf-8") as f:
            d = json.load(f)
        merges = [tuple(m.split(" ")) for m in d["merges"]]
        tok = Tokenizer(merges, special_tokens=list(d["special_tokens"].keys()))
        assert tok.tokens == d["tokens"], "tokenizer file: tokens do not follow from the merges"
        return tok


# --- training -----------------------------------------------------------------
def count_words(texts):
    """Pre-token frequencies (byte-unicode strings), hex identifiers excluded."""
    counts = collections.Counter()
    special_re = re.compile("|".join(re.escape(t) for t in SPECIAL_TOKENS))
    for text in texts:
        for piece in special_re.split(text):
            hexes = hex_id_spans(piece)
            h = 0
            for a, b in pre_tokenize_spans(piece):
                while h < len(hexes) and hexes[h][1] <= a:
                    h += 1
                if h < len(hexes) and hexes[h][0] < b:
                    continue  # overlaps a hex identifier
                counts[piece[a:b]] += 1
    return collections.Counter({to_byte_string(w): c for w, c in counts.items()})


def train_bpe(word_counts, n_merges, log=None):
    """Classic BPE: repeatedly merge the most frequent adjacent pair.

    Pair counts are updated incrementally from the words that contain the
    merged pair (an index pair -> words), so each merge costs the size of
    those words, not of the corpus. Ties break on the pair itself (smallest
    first) so that training is deterministic.
    """
    words = [list(w) for w in word_counts]
    freqs = [word_counts[w] for w in word_counts]
    pair_counts = collections.Counter()
    where = collections.defaultdict(set)  # pair -> indices of words holding it
    for wi, syms in enumerate(words):
        f = freqs[wi]
        for p in zip(syms, syms[1:]):
            pair_counts[p] += f
            where[p].add(wi)
    heap = [(-c, p) for p, c in pair_counts.items()]
    heapq.heapify(heap)
    merges = []
    while len(merges) < n_merges and heap:
        neg, pair = heapq.heappop(heap)
        if pair_counts.get(pair, 0) != -neg:
            continue  # stale entry
        if -neg < 2:
            break
        merges.append(pair)
        merged = pair[0] + pair[1]
        changed = set()
        for wi in where.pop(pair, ()):
            syms = words[wi]
            f = freqs[wi]
            for p in zip(syms, syms[1:]):
                pair_counts[p] -= f
                changed.add(p)
            out = []
            i = 0
            while i < len(syms):
                if i + 1 < len(syms) and syms[i] == pair[0] and syms[i + 1] == pair[1]:
                    out.append(merged)
                    i += 2
                else:
                    out.append(syms[i])
                    i += 1
            words[wi] = out
            for p in zip(out, out[1:]):
                pair_counts[p] += f
                where[p].add(wi)
                changed.add(p)
        pair_counts.pop(pair, None)
        for p in changed:
            c = pair_counts.get(p, 0)
            if c > 0:
                heapq.heappush(heap, (-c, p))
            else:
                pair_counts.pop(p, None)
        if log and len(merges) % 250 == 0:
            log(f"merges {len(merges)}: last {pair} count {-neg}")
    return merges


def read_transcripts(paths, seed_ok=None):
    for path in paths:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if not line.strip():
                    continue
                rec = json.loads(line)
                if seed_ok is not None and not seed_ok(rec["seed"]):
                    continue
                yield rec


def is_training_seed(seed):
    """Held-out (>= 1,000,000) and validation (90,000-90,099) seeds never train."""
    return seed < 1_000_000 and not (90_000 <= seed < 90_100)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    t = sub.add_parser("train", help="learn merges from trajectory JSONL files")
    t.add_argument("--data", action="append", required=True)
    t.add_argument("--vocab", type=int, default=2048, help="total vocabulary, special tokens included")
    t.add_argument("--max-transcripts", type=int, default=2000, help="transcripts read for counting")
    t.add_argument("--out", required=True)
    e = sub.add_parser("encode", help="print the ids of a file (one line, space separated)")
    e.add_argument("--tokenizer", required=True)
    e.add_argument("--file", required=True)
    e.add_argument("--parse-special", action="store_true")
    args = ap.parse_args()

    if args.cmd == "train":
        texts = []
        for rec in read_transcripts(args.data, is_training_seed):
            texts.append("".join(s["text"] for s in rec["segments"]))
            if len(texts) >= args.max_transcripts:
                break
        counts = count_words(texts)
        n_merges = args.vocab - 256 - len(SPECIAL_TOKENS)
        print(f"{len(texts)} transcripts, {len(counts)} distinct pre-tokens, learning {n_merges} merges",
              file=sys.stderr)
        merges = train_bpe(counts, n_merges, log=lambda s: print(s, file=sys.stderr))
        tok = Tokenizer(merges)
        tok.save(args.out)
        n_chars = sum(len(t) for t in texts[:50])
        n_tok = sum(len(tok.encode(t)) for t in texts[:50])
        print(f"vocab {tok.vocab_size}; {n_chars / max(1, n_tok):.2f} chars/token on {min(50, len(texts))} transcripts",
              file=sys.stderr)
    else:
        tok = Tokenizer.load(args.tokenizer)
        with open(args.file, encoding="utf-8") as f:
            text = f.read()
        print(" ".join(str(i) for i in tok.encode(text, parse_special=args.parse_special)))


if __name__ == "__main__":
    main()
