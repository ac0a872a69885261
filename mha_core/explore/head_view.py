"""The classroom demo's "Where does this word look?": a prepared sentence, one of its words and the
weights' source -> every head's weights from that word (its row of each head's matrix), drawn as lines
to the keys, one colour and dash per head (BertViz's head view, :mod:`mha_core.figures.head_view`).

:func:`head_view_state` is the state (no widget, no figure); :class:`HeadViewExplorer` draws it.
"""

import functools

import ipywidgets as widgets
import numpy as np

from .. import heads
from ..examples import PATTERN_TITLES, UNTRAINED
from ..figures.head_view import HEAD_VIEW_MAX_ROWS
from ..layer import MultiHeadAttention
from .base import CROSS_PATTERNS, PATTERNS, Explorer, source_control
from .canvas import FigureImage

def word_labels(tokens):
    """One label per token; a word seen more than once gets its occurrence: "the (1)", "the (2)"."""
    seen, labels = {}, []
    for t in tokens:
        seen[t] = seen.get(t, 0) + 1
        labels.append(f"{t} ({seen[t]})" if tokens.count(t) > 1 else t)
    return labels


def describe_head_view(query_tokens, key_tokens, rows, query, names, self_attention=True):
    """Alt text from the data: for each head, the key the chosen word looks at most and its weight
    ("spread out" when no key has half of the weight)."""
    rows = np.asarray(rows, float)
    keys = word_labels(key_tokens)
    parts = []
    for name, w in zip(names, rows):
        j = int(np.argmax(w))
        where = "itself" if self_attention and j == query else f"“{keys[j]}”"
        parts.append(f"{name} looks at {where} ({w[j]:.2f})" if w[j] >= 0.5 else
                     f"{name} is spread out (most on {where}, {w[j]:.2f})")
    word = word_labels(query_tokens)[query]
    return (f"Lines from “{word}” (word {query + 1} of {len(query_tokens)}) to each of {len(key_tokens)} keys, "
            f"thicker for a larger weight: " + "; ".join(parts) + ".")



@functools.lru_cache(maxsize=32)
def _model(entry, source, seed):
    """(block, built) for a prepared sentence: constructed heads, or a seeded block of random projections
    of the same width on the same embeddings."""
    _, tokens, key_tokens, _ = entry
    if key_tokens is None:
        built = heads.constructed(list(tokens), PATTERNS, seed=seed)
    else:
        built = heads.translation(list(key_tokens), list(tokens), CROSS_PATTERNS, seed=seed)
    block = built.block
    if source == "random":
        block = MultiHeadAttention.from_seed(block.d_model, block.h, seed)
    return block, built


def _frozen(entry):
    label, tokens, key_tokens, word = entry
    return label, tuple(tokens), None if key_tokens is None else tuple(key_tokens), word


def head_view_state(sentences, sentence, query, source="constructed", seed=1):
    """Every head's weights, the chosen word's row of each (h, n_k), the heads' names, the title and alt text."""
    block, built = _model(_frozen(sentences[sentence]), source, seed)
    _, weights = block(built.x, built.x_kv)  # (h, n_q, n_k)
    cross = built.x_kv is not None
    rows = weights[:, query, :]  # (h, n_k): where the chosen word looks, head by head
    untrained = source == "random"
    names = ([f"head {k + 1}" for k in range(block.h)] if untrained
             else [PATTERN_TITLES[p] for p in built.patterns])
    tokens, key_tokens = list(built.tokens), list(built.kv_tokens)
    return {
        "sentence": sentence, "query": query, "source": source, "tokens": tokens, "key_tokens": key_tokens,
        "word": word_labels(tokens)[query], "weights": weights, "rows": rows, "names": names, "cross": cross,
        "title": f"Where does the chosen word look? {block.h} heads" + (f"\n{UNTRAINED}" if untrained else ""),
        "headers": ("French (queries)", "English (keys)") if cross else ("query", "keys"),
        "alt": ("Random (untrained) weights. " if untrained else "Constructed heads. ")
               + describe_head_view(tokens, key_tokens, rows, query, names, self_attention=not cross),
    }


class HeadViewExplorer(Explorer):
    """A prepared sentence, one of its words and the weights' source -> every head's weights from that word
    (its row of each head's matrix), drawn as lines to the keys, one colour per head."""

    def __init__(self, sentences=None, sentence=0, query=None, source="constructed", seed=1,
                 dpi=100):
        sentences = () if sentences is None else tuple(sentences)
        if not sentences:
            raise ValueError("sentences must hold at least one (label, tokens, key_tokens, word) entry")
        for entry in sentences:
            if len(entry) != 4:
                raise ValueError(f"sentences must hold (label, tokens, key_tokens, word) entries, got {entry!r}")
            longest = max(len(entry[1]), len(entry[2] or ()))
            if longest > HEAD_VIEW_MAX_ROWS:
                raise ValueError(f"sentences must have at most {HEAD_VIEW_MAX_ROWS} words a side, "
                                 f"{entry[0]!r} has {longest}")
        if isinstance(sentence, bool) or not isinstance(sentence, int) or not 0 <= sentence < len(sentences):
            raise ValueError(f"sentence must be an index into the {len(sentences)} sentences, got {sentence!r}")
        self.sentences, self.seed, self.dpi = sentences, seed, dpi
        tokens = list(sentences[sentence][1])
        if query is None:
            query = tokens.index(sentences[sentence][3]) if sentences[sentence][3] in tokens else len(tokens) - 1
        if isinstance(query, bool) or not isinstance(query, int) or not 0 <= query < len(tokens):
            raise ValueError(f"query must be the index of a word of the sentence, 0 to {len(tokens) - 1}, "
                             f"got {query!r}")
        controls = {
            "sentence": widgets.Dropdown(options=[(entry[0], k) for k, entry in enumerate(sentences)],
                                         value=sentence, description="sentence"),
            "query": widgets.RadioButtons(options=self._word_options(tokens), value=query,
                                          description="query word", orientation="horizontal",
                                          style={"description_width": "initial"}),
            "source": source_control(source),
        }
        controls["query"].add_class("mha-query-words")
        canvas = FigureImage()
        self.parts, self._drawn = None, None
        super().__init__(controls, [canvas.widget, canvas.caption], canvas)
        self.update()

    @staticmethod
    def _word_options(tokens):
        return [(label, i) for i, label in enumerate(word_labels(tokens))]

    def _changed(self, change):
        if change["owner"] is self.controls["sentence"] and not self._paused:
            entry = self.sentences[change["new"]]
            tokens = list(entry[1])
            with self.paused():  # new options reset the value: one update after both are set
                self.controls["query"].options = self._word_options(tokens)
                self.controls["query"].value = tokens.index(entry[3]) if entry[3] in tokens else len(tokens) - 1
            return
        super()._changed(change)

    def update(self, change=None):
        sentence, query, source = (self.controls[k].value for k in ("sentence", "query", "source"))
        state = head_view_state(self.sentences, sentence, query, source, self.seed)
        if self.canvas.drawing:
            from ..figures import head_view

            args = (state["tokens"], state["key_tokens"], state["rows"], query, state["names"], state["title"],
                    state["headers"], not state["cross"])
            if self.parts is None:
                rows_needed = max(max(len(e[1]), len(e[2] or ())) for e in self.sentences)
                figure, self.parts = head_view.build_head_view(rows_needed, max(len(PATTERNS), len(CROSS_PATTERNS)),
                                                               dpi=self.dpi)
                head_view.draw_head_view(self.parts, *args)
                self.canvas.show(figure, head_view.head_view_artists(self.parts))
            else:
                head_view.draw_head_view(self.parts, *args)
                if (sentence, source) != self._drawn:
                    self.canvas.restage()  # new words or heads: the background's tokens and names change
                else:
                    self.canvas.refresh()  # only the lines, where each head looks, the chosen word
            self._drawn = (sentence, source)
        self.canvas.describe(state["alt"])
        self.state = {**state, "alt": self.canvas.alt,
                      "drawn": self.parts["weights"] if self.canvas.drawing else state["rows"]}


def head_view_explorer(sentences=None, sentence=0, query=None, source="constructed", seed=1,
                       dpi=100):
    """Where does this word look? ``sentences`` are the prepared sentences, (label, query tokens, key tokens
    or None for self-attention, the word first asked about) each. Pick one (Dropdown), one of its words (radio buttons)
    and the weights (constructed heads: previous token, same word, first token, pronoun → noun; for the
    English → French pair, translation, same position, first; or random, untrained projections); every
    head's weights from that word are drawn as lines to the keys, one colour and dash per head
    (BertViz's head view). ``query`` (an index) defaults to the sentence's prepared word."""
    return HeadViewExplorer(sentences, sentence, query, source, seed, dpi)

